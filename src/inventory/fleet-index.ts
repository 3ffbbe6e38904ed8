import type { Catalog, Cloud, Host } from '../domain/catalog.js';
import { compareCudaVersions, cudaAccepts, cudaCode, cudaRule, type CudaRule } from '../domain/cuda.js';
import { gpuHostTerms, largestPlaceable, placeableUnits } from '../domain/gpu-allotment.js';
import type { PlacementRequest } from '../domain/placement-request.js';
import { sieve, type HostGroup } from '../domain/placement-sieve.js';
import { GpuGroup } from './gpu-group.js';
import { HostSlot } from './host-slot.js';

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

/** What a host's reclaimable holds would give back, as availability counts it. */
interface GivenBack {
  gpus: number;
  vcpus: number;
  memoryGb: number;
}

/**
 * The fleet's available hosts, indexed for placement: GPU hosts grouped by everything the static
 * filters look at (each group keeping its hosts bucketed by free GPU count), CPU hosts by flavor.
 * It finds the best host for a request in the order of `place()`, names the constraint that could
 * not be met when none fits, and counts the free GPUs of a type.
 *
 * It is built over the hosts' slots, which keep what is reserved on each host, and rebuilt (by
 * the Inventory) when a host joins, leaves, changes capacity or availability: decisions read it
 * without allocating; only those rare changes pay for a rebuild.
 */
export class FleetIndex {
  /** The indexed hosts' slots, in host id order. */
  readonly slots: HostSlot[];
  private readonly gpuGroupsByType = new Map<string, GpuGroup[]>();
  private readonly cpuSlotsByFlavor = new Map<string, HostSlot[]>();
  /** Reused per decision so the hot path does not allocate. */
  private readonly scratch: GpuGroup[] = [];
  /** Whether the last `findGpuHost` met an eligible group with reclaimable holds (else the ladder has nothing to look at). */
  private metHolds = false;

