import type { Catalog, Cloud, Host } from './catalog.js';

/** What a pod or serverless worker needs from a host. */
export interface PlacementRequest {
  kind: 'gpu' | 'cpu';
  /** Acceptable GPU types, in preference order (a pod names one; a serverless pool expands to several). */
  gpuTypeIds: string[];
  gpuCount: number;
  cpuFlavorId: string | null;
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
}

/** Resources held on one host (by pods that are not stopped/terminated, and workers). */
export interface HostUsage {
  gpuIndices: Set<number>;
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  ports: Set<number>;
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
}

export type PlacementResult = { ok: true; placement: Placement } | { ok: false; reason: string };

/** Input of the pure placement function: the fleet, its current usage and the catalog. */
export interface FleetSnapshot {
  hosts: readonly Host[];
  usage: ReadonlyMap<string, HostUsage>;
  catalog: Catalog;
}
