/**
 * The CPUs and memory a GPU instance (pod or serverless worker) is given with its GPUs: its GPU
 * type's per-GPU default or what the request asks for, whichever is larger, capped by the host's
 * per-GPU share (hosts of one GPU type differ). Pure.
 *
 * - The per-GPU default is the catalog's (`vcpusPerGpu`, `memoryGbPerGpu` of a GPU type); a type
 *   the operator declared without them gets {@link FALLBACK_VCPUS_PER_GPU} vCPUs and one and a half
 *   times its GPU memory (at least {@link FALLBACK_MIN_MEMORY_GB} GB).
 * - The host's share of `n` GPUs is its vCPUs × n / its GPUs and its memory × n / its GPUs, in
 *   whole vCPUs and GB rounded down (at least 1 each): the shares of all its GPUs never add up to
 *   more than the host has. A host with fewer vCPUs (or GB) than GPUs — a test machine with
 *   stand-in GPUs — is counted as having one per GPU ({@link vcpuCapacity}): its GPUs' instances
 *   share what it has, each limited to one.
 * - A request whose minimum is more than a host's share does not fit that host.
 */
import type { GpuType, Host } from './catalog.js';

/** vCPUs and GB of memory: what an instance is given, or asks for at least. */
export interface ComputeAllotment {
  vcpus: number;
  memoryGb: number;
}

/** @default 4 vCPUs per GPU for a GPU type declared without `vcpusPerGpu` */
export const FALLBACK_VCPUS_PER_GPU = 4;
/** @default 16 GB: the least memory per GPU for a type declared without `memoryGbPerGpu` */
export const FALLBACK_MIN_MEMORY_GB = 16;

/** What one GPU of the type comes with by default; `undefined` (a type the catalog lacks) gets the fallback. */
export function perGpuDefault(
  type: Pick<GpuType, 'memoryInGb' | 'vcpusPerGpu' | 'memoryGbPerGpu'> | undefined,
): ComputeAllotment {
  return {
    vcpus: type?.vcpusPerGpu ?? FALLBACK_VCPUS_PER_GPU,
    memoryGb: type?.memoryGbPerGpu ?? Math.max(FALLBACK_MIN_MEMORY_GB, Math.ceil((type?.memoryInGb ?? 0) * 1.5)),
  };
}

/**
 * The vCPUs a host offers instances: its own, but at least one per GPU (a host with fewer shares
 * them among its GPUs' instances). Placement reserves against this.
 */
export const vcpuCapacity = (host: Pick<Host, 'vcpus' | 'gpuCount' | 'gpuTypeId'>): number =>
  host.gpuTypeId === null ? host.vcpus : Math.max(host.vcpus, host.gpuCount);

/** The GB of memory a host offers instances: its own, but at least one per GPU (as {@link vcpuCapacity}). */
export const memoryCapacity = (host: Pick<Host, 'memoryGb' | 'gpuCount' | 'gpuTypeId'>): number =>
  host.gpuTypeId === null ? host.memoryGb : Math.max(host.memoryGb, host.gpuCount);

/** One resource's share of `gpuCount` of a host's `hostGpus` GPUs: rounded down, at least 1. */
const shareOf = (total: number, hostGpus: number, gpuCount: number): number =>
  Math.max(1, Math.floor((total * gpuCount) / Math.max(1, hostGpus)));

/** The host's share of `gpuCount` of its GPUs in vCPUs (allocation-free: placement's refusals read it per host). */
export const vcpuShare = (host: Pick<Host, 'vcpus' | 'gpuCount'>, gpuCount: number): number =>
  shareOf(host.vcpus, host.gpuCount, gpuCount);

/** The host's share of `gpuCount` of its GPUs in GB of memory. */
export const memoryShare = (host: Pick<Host, 'memoryGb' | 'gpuCount'>, gpuCount: number): number =>
  shareOf(host.memoryGb, host.gpuCount, gpuCount);

/** The host's share of `gpuCount` of its GPUs: whole vCPUs and GB, rounded down, at least 1 each. */
export const hostShare = (host: Pick<Host, 'vcpus' | 'memoryGb' | 'gpuCount'>, gpuCount: number): ComputeAllotment => ({
  vcpus: shareOf(host.vcpus, host.gpuCount, gpuCount),
  memoryGb: shareOf(host.memoryGb, host.gpuCount, gpuCount),
});

