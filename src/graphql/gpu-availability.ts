/**
 * `DataCenter.gpuAvailability`: one entry per GPU type some host in the data center has. Without
 * an input it answers whether the data center has one GPU of the type free (the stock status is
 * the type's, catalog-wide); with `input: {gpuCount, secureCloud}` — SkyPilot's capacity
 * pre-check — it answers whether a pod of `gpuCount` GPUs (with the vCPUs and memory they come
 * with) fits on one host there now, in that cloud (both when `secureCloud` is not said): the
 * levels of the catalog's availability (`GET /v2/catalog/gpus?include=AVAILABILITY`).
 */
import type { AvailabilityLevel } from '../catalog/catalog-v2.js';
import type { Cloud } from '../domain/catalog.js';
import { validationFailed } from '../domain/errors.js';
import type { GraphqlContext } from './context.js';

/** A data center as `dataCenters` and `NetworkVolume.dataCenter` answer it; `gpuTypes` feeds gpuAvailability. */
export interface GqlDataCenter {
  id: string;
  name: string;
  location: string;
  countryCode: string;
  listed: boolean;
  gpuTypes: string[];
}

export interface GpuAvailabilityInput {
  gpuCount?: number | null;
  secureCloud?: boolean | null;
}

interface GpuAvailabilityEntry {
  gpuTypeId: string;
  displayName: string;
  stockStatus: string | null;
  available: boolean;
}

/** The most GPUs the question may name: a bound on its work, far above any host's GPUs. */
const MAX_GPU_COUNT = 1024;

const RANK: Record<AvailabilityLevel, number> = { NONE: 0, LOW: 1, MEDIUM: 2, HIGH: 3 };
const WORDS: Record<AvailabilityLevel, string | null> = { NONE: null, LOW: 'Low', MEDIUM: 'Medium', HIGH: 'High' };

/** Per request and input, the level of each (GPU type, data center): computed once for every data center. */
const levelsByRequest = new WeakMap<GraphqlContext, Map<string, Map<string, AvailabilityLevel>>>();

function levelsFor(ctx: GraphqlContext, count: number, clouds: Cloud[]): Map<string, AvailabilityLevel> {
  const key = `${count}|${clouds.join(',')}`;
  const cached = levelsByRequest.get(ctx)?.get(key);
  if (cached) return cached;
  const levels = new Map<string, AvailabilityLevel>();
  for (const cloud of clouds)
    for (const type of ctx.services.catalog.gpuTypes({
      products: ['POD'],
      count,
      cloud,
      countryCodes: null,
      cudaVersions: [],
      minCudaVersion: null,
    }))
      for (const dc of type.dataCenters ?? []) {
        const at = `${type.id}|${dc.id}`;
        const seen = levels.get(at) ?? 'NONE';
        if (RANK[dc.availability] > RANK[seen]) levels.set(at, dc.availability);
      }
  const forRequest = levelsByRequest.get(ctx) ?? new Map<string, Map<string, AvailabilityLevel>>();
  forRequest.set(key, levels);
  levelsByRequest.set(ctx, forRequest);
  return levels;
}

/** The entries of `dc`'s gpuAvailability for `input` (see the file's comment). */
export function gpuAvailability(
  dc: GqlDataCenter,
  input: GpuAvailabilityInput | null | undefined,
  ctx: GraphqlContext,
): GpuAvailabilityEntry[] {
  const { catalog } = ctx.services;
  const displayName = (id: string) => catalog.catalog.gpuTypes.find((g) => g.id === id)?.displayName ?? id;
  if (input?.gpuCount == null && input?.secureCloud == null) {
    const stock = new Map(catalog.listGpuTypes({ availability: true }).map((g) => [g.id, g.availability]));
    return dc.gpuTypes.map((id) => {
      const free = (stock.get(id)?.dataCenters.find((s) => s.id === dc.id)?.available ?? 0) > 0;
      return {
        gpuTypeId: id,
        displayName: displayName(id),
        stockStatus: free ? (stock.get(id)?.stockStatus ?? null) : null,
        available: free,
      };
    });
  }
  const count = input.gpuCount ?? 1;
  if (!Number.isInteger(count) || count < 1 || count > MAX_GPU_COUNT)
    throw validationFailed([`input.gpuCount: ${count} must be a whole number from 1 to ${MAX_GPU_COUNT}`]);
  const clouds: Cloud[] =
    input.secureCloud === true ? ['SECURE'] : input.secureCloud === false ? ['COMMUNITY'] : ['SECURE', 'COMMUNITY'];
  const levels = levelsFor(ctx, count, clouds);
  return dc.gpuTypes.map((id) => {
    const level = levels.get(`${id}|${dc.id}`) ?? 'NONE';
    return { gpuTypeId: id, displayName: displayName(id), stockStatus: WORDS[level], available: level !== 'NONE' };
  });
}
