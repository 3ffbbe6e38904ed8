import type { Catalog, Cloud, Host } from '../domain/catalog.js';
import { compareCudaVersions, cudaAccepts, cudaCode, cudaRule, type CudaRule } from '../domain/cuda.js';
import {
  portCapacity,
  sieve,
  type FleetSnapshot,
  type FreeResources,
  type HostGroup,
  type HostUsage,
  type Placement,
  type PlacementRequest,
  type PlacementResult,
} from '../domain/placement.js';

/** The exact resources one holder (pod or worker) keeps on a host. */
export interface Allocation {
  hostId: string;
  gpuIndices: number[];
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  publicPorts: number[];
}

/** Free and total GPUs of one type, as the catalog's availability shows them. */
export interface GpuTypeStock {
  gpuTypeId: string;
  total: number;
  available: number;
  /** Most free GPUs of this type on one host: the largest count placeable now. */
  maxGpuCount: number;
  clouds: Cloud[];
  dataCenters: Array<{ id: string; available: number; total: number }>;
  /** Sorted oldest first. */
  cudaVersions: Array<{ version: string; available: number; total: number }>;
}

/** One host's mutable state. Field names match `FreeResources` so the rules can read it directly. */
class Slot implements FreeResources {
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
  group: GpuGroup | null = null;
  /** Position in `group.slots`. */
  pos = 0;
  /** This host alone, as the rules see it (used to explain CPU refusals). */
  readonly single: HostGroup;
  /** Whether the host's data center offers global networking. */
  readonly dcGlobalNetworking: boolean;

  constructor(
    readonly host: Host,
    /** Rank of the host id in plain string order: the final tie-break. */
    readonly ord: number,
    dcGlobalNetworking: boolean,
  ) {
    this.hostId = host.id;
    const gpus = host.gpuTypeId === null ? 0 : host.gpuCount;
    this.gpuUsed = new Uint8Array(gpus);
    this.portUsed = new Uint8Array(portCapacity(host));
    this.freeGpus = gpus;
    this.freeVcpus = host.vcpus;
    this.freeMemoryGb = host.memoryGb;
    this.freeDiskGb = host.diskGb;
    this.freePorts = this.portUsed.length;
    this.dcGlobalNetworking = dcGlobalNetworking;
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

  fitsResources(request: PlacementRequest): boolean {
    return (
      this.freeVcpus >= request.vcpuCount &&
      this.freeMemoryGb >= request.memoryGb &&
      this.freeDiskGb >= request.diskGb &&
      this.freePorts >= request.portCount
    );
  }
}

/**
 * GPU hosts alike to every static filter (type, data center, cloud, CUDA, GPUs per host), with
 * one bitset per free-GPU count so the tightest fit with the lowest host id is found by looking
 * at a few words instead of every host.
 */
class GpuGroup implements HostGroup {
  readonly slots: Slot[] = [];
  readonly cpuFlavors: readonly string[] = [];
  /** levels[k]: bitset over `slots` positions of hosts with exactly k free GPUs. */
  levels: Uint32Array[] = [];
  levelCount: Int32Array = new Int32Array(0);
  freeGpus = 0;
  readonly cudaCode: number;
  readonly globalNetworking: boolean;
  /** Scratch: the group's data center rank for the request being placed. */
  dcRank = 0;

  constructor(
    readonly gpuTypeId: string,
    readonly dataCenterId: string,
    readonly cloud: Cloud,
    readonly cudaVersion: string | null,
    readonly gpusPerHost: number,
    globalNetworking: boolean,
  ) {
    this.cudaCode = cudaCode(cudaVersion);
    this.globalNetworking = globalNetworking;
  }

  get hostCount(): number {
    return this.slots.length;
  }

  get maxFreeGpus(): number {
    for (let k = this.gpusPerHost; k > 0; k--) if (this.levelCount[k]! > 0) return k;
    return 0;
  }

  /** Called once all slots are added (in id order). */
  seal(): void {
    const words = Math.ceil(this.slots.length / 32);
    this.levels = Array.from({ length: this.gpusPerHost + 1 }, () => new Uint32Array(words));
    this.levelCount = new Int32Array(this.gpusPerHost + 1);
    this.slots.forEach((slot, pos) => {
      slot.group = this;
      slot.pos = pos;
      this.setLevel(pos, slot.freeGpus);
      this.freeGpus += slot.freeGpus;
    });
  }

