/**
 * An endpoint's releases: what its workers run, the fields a change to makes a new release, and
 * which release each worker runs (for the rollout figures and `isStale`).
 */
import type { EndpointRelease, EndpointWorker, ReleaseDiffEntry } from '../domain/endpoint.js';
import type { Template } from '../domain/template.js';
import type { EndpointSettings } from './endpoint-settings.js';

/**
 * What an endpoint's workers run, field by field: a change to any of these makes a new release
 * (the others — name, workers min/max, idle timeout, scaler, execution timeout, flashboot — apply
 * to the autoscaler at once and leave running workers current). Template fields are read from the
 * template the endpoint points at.
 */
export function releaseSnapshot(e: EndpointSettings, template: Template | null): Record<string, unknown> {
  return {
    type: e.type,
    templateId: e.templateId,
    'template.imageName': template?.imageName ?? null,
    'template.args': template?.args ?? null,
    'template.containerDiskInGb': template?.containerDiskInGb ?? null,
    'template.ports': template?.ports ?? null,
    'template.env': template?.env ?? null,
    'template.containerRegistryAuthId': template?.containerRegistryAuthId ?? null,
    gpuIds: e.gpuIds,
    gpuCount: e.gpuCount,
    instanceIds: e.instanceIds,
    allowedCudaVersions: e.allowedCudaVersions,
    minCudaVersion: e.minCudaVersion,
    locations: e.locations,
    networkVolumeId: e.networkVolumeId,
    env: e.env,
  };
}

/** The fields whose JSON differs, in snapshot order; `before` null = every field was added. */
export function releaseDiff(
  before: Record<string, unknown> | null,
  after: Record<string, unknown>,
): ReleaseDiffEntry[] {
  const out: ReleaseDiffEntry[] = [];
  for (const [field, value] of Object.entries(after)) {
    const old = before === null ? null : (before[field] ?? null);
    if (before === null || JSON.stringify(old) !== JSON.stringify(value)) out.push({ field, old, new: value });
  }
  return out;
}

/** An endpoint's releases with how many of its live workers run each, and the rollout of the latest. */
export interface ReleaseHistory {
  endpointVersion: number;
  rollout: { inProgress: boolean; workersOnLatest: number; workersTotal: number; percentOnLatest: number };
  releases: Array<EndpointRelease & { workerCount: number }>;
}

/** The release a worker launched with endpoint version `v` runs: the newest at or below `v`. */
export const releaseOf = (releasesNewestFirst: readonly EndpointRelease[], v: number | null): number | null =>
  v === null ? null : (releasesNewestFirst.find((r) => r.version <= v)?.version ?? null);

/** Whether a worker runs an older release than the latest; false when its version is unknown. */
export const isStale = (releasesNewestFirst: readonly EndpointRelease[], w: Pick<EndpointWorker, 'endpointVersion'>) =>
  w.endpointVersion !== null && releasesNewestFirst.length > 0 && w.endpointVersion < releasesNewestFirst[0]!.version;
