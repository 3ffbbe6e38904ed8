/**
 * What a create body asks of its host beside the GPU type (spec 2.2 rule 3), read from both places
 * clients put it: the seed's top-level `allowedCudaVersions` / `minCudaVersion`, and upstream's v2
 * names inside `gpu` (`gpu.allowedCudaVersions`, `gpu.minCudaVersion`), with the per-GPU minimums
 * `gpu.minVcpuCountPerGpu` / `gpu.minRamPerGpu` (placement filters; SkyPilot's REST v2 client sends
 * them). Pure; a broken rule throws the catalogued ApiError.
 */
import { ApiError } from '../domain/errors.js';

/** The `gpu` of a create body: the seed's `id` and `count`, and upstream's v2 host constraints. */
export interface CreateGpuInput {
  id: string;
  count?: number;
  /** Least vCPUs per GPU the host must offer: a host whose share per GPU is less is not chosen. */
  minVcpuCountPerGpu?: number;
  /** Least GB of memory per GPU, as `minVcpuCountPerGpu`. */
  minRamPerGpu?: number;
  allowedCudaVersions?: string[];
  minCudaVersion?: string;
}

/** The body's CUDA constraint; `given` false when it sends none (the template's then holds). */
export interface CudaRequest {
  given: boolean;
  allowedCudaVersions: string[];
  minCudaVersion: string | null;
}

const sameSet = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((v) => b.includes(v)) && b.every((v) => a.includes(v));

const conflict = (detail: string): ApiError => new ApiError('CUDA_CONSTRAINT_CONFLICT', detail);

/**
 * Rule 3 over both places. At the top level the two fields are exclusive (the seed); inside `gpu`
 * an explicit empty `allowedCudaVersions` states no constraint and may go with a floor (upstream).
 * A field sent in both places must say the same thing; a list in one place and a floor in the
 * other are the two fields at once.
 */
export function cudaRequestOf(body: {
  gpu?: CreateGpuInput;
  cpu?: unknown;
  allowedCudaVersions?: string[];
  minCudaVersion?: string;
}): CudaRequest {
  const top = { allowed: body.allowedCudaVersions, min: body.minCudaVersion };
  const inner = { allowed: body.gpu?.allowedCudaVersions, min: body.gpu?.minCudaVersion };
  if (body.cpu && (top.allowed !== undefined || top.min !== undefined))
    throw new ApiError(
      'CUDA_CONSTRAINT_ON_CPU',
      `"${top.allowed !== undefined ? 'allowedCudaVersions' : 'minCudaVersion'}" applies to GPU pods only; remove it from a CPU pod.`,
    );
  if (top.allowed !== undefined && top.min !== undefined)
    throw conflict('Send either "allowedCudaVersions" or "minCudaVersion", not both.');
  if (top.allowed !== undefined && inner.allowed !== undefined && !sameSet(top.allowed, inner.allowed))
    throw conflict(
      `"allowedCudaVersions" [${top.allowed.join(', ')}] and "gpu.allowedCudaVersions" [${inner.allowed.join(', ')}] differ; send the list in one place.`,
    );
  if (top.min !== undefined && inner.min !== undefined && top.min !== inner.min)
    throw conflict(
      `"minCudaVersion" ${top.min} and "gpu.minCudaVersion" ${inner.min} differ; send the floor in one place.`,
    );
  const allowed = top.allowed ?? inner.allowed;
  const min = top.min ?? inner.min;
  if (allowed !== undefined && allowed.length > 0 && min !== undefined)
    throw conflict(
      'A list of CUDA versions and a minimum CUDA version cannot go together; send one of them (inside "gpu" an empty list may go with a minimum).',
    );
  return {
    given: allowed !== undefined || min !== undefined,
    allowedCudaVersions: allowed ?? [],
    minCudaVersion: min ?? null,
  };
}

/**
 * The least vCPUs and GB of memory a GPU pod accepts in all: the body's totals (GraphQL, REST v1)
 * or the per-GPU minimums × its GPUs, whichever is more; placement refuses a host whose share of
 * the GPUs is less and gives the pod at least that.
 */
export function gpuMinimumsOf(
  gpu: CreateGpuInput,
  totals: { vcpus: number; memoryGb: number },
): { vcpus: number; memoryGb: number } {
  const count = gpu.count ?? 1;
  return {
    vcpus: Math.max(totals.vcpus, (gpu.minVcpuCountPerGpu ?? 0) * count),
    memoryGb: Math.max(totals.memoryGb, (gpu.minRamPerGpu ?? 0) * count),
  };
}
