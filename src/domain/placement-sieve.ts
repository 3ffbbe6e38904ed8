/**
 * The rules of placement. Placement filters hosts in a fixed order — first what a host *is* (GPU
 * type or CPU flavor, cloud, data centers, network-volume data center, global networking, CUDA,
 * GPUs per host), then what it has *free* (GPUs, vCPUs, memory, disk, public ports) — and, when
 * nothing fits, names the first filter that left no candidate. `sieve` is the one statement of
 * those rules: `place` (placement.ts) runs it over single hosts; the Inventory runs it over its
 * indexed host groups only to explain a refusal, so both explain a refusal in the same words.
 */
import type { Catalog, Cloud } from './catalog.js';
import { compareCudaVersions, cudaAccepts, cudaCode, cudaRule, describeCudaRule } from './cuda.js';
import { allottedMemoryGb, allottedVcpus, memoryShare, vcpuShare, type GpuHostTerms } from './gpu-allotment.js';
import type { PlacementRequest } from './placement-request.js';

/** What a host has free, as the resource filters see it. */
export interface FreeResources {
  readonly hostId: string;
  readonly freeGpus: number;
  readonly freeVcpus: number;
  readonly freeMemoryGb: number;
  readonly freeDiskGb: number;
  readonly freePorts: number;
  /** The host's size and its GPU type's per-GPU default: what a GPU request's allotment reads. */
  readonly terms: GpuHostTerms;
}

/**
 * Hosts that look alike to the static filters (same GPU type, data center, cloud, CUDA version
 * and GPUs per host). `place` uses one group per host.
 */
export interface HostGroup {
  readonly gpuTypeId: string | null;
  readonly dataCenterId: string;
  readonly cloud: Cloud;
  readonly cudaVersion: string | null;
  readonly cpuFlavors: readonly string[];
  readonly gpusPerHost: number;
  readonly hostCount: number;
  /** Free GPUs summed over the group's hosts. */
  readonly freeGpus: number;
  /** Most free GPUs on one host of the group. */
  readonly maxFreeGpus: number;
  /** Visits every host of the group with at least `minFreeGpus` free GPUs. */
  eachHostWithFreeGpus(minFreeGpus: number, visit: (host: FreeResources) => void): void;
}

export type SieveResult = { ok: true; hosts: FreeResources[] } | { ok: false; reason: string };

const quote = (ids: readonly string[]): string => ids.map((id) => `"${id}"`).join(' or ');
const unique = <T>(items: Iterable<T>): T[] => [...new Set(items)];
const dcList = (ids: readonly string[]): string => `[${ids.join(', ')}]`;

/** The GPU types (or CPU flavor) the remaining groups offer, in request order, as the messages name them. */
function subject(request: PlacementRequest, groups: readonly HostGroup[]): string {
  if (request.kind === 'cpu') return `CPU flavor "${request.cpuFlavorId ?? ''}"`;
  const present = new Set(groups.map((g) => g.gpuTypeId));
  const named = unique(request.gpuTypeIds).filter((id) => present.has(id));
  return quote(named.length > 0 ? named : request.gpuTypeIds);
}

interface StaticStage {
  admits(group: HostGroup): boolean;
  refusal(remaining: readonly HostGroup[]): string;
}