  private setLevel(pos: number, k: number): void {
    this.levels[k]![pos >>> 5]! |= 1 << (pos & 31);
    this.levelCount[k]!++;
  }

  private clearLevel(pos: number, k: number): void {
    this.levels[k]![pos >>> 5]! &= ~(1 << (pos & 31));
    this.levelCount[k]!--;
  }

  /** Moves a slot to its new free-GPU level after its free count changed from `before`. */
  moved(slot: Slot, before: number): void {
    if (before === slot.freeGpus) return;
    this.clearLevel(slot.pos, before);
    this.setLevel(slot.pos, slot.freeGpus);
    this.freeGpus += slot.freeGpus - before;
  }

  /** The lowest-id host with exactly `k` free GPUs that also has the request's other resources. */
  firstAtLevel(k: number, request: PlacementRequest): Slot | null {
    if (this.levelCount[k]! === 0) return null;
    const words = this.levels[k]!;
    for (let w = 0; w < words.length; w++) {
      let bits = words[w]!;
      while (bits !== 0) {
        const low = bits & -bits;
        const slot = this.slots[(w << 5) + (31 - Math.clz32(low))]!;
        if (slot.fitsResources(request)) return slot;
        bits ^= low;
      }
    }
    return null;
  }

  eachHostWithFreeGpus(min: number, visit: (host: FreeResources) => void): void {
    for (let k = Math.max(min, 0); k <= this.gpusPerHost; k++) {
      if (this.levelCount[k]! === 0) continue;
      const words = this.levels[k]!;
      for (let w = 0; w < words.length; w++) {
        let bits = words[w]!;
        while (bits !== 0) {
          const low = bits & -bits;
          visit(this.slots[(w << 5) + (31 - Math.clz32(low))]!);
          bits ^= low;
        }
      }
    }
  }
}

type Refusal = { ok: false; reason: string };

/**
 * The in-memory fleet: hosts plus what every holder has reserved. Placement decisions read it
 * without touching the database; pods and workers reserve and release through it.
 *
 * It obeys the rules of `place()` (same filters, same order of preference, same refusal
 * reasons) but answers from indexes: GPU hosts are grouped by everything the static filters
 * look at, and each group keeps its hosts bucketed by free GPU count.
 */
export class Inventory {
  private readonly slots = new Map<string, Slot>();
  private readonly allocations = new Map<string, Allocation>();
  private readonly gpuGroupsByType = new Map<string, GpuGroup[]>();
  private readonly cpuSlotsByFlavor = new Map<string, Slot[]>();
  private readonly hostList: Host[];
  /** Reused per decision so the hot path does not allocate. */
  private readonly scratch: GpuGroup[] = [];

  constructor(private readonly deps: { hosts: Host[]; catalog: Catalog }) {
    const { catalog } = deps;
    this.hostList = [...deps.hosts];
    const gpuGn = new Map(catalog.gpuTypes.map((t) => [t.id, t.globalNetworking]));
    const dcGn = new Map(catalog.dataCenters.map((d) => [d.id, d.globalNetworking]));
    const sorted = [...deps.hosts].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const groups = new Map<string, GpuGroup>();
    sorted.forEach((host, ord) => {
      const slot = new Slot(host, ord, dcGn.get(host.dataCenterId) === true);
      this.slots.set(host.id, slot);
      for (const flavor of host.cpuFlavors) {
        const list = this.cpuSlotsByFlavor.get(flavor) ?? [];
        list.push(slot);
        this.cpuSlotsByFlavor.set(flavor, list);
      }
      if (host.gpuTypeId === null || host.gpuCount <= 0) return;
      const key = JSON.stringify([host.gpuTypeId, host.dataCenterId, host.cloud, host.cudaVersion, host.gpuCount]);
      let group = groups.get(key);
      if (!group) {
        const gn = gpuGn.get(host.gpuTypeId) === true && dcGn.get(host.dataCenterId) === true;
        group = new GpuGroup(host.gpuTypeId, host.dataCenterId, host.cloud, host.cudaVersion, host.gpuCount, gn);
        groups.set(key, group);
        const list = this.gpuGroupsByType.get(host.gpuTypeId) ?? [];
        list.push(group);
        this.gpuGroupsByType.set(host.gpuTypeId, list);
      }
      group.slots.push(slot);
    });
    for (const group of groups.values()) group.seal();
  }