  constructor(
    slots: readonly HostSlot[],
    private readonly catalog: Catalog,
  ) {
    const gpuGn = new Map(catalog.gpuTypes.map((t) => [t.id, t.globalNetworking]));
    this.slots = [...slots].sort((a, b) => (a.hostId < b.hostId ? -1 : a.hostId > b.hostId ? 1 : 0));
    const groups = new Map<string, GpuGroup>();
    this.slots.forEach((slot, ord) => {
      const host = slot.host;
      slot.ord = ord;
      slot.group = null;
      for (const flavor of host.cpuFlavors) {
        const list = this.cpuSlotsByFlavor.get(flavor) ?? [];
        list.push(slot);
        this.cpuSlotsByFlavor.set(flavor, list);
      }
      if (host.gpuTypeId === null || host.gpuCount <= 0) return;
      const key = JSON.stringify([host.gpuTypeId, host.dataCenterId, host.cloud, host.cudaVersion, host.gpuCount]);
      let group = groups.get(key);
      if (!group) {
        const gn = gpuGn.get(host.gpuTypeId) === true && slot.dcGlobalNetworking;
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

  /** A slot for `host`, with the data center's global networking and the GPU type's per-GPU default as the catalog says. */
  static slotFor(host: Host, catalog: Catalog): HostSlot {
    return new HostSlot(
      host,
      catalog.dataCenters.some((d) => d.id === host.dataCenterId && d.globalNetworking),
      gpuHostTerms(host, catalog.gpuTypes),
    );
  }

  /**
   * Free and total GPUs of one type, overall and per data center and CUDA version. A GPU counts as
   * free when an instance of one GPU could take it now: its host also has the vCPUs and memory it
   * comes with free (a host can run out of CPUs or memory before GPUs). O(hosts of the type).
   */
  gpuStock(gpuTypeId: string, gives?: (hostId: string) => GivenBack | null): GpuTypeStock {
    const groups = this.gpuGroupsByType.get(gpuTypeId) ?? [];
    const dcs = new Map<string, { id: string; available: number; total: number }>();
    const cudas = new Map<string, { version: string; available: number; total: number }>();
    const clouds = new Set<Cloud>();
    let total = 0;
    let available = 0;
    let maxGpuCount = 0;
    for (const g of groups) {
      const groupTotal = g.gpusPerHost * g.hostCount;
      let groupFree = 0;
      for (const slot of g.slots) {
        const back = gives?.(slot.hostId);
        const free = back
          ? {
              freeGpus: slot.freeGpus + back.gpus,
              freeVcpus: slot.freeVcpus + back.vcpus,
              freeMemoryGb: slot.freeMemoryGb + back.memoryGb,
            }
          : slot;
        if (free.freeGpus === 0) continue;
        groupFree += placeableUnits(slot.terms, free, 1);
        if (free.freeGpus > maxGpuCount) maxGpuCount = Math.max(maxGpuCount, largestPlaceable(slot.terms, free));
      }
      total += groupTotal;
      available += groupFree;
      clouds.add(g.cloud);
      const dc = dcs.get(g.dataCenterId) ?? { id: g.dataCenterId, available: 0, total: 0 };
      dc.available += groupFree;
      dc.total += groupTotal;
      dcs.set(dc.id, dc);
      if (g.cudaVersion !== null) {
        const cuda = cudas.get(g.cudaVersion) ?? { version: g.cudaVersion, available: 0, total: 0 };
        cuda.available += groupFree;
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

  /**
   * Best GPU host by (type preference, data center preference, tightest fit, host id) — the
   * order of `comparePlacementScore` — walking free-count levels upward so the first hit wins.
   */
  findGpuHost(request: PlacementRequest): HostSlot | null {
    const need = Math.max(0, request.gpuCount);
    const rule = cudaRule(request);
    const dcs = request.dataCenterIds;
    const ranks = dcs.length > 0 ? dcs.length : 1;
    this.metHolds = false;
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
        if (g.holds.length > 0) this.metHolds = true;
      }
      if (eligible.length === 0) continue;
      for (let r = 0; r < ranks; r++) {
        let best: HostSlot | null = null;
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

  /**
   * The reclaim ladder's candidates after `findGpuHost(request)` found nothing: the groups that
   * pass the request's static filters and hold something reclaimable, each with its `typeRank` and
   * `dcRank` set. Empty at once when that search met none, so a request refused by what the hosts
   * *are* costs no second pass.
   */
  reclaimGroups(request: PlacementRequest): GpuGroup[] {
    const out: GpuGroup[] = [];
    if (!this.metHolds) return out;
    const need = Math.max(0, request.gpuCount);
    const rule = cudaRule(request);
    const dcs = request.dataCenterIds;
    for (let t = 0; t < request.gpuTypeIds.length; t++) {
      const typeId = request.gpuTypeIds[t]!;
      if (request.gpuTypeIds.indexOf(typeId) !== t) continue;
      for (const g of this.gpuGroupsByType.get(typeId) ?? []) {
        if (g.holds.length === 0 || !this.admitsStatically(g, request, rule, need)) continue;
        g.dcRank = dcs.length > 0 ? dcs.indexOf(g.dataCenterId) : 0;
        if (g.dcRank < 0) continue;
        g.typeRank = t;
        out.push(g);
      }
    }
    return out;
  }

  private admitsStatically(g: GpuGroup, request: PlacementRequest, rule: CudaRule, need: number): boolean {
    if (g.gpusPerHost < need) return false;
    if (request.cloud !== 'ALL' && g.cloud !== request.cloud) return false;
    if (request.volumeDataCenterId !== null && g.dataCenterId !== request.volumeDataCenterId) return false;
    if (request.globalNetworking && !g.globalNetworking) return false;
    return cudaAccepts(rule, g.cudaCode);
  }

  /**
   * Whether an indexed host passes every static filter of the request (what it *is*: type or
   * flavor, cloud, data centers, volume, global networking, CUDA, GPUs per host), and its rank in
   * the request's type and data center preferences; null when it does not pass. For the reclaim
   * ladder, which looks at single hosts.
   */
  rankOf(slot: HostSlot, request: PlacementRequest): { typeRank: number; dcRank: number } | null {
    const h = slot.host;
    if (request.cloud !== 'ALL' && h.cloud !== request.cloud) return null;
    const dcRank = request.dataCenterIds.length > 0 ? request.dataCenterIds.indexOf(h.dataCenterId) : 0;
    if (dcRank < 0) return null;
    if (request.volumeDataCenterId !== null && h.dataCenterId !== request.volumeDataCenterId) return null;
    if (request.kind === 'cpu')
      return request.cpuFlavorId !== null &&
        h.cpuFlavors.includes(request.cpuFlavorId) &&
        (!request.globalNetworking || slot.dcGlobalNetworking)
        ? { typeRank: 0, dcRank }
        : null;
    const typeRank = h.gpuTypeId === null ? -1 : request.gpuTypeIds.indexOf(h.gpuTypeId);
    if (typeRank < 0 || slot.gpuUsed.length < Math.max(1, request.gpuCount)) return null;
    if (request.globalNetworking) {
      const gn = this.catalog.gpuTypes.find((t) => t.id === h.gpuTypeId)?.globalNetworking === true;
      if (!gn || !slot.dcGlobalNetworking) return null;
    }
    return cudaAccepts(cudaRule(request), cudaCode(h.cudaVersion)) ? { typeRank, dcRank } : null;
  }

  /** CPU hosts are few: a scan of the flavor's hosts in (data center preference, fewest vCPUs left, id) order. */
  findCpuHost(request: PlacementRequest): HostSlot | null {
    const slots = request.cpuFlavorId === null ? undefined : this.cpuSlotsByFlavor.get(request.cpuFlavorId);
    if (!slots) return null;
    const dcs = request.dataCenterIds;
    let best: HostSlot | null = null;
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
  explain(request: PlacementRequest): { ok: false; reason: string } {
    const groups: HostGroup[] = [];
    if (request.kind === 'gpu') {
      for (const typeId of new Set(request.gpuTypeIds)) groups.push(...(this.gpuGroupsByType.get(typeId) ?? []));
    } else if (request.cpuFlavorId !== null) {
      for (const slot of this.cpuSlotsByFlavor.get(request.cpuFlavorId) ?? []) groups.push(slot.single);
    }
    const result = sieve(request, groups, this.catalog);
    return { ok: false, reason: result.ok ? 'No host can take the request right now' : result.reason };
  }
}
