import type { Host } from '../domain/catalog.js';
import { memoryCapacity, vcpuCapacity, type GpuHostTerms } from '../domain/gpu-allotment.js';
import { portCapacity, type HostUsage } from '../domain/placement.js';
import type { PlacementRequest } from '../domain/placement-request.js';
import type { Reclaimable } from '../domain/reclaim-ladder.js';
import { fitsResources, type FreeResources, type HostGroup } from '../domain/placement-sieve.js';
import type { Allocation } from './allocation.js';

/** A reclaimable hold as its host's GPU group lists it (`at`: its place in the list). */
export interface GroupHold {
  readonly gives: Reclaimable;
  readonly slot: HostSlot;
  at: number;
}

/** What a slot tells the GPU group it sits in (`GpuGroup`) when its free GPU count changes, or when it holds something reclaimable. */
interface SlotGroup {
  moved(slot: HostSlot, before: number): void;
  /**
   * The reclaimable holds on the group's hosts (reclaim-index.ts keeps it): what the reclaim ladder
   * walks. In ladder order only while `holdsSorted`: a reserve or release does not sort them, the
   * ladder does when it needs them (it runs far less often).
   */
  readonly holds: GroupHold[];
  holdsSorted: boolean;
  /** Recounts the host's free-plus-reclaimable GPUs after its reclaimable holds changed. */
  repotential(slot: HostSlot): void;
}

/**
 * One host's mutable state. Field names match `FreeResources` so the rules can read it directly.
 * A slot outlives the index it sits in (the index is rebuilt when hosts join, leave or change
 * availability): what is reserved on the host lives here.
 */
export class HostSlot implements FreeResources {
  readonly hostId: string;
  readonly gpuUsed: Uint8Array;
  readonly portUsed: Uint8Array;
  freeGpus: number;
  freeVcpus: number;
  freeMemoryGb: number;
  freeDiskGb: number;
  freePorts: number;
  /** No port below `portRange[0] + portLow` is free. */
  portLow = 0;
  /** Rank of the host id in plain string order among the indexed hosts: the final tie-break. Set by the index. */
  ord = 0;
  /** Its GPU group in the current index; null while the host is not indexed (unavailable) or has no GPUs. */
  group: SlotGroup | null = null;
  /** Position in `group.slots`. */
  pos = 0;
  /** GPUs of the host that reclaimable holds keep (reclaim-index.ts counts them). */
  reclaimGpus = 0;
  /** Free plus reclaimable GPUs, as its group last counted them. */
  potential = 0;
  /** This host alone, as the rules see it (used to explain CPU refusals). */
  readonly single: HostGroup;
  /** Whether the host's data center offers global networking. */
  readonly dcGlobalNetworking: boolean;

  constructor(
    readonly host: Host,
    dcGlobalNetworking: boolean,
    /** The host's size and its GPU type's per-GPU default (what a GPU request's allotment reads). */
    readonly terms: GpuHostTerms,
  ) {
    this.hostId = host.id;
    const gpus = host.gpuTypeId === null ? 0 : host.gpuCount;
    this.gpuUsed = new Uint8Array(gpus);
    this.portUsed = new Uint8Array(portCapacity(host));
    this.freeGpus = gpus;
    this.freeVcpus = vcpuCapacity(host);
    this.freeMemoryGb = memoryCapacity(host);
    this.freeDiskGb = host.diskGb;
    this.freePorts = this.portUsed.length;
    this.dcGlobalNetworking = dcGlobalNetworking;
    // The view's getters read this slot's live counters (an object literal's getters have their own `this`).
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const slot = this;
    this.single = {
      gpuTypeId: host.gpuTypeId,
      dataCenterId: host.dataCenterId,
      cloud: host.cloud,
      cudaVersion: host.cudaVersion,
      cpuFlavors: host.cpuFlavors,
      gpusPerHost: gpus,
      hostCount: 1,
      get freeGpus() {
        return slot.freeGpus;
      },
      get maxFreeGpus() {
        return slot.freeGpus;
      },
      eachHostWithFreeGpus(min, visit) {
        if (slot.freeGpus >= min) visit(slot);
      },
    };
  }

  /** Whether the host has the request's vCPUs and memory (a GPU request's allotment here), disk and ports free. */
  fitsResources(request: PlacementRequest): boolean {
    return fitsResources(request, this);
  }

