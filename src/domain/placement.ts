/**
 * place(): the rules of placement-sieve.ts over a plain snapshot of the fleet, one host at a
 * time, and the choice among the hosts that fit. Pure.
 */
import type { Catalog, Host } from './catalog.js';
import { gpuHostTerms, memoryCapacity, vcpuCapacity } from './gpu-allotment.js';
import type { PlacementRequest, PlacementResult } from './placement-request.js';
import { memoryOn, sieve, staticallyEligible, vcpusOn, type FreeResources, type HostGroup } from './placement-sieve.js';

/** Resources held on one host (by pods that are not stopped/terminated, and workers). */
export interface HostUsage {
  gpuIndices: Set<number>;
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  ports: Set<number>;
}

/** Input of the pure placement function: the fleet, its current usage and the catalog. */
export interface FleetSnapshot {
  hosts: readonly Host[];
  usage: ReadonlyMap<string, HostUsage>;
  catalog: Catalog;
}

const noUsage: HostUsage = { gpuIndices: new Set(), vcpus: 0, memoryGb: 0, diskGb: 0, ports: new Set() };

/** The number of public ports in a host's (inclusive) range. */
export const portCapacity = (host: Host): number => Math.max(0, host.portRange[1] - host.portRange[0] + 1);

function freeOf(host: Host, usage: HostUsage, catalog: Catalog): FreeResources {
  let usedGpus = 0;
  for (const i of usage.gpuIndices) if (i >= 0 && i < host.gpuCount) usedGpus++;
  let usedPorts = 0;
  for (const p of usage.ports) if (p >= host.portRange[0] && p <= host.portRange[1]) usedPorts++;
  return {
    hostId: host.id,
    freeGpus: host.gpuCount - usedGpus,
    freeVcpus: vcpuCapacity(host) - usage.vcpus,
    freeMemoryGb: memoryCapacity(host) - usage.memoryGb,
    freeDiskGb: host.diskGb - usage.diskGb,
    freePorts: portCapacity(host) - usedPorts,
    terms: gpuHostTerms(host, catalog.gpuTypes),
  };
}

function singleHostGroup(host: Host, usage: HostUsage, catalog: Catalog): HostGroup {
  const free = freeOf(host, usage, catalog);
  return {
    gpuTypeId: host.gpuTypeId,
    dataCenterId: host.dataCenterId,
    cloud: host.cloud,
    cudaVersion: host.cudaVersion,
    cpuFlavors: host.cpuFlavors,
    gpusPerHost: host.gpuTypeId === null ? 0 : host.gpuCount,
    hostCount: 1,
    freeGpus: free.freeGpus,
    maxFreeGpus: free.freeGpus,
    eachHostWithFreeGpus: (min, visit) => {
      if (free.freeGpus >= min) visit(free);
    },
  };
}

/**
 * The order among hosts that fit: earlier GPU type in the request, then earlier preferred data
 * center, then the tightest fit (fewest GPUs — for CPU pods vCPUs — left free, so large requests
 * still find whole hosts), then host id. Negative when `a` is better.
 */
function comparePlacementScore(
  a: { typeRank: number; dcRank: number; leftover: number; hostId: string },
  b: { typeRank: number; dcRank: number; leftover: number; hostId: string },
): number {
  return (
    a.typeRank - b.typeRank ||
    a.dcRank - b.dcRank ||
    a.leftover - b.leftover ||
    (a.hostId < b.hostId ? -1 : a.hostId > b.hostId ? 1 : 0)
  );
}

/** The `count` lowest values of `[from, to]` that `taken` does not hold. */
function lowestFree(from: number, to: number, count: number, taken: ReadonlySet<number>): number[] {
  const out: number[] = [];
  for (let v = from; v <= to && out.length < count; v++) if (!taken.has(v)) out.push(v);
  return out;
}

/** Chooses a host for the request, or says which constraint could not be met. Pure. */
export function place(request: PlacementRequest, snapshot: FleetSnapshot): PlacementResult {
  const byId = new Map(snapshot.hosts.map((h) => [h.id, h]));
  const groups = snapshot.hosts.map((h) => singleHostGroup(h, snapshot.usage.get(h.id) ?? noUsage, snapshot.catalog));
  const result = sieve(request, groups, snapshot.catalog);
  if (!result.ok) return result;
  const scored = result.hosts.map((free) => {
    const host = byId.get(free.hostId)!;
    const typeRank = request.kind === 'gpu' ? request.gpuTypeIds.indexOf(host.gpuTypeId ?? '') : 0;
    const dcRank = request.dataCenterIds.length > 0 ? request.dataCenterIds.indexOf(host.dataCenterId) : 0;
    const leftover = request.kind === 'gpu' ? free.freeGpus - request.gpuCount : free.freeVcpus - request.vcpuCount;
    return { typeRank, dcRank, leftover, hostId: host.id, host, free };
  });
  scored.sort(comparePlacementScore);
  const { host, free } = scored[0]!;
  const usage = snapshot.usage.get(host.id) ?? noUsage;
  return {
    ok: true,
    placement: {
      hostId: host.id,
      dataCenterId: host.dataCenterId,
      cloud: host.cloud,
      gpuTypeId: request.kind === 'gpu' ? host.gpuTypeId : null,
      gpuIndices: request.kind === 'gpu' ? lowestFree(0, host.gpuCount - 1, request.gpuCount, usage.gpuIndices) : [],
      cudaVersion: request.kind === 'gpu' ? host.cudaVersion : null,
      publicPorts: lowestFree(host.portRange[0], host.portRange[1], request.portCount, usage.ports),
      vcpus: vcpusOn(request, free),
      memoryGb: memoryOn(request, free),
    },
  };
}

/** The ids of the hosts `request` may ever run on, whatever they hold now (the static filters only). Pure. */
export function eligibleHostIds(request: PlacementRequest, snapshot: FleetSnapshot): string[] {
  const ids = new Map<HostGroup, string>();
  const groups = snapshot.hosts.map((h) => {
    const g = singleHostGroup(h, noUsage, snapshot.catalog);
    ids.set(g, h.id);
    return g;
  });
  return staticallyEligible(request, groups, snapshot.catalog).map((g) => ids.get(g)!);
}