function staticStages(request: PlacementRequest, catalog: Catalog): StaticStage[] {
  const stages: StaticStage[] = [];
  const gpu = request.kind === 'gpu';
  const types = new Set(request.gpuTypeIds);
  stages.push({
    admits: gpu
      ? (g) => g.gpuTypeId !== null && types.has(g.gpuTypeId) && g.gpusPerHost > 0
      : (g) => request.cpuFlavorId !== null && g.cpuFlavors.includes(request.cpuFlavorId),
    refusal: () =>
      !gpu
        ? `No host offers CPU flavor "${request.cpuFlavorId ?? ''}"`
        : request.gpuTypeIds.length === 0
          ? 'No GPU type was requested'
          : request.gpuTypeIds.length === 1
            ? `No host offers GPU type "${request.gpuTypeIds[0]!}"`
            : `No host offers any of the GPU types ${unique(request.gpuTypeIds)
                .map((id) => `"${id}"`)
                .join(', ')}`,
  });
  if (request.cloud !== 'ALL') {
    const cloud = request.cloud;
    stages.push({
      admits: (g) => g.cloud === cloud,
      refusal: (rest) => {
        const other = unique(rest.map((g) => g.cloud)).join(', ');
        return `No ${cloud} cloud host offers ${subject(request, rest)} (it is offered in ${other} cloud)`;
      },
    });
  }
  if (request.dataCenterIds.length > 0) {
    const wanted = new Set(request.dataCenterIds);
    stages.push({
      admits: (g) => wanted.has(g.dataCenterId),
      refusal: (rest) =>
        `No data center among ${dcList(request.dataCenterIds)} has ${subject(request, rest)} (available in ${unique(
          rest.map((g) => g.dataCenterId),
        )
          .sort()
          .join(', ')})`,
    });
  }
  if (request.volumeDataCenterId !== null) {
    const dc = request.volumeDataCenterId;
    stages.push({
      admits: (g) => g.dataCenterId === dc,
      refusal: (rest) =>
        request.dataCenterIds.length > 0 && !request.dataCenterIds.includes(dc)
          ? `Network volume is in ${dc}, which is not among the requested data centers ${dcList(request.dataCenterIds)}`
          : `Network volume is in ${dc}, where no host offers ${subject(request, rest)}`,
    });
  }
  if (request.globalNetworking) {
    const gpuTypes = new Map(catalog.gpuTypes.map((t) => [t.id, t]));
    const dataCenters = new Map(catalog.dataCenters.map((d) => [d.id, d]));
    if (gpu) {
      stages.push({
        admits: (g) => g.gpuTypeId !== null && gpuTypes.get(g.gpuTypeId)?.globalNetworking === true,
        refusal: (rest) => {
          const named = subject(request, rest);
          return rest.length > 0 && new Set(rest.map((g) => g.gpuTypeId)).size > 1
            ? `None of ${named} supports global networking`
            : `${named} does not support global networking`;
        },
      });
    }
    stages.push({
      admits: (g) => dataCenters.get(g.dataCenterId)?.globalNetworking === true,
      refusal: (rest) =>
        `No data center with global networking has ${subject(request, rest)} (it is offered in ${unique(
          rest.map((g) => g.dataCenterId),
        )
          .sort()
          .join(', ')})`,
    });
  }
  if (gpu && (request.allowedCudaVersions.length > 0 || request.minCudaVersion !== null)) {
    const rule = cudaRule(request);
    stages.push({
      admits: (g) => cudaAccepts(rule, cudaCode(g.cudaVersion)),
      refusal: (rest) => {
        const known = unique(rest.map((g) => g.cudaVersion).filter((v): v is string => v !== null)).sort(
          compareCudaVersions,
        );
        return `No host with ${subject(request, rest)} reports ${describeCudaRule(request)} (available: ${known.length > 0 ? known.join(', ') : 'none reported'})`;
      },
    });
  }
  if (gpu) {
    stages.push({
      admits: (g) => g.gpusPerHost >= request.gpuCount,
      refusal: (rest) =>
        `No host with ${subject(request, rest)} has ${request.gpuCount} GPUs (the most on one host is ${Math.max(0, ...rest.map((g) => g.gpusPerHost))})`,
    });
  }
  return stages;
}

interface ResourceStage {
  admits(host: FreeResources): boolean;
  refusal(remaining: readonly FreeResources[]): string;
}

/** The vCPUs a request takes on a host: a CPU request its own, a GPU request its allotment there (-1: none fits). */
export const vcpusOn = (request: PlacementRequest, h: FreeResources): number =>
  request.kind === 'gpu' ? allottedVcpus(h.terms, request.gpuCount, request.vcpuCount) : request.vcpuCount;

/** The GB of memory a request takes on a host, as {@link vcpusOn}. */
export const memoryOn = (request: PlacementRequest, h: FreeResources): number =>
  request.kind === 'gpu' ? allottedMemoryGb(h.terms, request.gpuCount, request.memoryGb) : request.memoryGb;

/** Whether the host has what the request takes besides GPUs: vCPUs, memory, disk, public ports. */
export function fitsResources(request: PlacementRequest, h: FreeResources): boolean {
  if (h.freeDiskGb < request.diskGb || h.freePorts < request.portCount) return false;
  if (request.kind !== 'gpu') return h.freeVcpus >= request.vcpuCount && h.freeMemoryGb >= request.memoryGb;
  const vcpus = allottedVcpus(h.terms, request.gpuCount, request.vcpuCount);
  if (vcpus < 0 || h.freeVcpus < vcpus) return false;
  const memoryGb = allottedMemoryGb(h.terms, request.gpuCount, request.memoryGb);
  return memoryGb >= 0 && h.freeMemoryGb >= memoryGb;
}