  lowestFreeGpus(count: number): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.gpuUsed.length && out.length < count; i++) if (this.gpuUsed[i] === 0) out.push(i);
    return out;
  }

  lowestFreePorts(count: number): number[] {
    const out: number[] = [];
    const base = this.host.portRange[0];
    for (let i = this.portLow; i < this.portUsed.length && out.length < count; i++)
      if (this.portUsed[i] === 0) out.push(base + i);
    return out;
  }

  /** Why this exact allocation cannot be taken here now; null when it can. */
  refusalFor(allocation: Allocation): string | null {
    const id = allocation.hostId;
    if (
      new Set(allocation.gpuIndices).size !== allocation.gpuIndices.length ||
      new Set(allocation.publicPorts).size !== allocation.publicPorts.length
    ) {
      return `The allocation on host ${id} names a GPU or port twice`;
    }
    const takenGpus = allocation.gpuIndices.filter(
      (i) => !(Number.isInteger(i) && i >= 0 && i < this.gpuUsed.length) || this.gpuUsed[i] !== 0,
    );
    if (takenGpus.length > 0) return `Host ${id} no longer has GPUs [${takenGpus.join(',')}] free`;
    const base = this.host.portRange[0];
    const takenPorts = allocation.publicPorts.filter((p) => {
      const i = p - base;
      return !(Number.isInteger(i) && i >= 0 && i < this.portUsed.length) || this.portUsed[i] !== 0;
    });
    if (takenPorts.length > 0) return `Host ${id} no longer has public ports [${takenPorts.join(',')}] free`;
    if (this.freeVcpus < allocation.vcpus)
      return `Host ${id} no longer has ${allocation.vcpus} vCPUs free (${this.freeVcpus} free)`;
    if (this.freeMemoryGb < allocation.memoryGb)
      return `Host ${id} no longer has ${allocation.memoryGb} GB of memory free (${this.freeMemoryGb} GB free)`;
    if (this.freeDiskGb < allocation.diskGb)
      return `Host ${id} no longer has ${allocation.diskGb} GB of disk free (${this.freeDiskGb} GB free)`;
    return null;
  }

  /**
   * Takes an allocation already known to fit. GPUs and ports outside the host's (an allocation
   * kept across a capacity change that shrank the host) are not counted, here or in `release`.
   */
  reserve(allocation: Allocation): void {
    const before = this.freeGpus;
    for (const i of allocation.gpuIndices) {
      if (i >= this.gpuUsed.length) continue;
      this.gpuUsed[i] = 1;
      this.freeGpus--;
    }
    this.group?.moved(this, before);
    this.freeVcpus -= allocation.vcpus;
    this.freeMemoryGb -= allocation.memoryGb;
    this.freeDiskGb -= allocation.diskGb;
    const base = this.host.portRange[0];
    for (const port of allocation.publicPorts) {
      const i = port - base;
      if (i < 0 || i >= this.portUsed.length) continue;
      this.portUsed[i] = 1;
      this.freePorts--;
    }
    while (this.portLow < this.portUsed.length && this.portUsed[this.portLow] !== 0) this.portLow++;
  }

  /** Gives back an allocation taken by `reserve`. */
  release(allocation: Allocation): void {
    const before = this.freeGpus;
    for (const i of allocation.gpuIndices) {
      if (i >= this.gpuUsed.length) continue;
      this.gpuUsed[i] = 0;
      this.freeGpus++;
    }
    this.group?.moved(this, before);
    this.freeVcpus += allocation.vcpus;
    this.freeMemoryGb += allocation.memoryGb;
    this.freeDiskGb += allocation.diskGb;
    const base = this.host.portRange[0];
    for (const port of allocation.publicPorts) {
      const i = port - base;
      if (i < 0 || i >= this.portUsed.length) continue;
      this.portUsed[i] = 0;
      this.freePorts++;
      if (i < this.portLow) this.portLow = i;
    }
  }

  /** What is taken on the host, as the pure `place()` reads it. */
  usage(): HostUsage {
    return {
      gpuIndices: new Set(indicesWhere(this.gpuUsed, 0)),
      vcpus: vcpuCapacity(this.host) - this.freeVcpus,
      memoryGb: memoryCapacity(this.host) - this.freeMemoryGb,
      diskGb: this.host.diskGb - this.freeDiskGb,
      ports: new Set(indicesWhere(this.portUsed, this.host.portRange[0])),
    };
  }
}

function indicesWhere(flags: Uint8Array, offset: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < flags.length; i++) if (flags[i] !== 0) out.push(offset + i);
  return out;
}
