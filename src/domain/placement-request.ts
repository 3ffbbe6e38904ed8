/**
 * What placement is asked and what it answers: the request a pod or serverless worker makes of
 * the fleet, and the host, GPUs, ports and allotment it is given (placement.ts chooses them, by
 * the rules of placement-sieve.ts).
 */
import type { Cloud } from './catalog.js';

export type ReclaimRung = 'suspended-worker' | 'interruptible';

/** How a hold may be taken back: its rung and, on the interruptible rung, what its holder bid. */
export interface ReclaimableHold {
  rung: ReclaimRung;
  /** USD per GPU per hour; 0 on the suspended-worker rung. */
  bidPerGpu: number;
  /** suspended-worker: the worker's account (a request of that account takes its own first). */
  accountId?: string | undefined;
  /** suspended-worker: when it was suspended, ms (the one idle longest goes first). */
  since?: number | undefined;
  /** suspended-worker: its endpoint (a launch of that endpoint's workers resumes it, never takes it). */
  endpointId?: string | undefined;
}

/**
 * What a request may take back. `on-demand`: every rung. `bid`: suspended workers, and
 * interruptible holds that bid strictly less per GPU (an equal bid does not take a machine from
 * its holder, so two equal bidders never take turns interrupting each other). `worker`: an
 * autoscaler's launch, suspended workers of other endpoints only. `accountId`: the requester's
 * account, whose own suspended workers are taken first.
 */
export type ReclaimRight =
  | { kind: 'on-demand'; accountId?: string | undefined }
  | { kind: 'bid'; bidPerGpu: number; accountId?: string | undefined }
  | { kind: 'worker'; endpointId: string; accountId?: string | undefined };

/** What a pod or serverless worker needs from a host. */
export interface PlacementRequest {
  kind: 'gpu' | 'cpu';
  /** Acceptable GPU types, in preference order (a pod names one; a serverless pool expands to several). */
  gpuTypeIds: string[];
  gpuCount: number;
  cpuFlavorId: string | null;
  /**
   * CPU: the vCPUs and GB of memory the instance takes. GPU: the least it accepts (0: no
   * minimum); it is given its allotment on the host it lands on (domain/gpu-allotment.ts), at
   * least this, and a host whose share of the GPUs is less does not fit.
   */
  vcpuCount: number;
  memoryGb: number;
  diskGb: number;
  /** 'ALL' accepts both clouds (serverless). */
  cloud: Cloud | 'ALL';
  /** Preferred data centers; empty lets the scheduler choose. Hosts elsewhere are not used. */
  dataCenterIds: string[];
  /** Hard constraint from a network volume: the instance must run in this data center. */
  volumeDataCenterId: string | null;
  /** Exact major.minor matches; empty = any. */
  allowedCudaVersions: string[];
  /** Numeric lower bound; a bare major means any release of it. */
  minCudaVersion: string | null;
  /** Number of public ports to reserve. */
  portCount: number;
  /** Needs a data center with global networking and a GPU type that supports it. */
  globalNetworking: boolean;
  /**
   * What the request may take back when no free capacity fits it (reclaim-ladder.ts). @default
   * nothing: it takes free capacity only
   */
  reclaim?: ReclaimRight | undefined;
  /** How the hold it gets may itself be taken back (an interruptible pod's). @default never */
  reclaimable?: ReclaimableHold | undefined;
}

export interface Placement {
  hostId: string;
  dataCenterId: string;
  cloud: Cloud;
  gpuTypeId: string | null;
  gpuIndices: number[];
  cudaVersion: string | null;
  /** Public ports reserved, in the order the request's ports are declared. */
  publicPorts: number[];
  /** vCPUs and GB of memory reserved: a CPU request's own, a GPU request's allotment on this host. */
  vcpus: number;
  memoryGb: number;
}

/** A hold placement took back to make room: its holder must now give up its instance (docs/pods.md). */
export interface ReclaimedHold {
  holderId: string;
  hold: ReclaimableHold;
  /** What it held on its host (the inventory's allocation), so a rolled-back placement can give it back. */
  held: HeldResources;
}

/** The exact resources one holder (pod or worker) keeps on a host. */
export interface HeldResources {
  hostId: string;
  gpuIndices: number[];
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  publicPorts: number[];
}

export type PlacementResult =
  | {
      ok: true;
      placement: Placement;
      /** The holds taken back for it, in ladder order; absent when free capacity sufficed. */
      reclaimed?: ReclaimedHold[];
    }
  | { ok: false; reason: string };