function resourceStages(request: PlacementRequest, where: string): ResourceStage[] {
  const most = (rest: readonly FreeResources[], pick: (h: FreeResources) => number): number =>
    rest.reduce((m, h) => Math.max(m, pick(h)), 0);
  const least = (rest: readonly FreeResources[], pick: (h: FreeResources) => number): number =>
    rest.reduce((m, h) => Math.min(m, pick(h)), Number.MAX_SAFE_INTEGER);
  const stages: ResourceStage[] = [];
  if (request.kind === 'gpu') {
    const n = request.gpuCount;
    const gpus = `${n} GPU${n === 1 ? '' : 's'}`;
    const come = `${gpus} come${n === 1 ? 's' : ''} with`;
    // A host's share of its GPUs bounds what they come with: a larger minimum does not fit it.
    stages.push(
      {
        admits: (h) => request.vcpuCount <= vcpuShare(h.terms, n),
        refusal: (rest) =>
          `No host with ${where} can give ${gpus} the ${request.vcpuCount} vCPUs asked for: CPUs are the constraint (a host gives each GPU its share of its vCPUs; the largest share of ${gpus} is ${most(rest, (h) => vcpuShare(h.terms, n))} vCPUs)`,
      },
      {
        admits: (h) => request.memoryGb <= memoryShare(h.terms, n),
        refusal: (rest) =>
          `No host with ${where} can give ${gpus} the ${request.memoryGb} GB of memory asked for: memory is the constraint (a host gives each GPU its share of its memory; the largest share of ${gpus} is ${most(rest, (h) => memoryShare(h.terms, n))} GB)`,
      },
      {
        admits: (h) => h.freeVcpus >= vcpusOn(request, h),
        refusal: (rest) =>
          `No host with ${where} has the vCPUs its GPUs come with free: CPUs are the constraint, the host ran out of CPUs before GPUs (${come} at least ${least(rest, (h) => vcpusOn(request, h))} vCPUs; the most free is ${most(rest, (h) => h.freeVcpus)})`,
      },
      {
        admits: (h) => h.freeMemoryGb >= memoryOn(request, h),
        refusal: (rest) =>
          `No host with ${where} has the memory its GPUs come with free: memory is the constraint, the host ran out of memory before GPUs (${come} at least ${least(rest, (h) => memoryOn(request, h))} GB; the most free is ${most(rest, (h) => h.freeMemoryGb)} GB)`,
      },
    );
  } else {
    stages.push(
      {
        admits: (h) => h.freeVcpus >= request.vcpuCount,
        refusal: (rest) =>
          `No host with ${where} has ${request.vcpuCount} free vCPUs (the most is ${most(rest, (h) => h.freeVcpus)})`,
      },
      {
        admits: (h) => h.freeMemoryGb >= request.memoryGb,
        refusal: (rest) =>
          `No host with ${where} has ${request.memoryGb} GB of free memory (the most is ${most(rest, (h) => h.freeMemoryGb)} GB)`,
      },
    );
  }
  stages.push(
    {
      admits: (h) => h.freeDiskGb >= request.diskGb,
      refusal: (rest) =>
        `No host with ${where} has ${request.diskGb} GB of free disk (the most is ${most(rest, (h) => h.freeDiskGb)} GB)`,
    },
    {
      admits: (h) => h.freePorts >= request.portCount,
      refusal: (rest) =>
        `No host with ${where} has ${request.portCount} free public ports (the most is ${most(rest, (h) => h.freePorts)})`,
    },
  );
  return stages;
}

/**
 * Applies every placement filter in order to `groups` and answers the hosts that pass, or the
 * reason naming the first filter that left no candidate.
 */
export function sieve(request: PlacementRequest, groups: readonly HostGroup[], catalog: Catalog): SieveResult {
  let current: readonly HostGroup[] = groups;
  for (const stage of staticStages(request, catalog)) {
    const next = current.filter((g) => stage.admits(g));
    if (next.length === 0) return { ok: false, reason: stage.refusal(current) };
    current = next;
  }
  const need = request.kind === 'gpu' ? request.gpuCount : 0;
  const what = subject(request, current);
  let hosts: FreeResources[] = [];
  for (const g of current) g.eachHostWithFreeGpus(need, (h) => hosts.push(h));
  if (hosts.length === 0) {
    const total = current.reduce((n, g) => n + g.gpusPerHost * g.hostCount, 0);
    const free = current.reduce((n, g) => n + g.freeGpus, 0);
    const dcs = unique(current.map((g) => g.dataCenterId))
      .sort()
      .join(', ');
    if (free === 0) return { ok: false, reason: `All ${total} ${what} GPUs in ${dcs} are in use (requested ${need})` };
    const most = current.reduce((m, g) => Math.max(m, g.maxFreeGpus), 0);
    return { ok: false, reason: `No host with ${what} has ${need} free GPUs (the most free on one host is ${most})` };
  }
  for (const stage of resourceStages(request, request.kind === 'gpu' ? `${need} free ${what} GPUs` : what)) {
    const next = hosts.filter((h) => stage.admits(h));
    if (next.length === 0) return { ok: false, reason: stage.refusal(hosts) };
    hosts = next;
  }
  return { ok: true, hosts };
}

/**
 * The groups `request` may ever run on, what is free aside: the static filters alone (GPU type or
 * CPU flavor, cloud, data centers, CUDA). Pre-pulling an endpoint's image uses it
 * (serverless/image-prepull.ts).
 */
export function staticallyEligible(
  request: PlacementRequest,
  groups: readonly HostGroup[],
  catalog: Catalog,
): HostGroup[] {
  let current: readonly HostGroup[] = groups;
  for (const stage of staticStages(request, catalog)) current = current.filter((g) => stage.admits(g));
  return [...current];
}