  /** Chooses a host for the request and reserves it for `holderId` in one step. A holder's previous allocation is replaced. */
  placeAndReserve(holderId: string, request: PlacementRequest): PlacementResult {
    const previous = this.allocations.get(holderId);
    if (previous) this.release(holderId);
    const slot = request.kind === 'gpu' ? this.findGpuHost(request) : this.findCpuHost(request);
    if (slot === null) {
      if (previous) this.apply(holderId, previous);
      return this.explain(request);
    }
    const placement: Placement = {
      hostId: slot.hostId,
      dataCenterId: slot.host.dataCenterId,
      cloud: slot.host.cloud,
      gpuTypeId: request.kind === 'gpu' ? slot.host.gpuTypeId : null,
      gpuIndices: request.kind === 'gpu' ? this.lowestFreeGpus(slot, request.gpuCount) : [],
      cudaVersion: request.kind === 'gpu' ? slot.host.cudaVersion : null,
      publicPorts: this.lowestFreePorts(slot, request.portCount),
    };
    this.apply(holderId, Inventory.allocationFrom(placement, request));
    return { ok: true, placement };
  }

  /** Reserves exactly this allocation (a stopped pod starting again on its host); the reason says what is taken. */
  reserveExact(holderId: string, allocation: Allocation): { ok: true } | Refusal {
    const previous = this.allocations.get(holderId);
    if (previous) this.release(holderId);
    const refusal = this.checkExact(allocation);
    if (refusal) {
      if (previous) this.apply(holderId, previous);
      return refusal;
    }
    this.apply(holderId, allocation);
    return { ok: true };
  }

  /** Releases whatever `holderId` holds; a no-op when it holds nothing. */
  release(holderId: string): void {
    const allocation = this.allocations.get(holderId);
    if (!allocation) return;
    this.allocations.delete(holderId);
    const slot = this.slots.get(allocation.hostId);
    if (!slot) return;
    const before = slot.freeGpus;
    for (const i of allocation.gpuIndices) {
      slot.gpuUsed[i] = 0;
      slot.freeGpus++;
    }
    slot.group?.moved(slot, before);
    slot.freeVcpus += allocation.vcpus;
    slot.freeMemoryGb += allocation.memoryGb;
    slot.freeDiskGb += allocation.diskGb;
    const base = slot.host.portRange[0];
    for (const port of allocation.publicPorts) {
      const i = port - base;
      slot.portUsed[i] = 0;
      slot.freePorts++;
      if (i < slot.portLow) slot.portLow = i;
    }
  }

  host(id: string): Host | undefined {
    return this.slots.get(id)?.host;
  }

  /** Every host of the fleet, in configuration order. */
  hosts(): readonly Host[] {
    return this.hostList;
  }

  allocationOf(holderId: string): Allocation | undefined {
    return this.allocations.get(holderId);
  }