/**
 * One resource of the allotment: max(`perGpu` × `gpuCount`, `minimum`), capped by the host's
 * share of `total`; -1 when the minimum is more than that share. Allocation-free (placement's hot path).
 */
function allotted(total: number, hostGpus: number, perGpu: number, gpuCount: number, minimum: number): number {
  const share = shareOf(total, hostGpus, gpuCount);
  return minimum > share ? -1 : Math.min(Math.max(perGpu * gpuCount, minimum), share);
}

/** What the allotment reads of a host: its size (its capacities), and the per-GPU default of its GPU type. */
export interface GpuHostTerms {
  vcpus: number;
  memoryGb: number;
  gpuCount: number;
  perGpu: ComputeAllotment;
}

/** The terms of `host` under the catalog's GPU types. */
export function gpuHostTerms(
  host: Pick<Host, 'vcpus' | 'memoryGb' | 'gpuCount' | 'gpuTypeId'>,
  gpuTypes: readonly GpuType[],
): GpuHostTerms {
  const type = host.gpuTypeId === null ? undefined : gpuTypes.find((t) => t.id === host.gpuTypeId);
  return {
    vcpus: vcpuCapacity(host),
    memoryGb: memoryCapacity(host),
    gpuCount: host.gpuCount,
    perGpu: perGpuDefault(type),
  };
}

/** The vCPUs of `gpuCount` GPUs on a host of these terms; -1 when `minimum` is more than its share. */
export const allottedVcpus = (terms: GpuHostTerms, gpuCount: number, minimum = 0): number =>
  allotted(terms.vcpus, terms.gpuCount, terms.perGpu.vcpus, gpuCount, minimum);

/** The GB of memory of `gpuCount` GPUs on a host of these terms; -1 when `minimum` is more than its share. */
export const allottedMemoryGb = (terms: GpuHostTerms, gpuCount: number, minimum = 0): number =>
  allotted(terms.memoryGb, terms.gpuCount, terms.perGpu.memoryGb, gpuCount, minimum);

export type AllotmentResult =
  | ({ ok: true } & ComputeAllotment)
  /** The request's minimum of `short` is more than the host's share of its GPUs (`share`) can give. */
  | { ok: false; short: 'vcpus' | 'memory'; share: ComputeAllotment };

/**
 * The allotment of `gpuCount` GPUs on a host of these terms: max(default × count, minimum), capped
 * by the host's share; refused when the minimum is more than the share.
 */
export function allotmentOn(
  terms: GpuHostTerms,
  gpuCount: number,
  minimum: ComputeAllotment = { vcpus: 0, memoryGb: 0 },
): AllotmentResult {
  const vcpus = allottedVcpus(terms, gpuCount, minimum.vcpus);
  const memoryGb = allottedMemoryGb(terms, gpuCount, minimum.memoryGb);
  if (vcpus < 0) return { ok: false, short: 'vcpus', share: hostShare(terms, gpuCount) };
  if (memoryGb < 0) return { ok: false, short: 'memory', share: hostShare(terms, gpuCount) };
  return { ok: true, vcpus, memoryGb };
}

/** Free GPUs, vCPUs and memory of a host. */
interface FreeOnHost {
  freeGpus: number;
  freeVcpus: number;
  freeMemoryGb: number;
}

/**
 * How many instances of `gpuCount` GPUs (with their default allotment) the host can still take:
 * its free GPUs, vCPUs or memory, whichever runs out first.
 */
export function placeableUnits(terms: GpuHostTerms, free: FreeOnHost, gpuCount: number): number {
  if (gpuCount <= 0) return 0;
  return Math.max(
    0,
    Math.min(
      Math.floor(free.freeGpus / gpuCount),
      Math.floor(free.freeVcpus / allottedVcpus(terms, gpuCount)),
      Math.floor(free.freeMemoryGb / allottedMemoryGb(terms, gpuCount)),
    ),
  );
}

/** The most GPUs one instance can get on the host now, with their default allotment (0: none). */
export function largestPlaceable(terms: GpuHostTerms, free: FreeOnHost): number {
  for (let k = free.freeGpus; k > 0; k--) if (placeableUnits(terms, free, k) > 0) return k;
  return 0;
}