  /** Free and total GPUs of one type, overall and per data center and CUDA version. */
  gpuStock(gpuTypeId: string): GpuTypeStock {
    const groups = this.gpuGroupsByType.get(gpuTypeId) ?? [];
    const dcs = new Map<string, { id: string; available: number; total: number }>();
    const cudas = new Map<string, { version: string; available: number; total: number }>();
    const clouds = new Set<Cloud>();
    let total = 0;
    let available = 0;
    let maxGpuCount = 0;
    for (const g of groups) {
      const groupTotal = g.gpusPerHost * g.hostCount;
      total += groupTotal;
      available += g.freeGpus;
      maxGpuCount = Math.max(maxGpuCount, g.maxFreeGpus);
      clouds.add(g.cloud);
      const dc = dcs.get(g.dataCenterId) ?? { id: g.dataCenterId, available: 0, total: 0 };
      dc.available += g.freeGpus;
      dc.total += groupTotal;
      dcs.set(dc.id, dc);
      if (g.cudaVersion !== null) {
        const cuda = cudas.get(g.cudaVersion) ?? { version: g.cudaVersion, available: 0, total: 0 };
        cuda.available += g.freeGpus;
        cuda.total += groupTotal;
        cudas.set(cuda.version, cuda);
      }
    }
    return {
      gpuTypeId,
      total,
      available,
      maxGpuCount,
      clouds: [...clouds].sort(),
      dataCenters: [...dcs.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
      cudaVersions: [...cudas.values()].sort((a, b) => compareCudaVersions(a.version, b.version)),
    };
  }

  /** The current usage of every host, as the pure `place()` reads it. */
  snapshot(): FleetSnapshot {
    const usage = new Map<string, HostUsage>();
    for (const slot of this.slots.values()) {
      usage.set(slot.hostId, {
        gpuIndices: new Set(indicesWhere(slot.gpuUsed, 0)),
        vcpus: slot.host.vcpus - slot.freeVcpus,
        memoryGb: slot.host.memoryGb - slot.freeMemoryGb,
        diskGb: slot.host.diskGb - slot.freeDiskGb,
        ports: new Set(indicesWhere(slot.portUsed, slot.host.portRange[0])),
      });
    }
    return { hosts: this.hostList, usage, catalog: this.deps.catalog };
  }

  static allocationFrom(placement: Placement, request: PlacementRequest): Allocation {
    return {
      hostId: placement.hostId,
      gpuIndices: placement.gpuIndices,
      vcpus: request.vcpuCount,
      memoryGb: request.memoryGb,
      diskGb: request.diskGb,
      publicPorts: placement.publicPorts,
    };
  }

  // --- the indexed search ------------------------------------------------------------------

  /**
   * Best GPU host by (type preference, data center preference, tightest fit, host id) — the
   * order of `comparePlacementScore` — walking free-count levels upward so the first hit wins.
   */
  private findGpuHost(request: PlacementRequest): Slot | null {
    const need = Math.max(0, request.gpuCount);
    const rule = cudaRule(request);
    const dcs = request.dataCenterIds;
    const ranks = dcs.length > 0 ? dcs.length : 1;
    for (let t = 0; t < request.gpuTypeIds.length; t++) {
      const typeId = request.gpuTypeIds[t]!;
      if (request.gpuTypeIds.indexOf(typeId) !== t) continue;
      const groups = this.gpuGroupsByType.get(typeId);
      if (!groups) continue;
      const eligible = this.scratch;
      eligible.length = 0;
      for (const g of groups) {
        if (!this.admitsStatically(g, request, rule, need)) continue;
        g.dcRank = dcs.length > 0 ? dcs.indexOf(g.dataCenterId) : 0;
        if (g.dcRank < 0) continue;
        eligible.push(g);
      }
      if (eligible.length === 0) continue;
      for (let r = 0; r < ranks; r++) {
        let best: Slot | null = null;
        let bestLevel = Number.MAX_SAFE_INTEGER;
        for (const g of eligible) {
          if (g.dcRank !== r) continue;
          const top = Math.min(g.gpusPerHost, bestLevel);
          for (let k = need; k <= top; k++) {
            const slot = g.firstAtLevel(k, request);
            if (slot === null) continue;
            if (k < bestLevel || slot.ord < best!.ord) {
              best = slot;
              bestLevel = k;
            }
            break;
          }
        }
        if (best !== null) return best;
      }
    }
    return null;
  }

  private admitsStatically(g: GpuGroup, request: PlacementRequest, rule: CudaRule, need: number): boolean {
    if (g.gpusPerHost < need) return false;
    if (request.cloud !== 'ALL' && g.cloud !== request.cloud) return false;
    if (request.volumeDataCenterId !== null && g.dataCenterId !== request.volumeDataCenterId) return false;
    if (request.globalNetworking && !g.globalNetworking) return false;
    return cudaAccepts(rule, g.cudaCode);
  }

  /** CPU hosts are few: a scan of the flavor's hosts in (data center preference, fewest vCPUs left, id) order. */
  private findCpuHost(request: PlacementRequest): Slot | null {
    const slots = request.cpuFlavorId === null ? undefined : this.cpuSlotsByFlavor.get(request.cpuFlavorId);
    if (!slots) return null;
    const dcs = request.dataCenterIds;
    let best: Slot | null = null;
    let bestRank = 0;
    let bestLeft = 0;
    for (const slot of slots) {
      const h = slot.host;
      if (request.cloud !== 'ALL' && h.cloud !== request.cloud) continue;
      const rank = dcs.length > 0 ? dcs.indexOf(h.dataCenterId) : 0;
      if (rank < 0) continue;
      if (request.volumeDataCenterId !== null && h.dataCenterId !== request.volumeDataCenterId) continue;
      if (request.globalNetworking && !slot.dcGlobalNetworking) continue;
      if (!slot.fitsResources(request)) continue;
      const left = slot.freeVcpus - request.vcpuCount;
      // slots are in id order, so a tie keeps the earlier (lower id) host
      if (best === null || rank < bestRank || (rank === bestRank && left < bestLeft)) {
        best = slot;
        bestRank = rank;
        bestLeft = left;
      }
    }
    return best;
  }

  /** Runs the rules over the relevant groups to name the constraint that could not be met. */
  private explain(request: PlacementRequest): Refusal {
    const groups: HostGroup[] = [];
    if (request.kind === 'gpu') {
      for (const typeId of new Set(request.gpuTypeIds)) groups.push(...(this.gpuGroupsByType.get(typeId) ?? []));
    } else if (request.cpuFlavorId !== null) {
      for (const slot of this.cpuSlotsByFlavor.get(request.cpuFlavorId) ?? []) groups.push(slot.single);
    }
    const result = sieve(request, groups, this.deps.catalog);
    return { ok: false, reason: result.ok ? 'No host can take the request right now' : result.reason };
  }

  // --- bookkeeping -------------------------------------------------------------------------

  private lowestFreeGpus(slot: Slot, count: number): number[] {
    const out: number[] = [];
    for (let i = 0; i < slot.gpuUsed.length && out.length < count; i++) if (slot.gpuUsed[i] === 0) out.push(i);
    return out;
  }

  private lowestFreePorts(slot: Slot, count: number): number[] {
    const out: number[] = [];
    const base = slot.host.portRange[0];
    for (let i = slot.portLow; i < slot.portUsed.length && out.length < count; i++) if (slot.portUsed[i] === 0) out.push(base + i);
    return out;
  }

  private checkExact(allocation: Allocation): Refusal | null {
    const slot = this.slots.get(allocation.hostId);
    if (!slot) return { ok: false, reason: `Host ${allocation.hostId} is no longer in the fleet` };
    const id = allocation.hostId;
    if (new Set(allocation.gpuIndices).size !== allocation.gpuIndices.length || new Set(allocation.publicPorts).size !== allocation.publicPorts.length) {
      return { ok: false, reason: `The allocation on host ${id} names a GPU or port twice` };
    }
    const takenGpus = allocation.gpuIndices.filter((i) => !(Number.isInteger(i) && i >= 0 && i < slot.gpuUsed.length) || slot.gpuUsed[i] !== 0);
    if (takenGpus.length > 0) return { ok: false, reason: `Host ${id} no longer has GPUs [${takenGpus.join(',')}] free` };
    const base = slot.host.portRange[0];
    const takenPorts = allocation.publicPorts.filter((p) => {
      const i = p - base;
      return !(Number.isInteger(i) && i >= 0 && i < slot.portUsed.length) || slot.portUsed[i] !== 0;
    });
    if (takenPorts.length > 0) return { ok: false, reason: `Host ${id} no longer has public ports [${takenPorts.join(',')}] free` };
    if (slot.freeVcpus < allocation.vcpus) return { ok: false, reason: `Host ${id} no longer has ${allocation.vcpus} vCPUs free (${slot.freeVcpus} free)` };
    if (slot.freeMemoryGb < allocation.memoryGb) return { ok: false, reason: `Host ${id} no longer has ${allocation.memoryGb} GB of memory free (${slot.freeMemoryGb} GB free)` };
    if (slot.freeDiskGb < allocation.diskGb) return { ok: false, reason: `Host ${id} no longer has ${allocation.diskGb} GB of disk free (${slot.freeDiskGb} GB free)` };
    return null;
  }

  /** Records an allocation already known to fit. */
  private apply(holderId: string, allocation: Allocation): void {
    const slot = this.slots.get(allocation.hostId)!;
    const before = slot.freeGpus;
    for (const i of allocation.gpuIndices) {
      slot.gpuUsed[i] = 1;
      slot.freeGpus--;
    }
    slot.group?.moved(slot, before);
    slot.freeVcpus -= allocation.vcpus;
    slot.freeMemoryGb -= allocation.memoryGb;
    slot.freeDiskGb -= allocation.diskGb;
    const base = slot.host.portRange[0];
    for (const port of allocation.publicPorts) {
      slot.portUsed[port - base] = 1;
      slot.freePorts--;
    }
    while (slot.portLow < slot.portUsed.length && slot.portUsed[slot.portLow] !== 0) slot.portLow++;
    this.allocations.set(holderId, allocation);
  }
}

function indicesWhere(flags: Uint8Array, offset: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < flags.length; i++) if (flags[i] !== 0) out.push(offset + i);
  return out;
}
