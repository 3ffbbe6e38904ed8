import type { AccountsService } from '../accounts/accounts-service.js';
import type { Catalog } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import { ApiError, isApiError, notFound, validationFailed } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { assertEnvAllowed } from '../runtime/env-allowed.js';
import type { Runtime } from '../runtime/runtime.js';
import type { EndpointStore } from '../store/endpoint-store.js';
import type { Template } from '../domain/template.js';
import type { TemplateReferenceChecker, TemplatesService } from '../templates/templates-service.js';
import type { VolumesService } from '../volumes/volumes-service.js';
import {
  ENDPOINT_TYPES,
  SCALER_TYPES,
  type Endpoint,
  type EndpointRelease,
  type EndpointType,
  type EndpointWorker,
  type ReleaseDiffEntry,
  type ScalerType,
} from '../domain/endpoint.js';

/**
 * An endpoint as a transport hands it over. Lists may come as comma lists (the GraphQL wire form)
 * or arrays. On create and replace a missing or null field takes its default; on update a missing
 * field is left as is and null resets it to its default (for networkVolumeId: none).
 */
export interface EndpointInput {
  name?: string | null;
  templateId?: string | null;
  /** `QB` or `LB` (also `QUEUE` / `LOAD_BALANCER`). @default "QB" */
  type?: string | null;
  /** Comma list or array of GPU pools. Required on create. */
  gpuIds?: string | string[] | null;
  /** @default 1 */
  gpuCount?: number | null;
  /** Comma list or array of country codes; empty = any. @default [] */
  locations?: string | string[] | null;
  /** "" or null = none. @default null */
  networkVolumeId?: string | null;
  /** Seconds. @default 5 */
  idleTimeout?: number | null;
  /** @default "QUEUE_DELAY" */
  scalerType?: string | null;
  /** @default 4 */
  scalerValue?: number | null;
  /** @default 0 */
  workersMin?: number | null;
  /** @default 3 */
  workersMax?: number | null;
  /** @default false */
  flashboot?: boolean | null;
  /** Comma list or array of `major.minor`. @default [] */
  allowedCudaVersions?: string | string[] | null;
  /** Lowest host CUDA version, `major.minor`. @default null (no bound) */
  minCudaVersion?: string | null;
  /** @default 600000 */
  executionTimeoutMs?: number | null;
  /** @default {} */
  env?: Record<string, string> | null;
}

export interface EndpointsServiceDeps {
  store: EndpointStore;
  clock: Clock;
  templates: Pick<TemplatesService, 'get'>;
  volumes: Pick<VolumesService, 'get'>;
  config: { catalog: Pick<Catalog, 'pools' | 'dataCenters'> };
  /** Refuses env the runtime will not pass to the endpoint's workers. @default accepts all */
  runtime?: Pick<Runtime, 'refusedEnv'>;
  /** Upper bound of `workersMax`. @default 100 */
  maxWorkers?: number;
  /** Keys bound to an endpoint (its workers' `worker` keys) are revoked when it is deleted. */
  keys?: Pick<AccountsService, 'revokeEndpointKeys'>;
}

type Settings = Omit<Endpoint, 'id' | 'accountId' | 'createdAt' | 'updatedAt' | 'version'>;

const DEFAULTS: Settings = {
  name: '',
  templateId: '',
  type: 'QB',
  gpuIds: [],
  gpuCount: 1,
  locations: [],
  networkVolumeId: null,
  idleTimeout: 5,
  scalerType: 'QUEUE_DELAY',
  scalerValue: 4,
  workersMin: 0,
  workersMax: 3,
  flashboot: false,
  allowedCudaVersions: [],
  minCudaVersion: null,
  executionTimeoutMs: 600_000,
  env: {},
};

const MIN_EXECUTION_TIMEOUT_MS = 5_000;
const MAX_EXECUTION_TIMEOUT_MS = 7 * 24 * 3600 * 1000;
const MAX_IDLE_TIMEOUT_S = 3600;
const MAX_GPU_COUNT = 16;
const CUDA = /^\d+\.\d+$/;
const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Splits a comma list (or flattens an array of comma lists), trimming and dropping empties. */
export const splitList = (value: string | readonly string[]): string[] =>
  (typeof value === 'string' ? [value] : value)
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v.length > 0);

const dedupe = <T>(xs: T[]): T[] => [...new Set(xs)];

const typeAliases: Record<string, EndpointType> = { QB: 'QB', QUEUE: 'QB', LB: 'LB', LOAD_BALANCER: 'LB' };

/** Applies `input` over `base`: undefined keeps the base value, null takes the default. */
function merge(base: Settings, input: EndpointInput): { settings: Settings; problems: string[] } {
  const problems: string[] = [];
  const s: Settings = { ...base };
  const pick = <K extends keyof EndpointInput>(k: K): EndpointInput[K] | undefined => input[k];
  const has = (k: keyof EndpointInput): boolean => input[k] !== undefined;
  const isNull = (k: keyof EndpointInput): boolean => input[k] === null;

  if (has('name')) s.name = isNull('name') ? DEFAULTS.name : String(pick('name')).trim();
  if (has('templateId')) s.templateId = isNull('templateId') ? DEFAULTS.templateId : String(pick('templateId')).trim();
  if (has('type')) {
    const raw = pick('type');
    if (raw === null || raw === '') s.type = DEFAULTS.type;
    else {
      const t = typeAliases[String(raw).toUpperCase()];
      if (t) s.type = t;
      else
        problems.push(
          `type: "${String(raw)}" is not an endpoint type; use ${ENDPOINT_TYPES.join(' (queue-based) or ')} (load balancing)`,
        );
    }
  }
  if (has('gpuIds'))
    s.gpuIds = isNull('gpuIds') ? DEFAULTS.gpuIds : dedupe(splitList(pick('gpuIds')!).map((g) => g.toUpperCase()));
  if (has('locations'))
    s.locations = isNull('locations')
      ? DEFAULTS.locations
      : dedupe(splitList(pick('locations')!).map((l) => l.toUpperCase()));
  if (has('allowedCudaVersions'))
    s.allowedCudaVersions = isNull('allowedCudaVersions')
      ? DEFAULTS.allowedCudaVersions
      : dedupe(splitList(pick('allowedCudaVersions')!));
  if (has('minCudaVersion')) {
    const v = pick('minCudaVersion');
    s.minCudaVersion = v === null || v === undefined || v.trim() === '' ? null : v.trim();
  }
  if (has('networkVolumeId')) {
    const v = pick('networkVolumeId');
    s.networkVolumeId = v === null || v === undefined || v.trim() === '' ? null : v.trim();
  }
  if (has('scalerType')) {
    const raw = pick('scalerType');
    if (raw === null || raw === '') s.scalerType = DEFAULTS.scalerType;
    else if ((SCALER_TYPES as readonly string[]).includes(String(raw).toUpperCase()))
      s.scalerType = String(raw).toUpperCase() as ScalerType;
    else problems.push(`scalerType: "${String(raw)}" is not a scaler type; use ${SCALER_TYPES.join(' or ')}`);
  }
  for (const k of [
    'gpuCount',
    'idleTimeout',
    'scalerValue',
    'workersMin',
    'workersMax',
    'executionTimeoutMs',
  ] as const) {
    if (has(k)) s[k] = isNull(k) ? DEFAULTS[k] : (pick(k) as number);
  }
  if (has('flashboot')) s.flashboot = isNull('flashboot') ? DEFAULTS.flashboot : pick('flashboot') === true;
  if (has('env')) s.env = isNull('env') ? DEFAULTS.env : { ...pick('env')! };
  return { settings: s, problems };
}

/** The region options of spec 2.11's `locations`. */
const SPEC_LOCATIONS = ['CZ', 'FR', 'GB', 'NO', 'RO', 'US'];

/**
 * The rules of an endpoint's settings that need no I/O, one entry per violation, each naming the
 * field and what would be valid.
 */
export function endpointViolations(
  s: Settings,
  catalog: Pick<Catalog, 'pools' | 'dataCenters'>,
  maxWorkers = 100,
): string[] {
  const out: string[] = [];
  const int = (field: string, v: number, min: number, max: number, unit = ''): void => {
    if (!Number.isInteger(v)) out.push(`${field}: must be an integer (got ${String(v)})`);
    else if (v < min || v > max) out.push(`${field}: must be between ${min} and ${max}${unit} (got ${v})`);
  };
  if (s.name.length === 0) out.push('name: is required');
  else if (s.name.length > 191) out.push('name: must be at most 191 characters');
  if (s.templateId.length === 0) out.push('templateId: is required; name a serverless template (isServerless true)');
  const pools = catalog.pools.map((p) => p.id);
  if (s.gpuIds.length === 0) out.push(`gpuIds: is required; a comma list of GPU pools from ${pools.join(', ')}`);
  for (const g of s.gpuIds)
    if (!pools.includes(g)) out.push(`gpuIds: "${g}" is not a GPU pool; valid pools: ${pools.join(', ')}`);
  int('gpuCount', s.gpuCount, 1, MAX_GPU_COUNT);
  // the spec's region options are always accepted (with no data center there, workers wait as throttled)
  const countries = dedupe([...catalog.dataCenters.map((d) => d.country), ...SPEC_LOCATIONS]);
  for (const l of s.locations)
    if (!countries.includes(l))
      out.push(`locations: "${l}" is not a known region; valid: ${countries.join(', ')} (empty means any)`);
  int('idleTimeout', s.idleTimeout, 0, MAX_IDLE_TIMEOUT_S, ' seconds');
  int('scalerValue', s.scalerValue, 1, 1_000_000);
  int('workersMin', s.workersMin, 0, maxWorkers);
  int('workersMax', s.workersMax, 0, maxWorkers);
  if (Number.isInteger(s.workersMin) && Number.isInteger(s.workersMax) && s.workersMax < s.workersMin)
    out.push(`workersMax: must be at least workersMin (${s.workersMin}); got ${s.workersMax}`);
  for (const v of s.allowedCudaVersions)
    if (!CUDA.test(v)) out.push(`allowedCudaVersions: "${v}" must be "<major>.<minor>", e.g. "12.4"`);
  if (s.minCudaVersion !== null && !CUDA.test(s.minCudaVersion))
    out.push(`minCudaVersion: "${s.minCudaVersion}" must be "<major>.<minor>", e.g. "12.4"`);
  int(
    'executionTimeoutMs',
    s.executionTimeoutMs,
    MIN_EXECUTION_TIMEOUT_MS,
    MAX_EXECUTION_TIMEOUT_MS,
    ' ms (5 seconds to 7 days)',
  );
  for (const k of Object.keys(s.env))
    if (!ENV_KEY.test(k))
      out.push(`env: "${k}" is not a valid variable name (letters, digits and "_", not starting with a digit)`);
  return out;
}

/**
 * What an endpoint's workers run, field by field: a change to any of these makes a new release
 * (the others — name, workers min/max, idle timeout, scaler, execution timeout, flashboot — apply
 * to the autoscaler at once and leave running workers current). Template fields are read from the
 * template the endpoint points at.
 */
function releaseSnapshot(e: Settings, template: Template | null): Record<string, unknown> {
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
    allowedCudaVersions: e.allowedCudaVersions,
    minCudaVersion: e.minCudaVersion,
    locations: e.locations,
    networkVolumeId: e.networkVolumeId,
    env: e.env,
  };
}

/** The fields whose JSON differs, in snapshot order; `before` null = every field was added. */
function releaseDiff(before: Record<string, unknown> | null, after: Record<string, unknown>): ReleaseDiffEntry[] {
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
const releaseOf = (releasesNewestFirst: readonly EndpointRelease[], v: number | null): number | null =>
  v === null ? null : (releasesNewestFirst.find((r) => r.version <= v)?.version ?? null);

/** Whether a worker runs an older release than the latest; false when its version is unknown. */
export const isStale = (releasesNewestFirst: readonly EndpointRelease[], w: Pick<EndpointWorker, 'endpointVersion'>) =>
  w.endpointVersion !== null && releasesNewestFirst.length > 0 && w.endpointVersion < releasesNewestFirst[0]!.version;

/** Serverless endpoints: their settings and the rules on them. Workers and jobs live elsewhere. */
export class EndpointsService {
  readonly store: EndpointStore;

  constructor(private readonly deps: EndpointsServiceDeps) {
    this.store = deps.store;
  }

  /** Creates the endpoint and its first release (version 1), in one transaction. */
  async create(accountId: string, input: EndpointInput): Promise<Endpoint> {
    const { settings, template } = await this.#settings(accountId, DEFAULTS, input);
    const now = this.deps.clock.now();
    const endpoint: Endpoint = { id: newId(), accountId, ...settings, createdAt: now, updatedAt: now, version: 1 };
    await this.store.transaction(async (tx) => {
      await this.store.insert(endpoint, tx);
      await this.store.insertRelease(
        this.#release(endpoint, releaseDiff(null, releaseSnapshot(settings, template))),
        tx,
      );
    });
    return endpoint;
  }

  /** The endpoint's releases, newest first, with the workers on each and the rollout of the latest. */
  async releases(accountId: string, id: string): Promise<ReleaseHistory> {
    const endpoint = await this.get(accountId, id);
    const [releases, workers] = await Promise.all([this.store.releases(id), this.store.workers(id)]);
    const live = workers.filter((w) => w.status !== 'dead');
    const counts = new Map<number, number>();
    for (const w of live) {
      const v = releaseOf(releases, w.endpointVersion);
      if (v !== null) counts.set(v, (counts.get(v) ?? 0) + 1);
    }
    const latest = releases[0]?.version ?? endpoint.version;
    const onLatest = live.filter((w) => w.endpointVersion !== null && w.endpointVersion >= latest).length;
    return {
      endpointVersion: endpoint.version,
      rollout: {
        inProgress: live.some((w) => isStale(releases, w)),
        workersOnLatest: onLatest,
        workersTotal: live.length,
        percentOnLatest: live.length === 0 ? 0 : Math.floor((onLatest * 100) / live.length),
      },
      releases: releases.map((r) => ({ ...r, workerCount: counts.get(r.version) ?? 0 })),
    };
  }

  /** The endpoint's live workers with its releases (newest first), for staleness. */
  async workersWithReleases(
    accountId: string,
    id: string,
  ): Promise<{ endpoint: Endpoint; workers: EndpointWorker[]; releases: EndpointRelease[] }> {
    const endpoint = await this.get(accountId, id);
    const [releases, workers] = await Promise.all([this.store.releases(id), this.store.workers(id)]);
    return { endpoint, workers: workers.filter((w) => w.status !== 'dead'), releases };
  }

  #release(endpoint: Endpoint, diff: ReleaseDiffEntry[]): EndpointRelease {
    return {
      id: newId(),
      endpointId: endpoint.id,
      accountId: endpoint.accountId,
      version: endpoint.version,
      source: 'MANUAL',
      diff,
      createdAt: endpoint.updatedAt,
    };
  }

  async list(accountId: string): Promise<Endpoint[]> {
    return this.store.list(accountId);
  }

  /** The caller's endpoint, or 404 NOT_FOUND (also for another account's). */
  async get(accountId: string, id: string): Promise<Endpoint> {
    const endpoint = await this.store.get(accountId, id);
    if (!endpoint) throw notFound('serverless endpoint', id);
    return endpoint;
  }

  /** Full replace (GraphQL `saveEndpoint` with an id): fields not given take their defaults. */
  async replace(accountId: string, id: string, input: EndpointInput): Promise<Endpoint> {
    return this.#change(accountId, id, () => DEFAULTS, input);
  }

  /** Partial update (REST PATCH): only the fields given change. */
  async update(accountId: string, id: string, patch: EndpointInput): Promise<Endpoint> {
    return this.#change(accountId, id, (current) => current, patch);
  }

  /** Refused with 400 ENDPOINT_HAS_WORKERS unless workersMin and workersMax are both 0 (spec 3.2). */
  async delete(accountId: string, id: string): Promise<void> {
    const endpoint = await this.get(accountId, id);
    if (endpoint.workersMin !== 0 || endpoint.workersMax !== 0)
      throw new ApiError(
        'ENDPOINT_HAS_WORKERS',
        `Endpoint "${endpoint.name}" (${id}) still allows workers (workersMin ${endpoint.workersMin}, workersMax ${endpoint.workersMax}); set both to 0 first, then delete it.`,
      );
    if (!(await this.store.delete(accountId, id))) throw notFound('serverless endpoint', id);
    await this.deps.keys?.revokeEndpointKeys(id);
  }

  /** The endpoint's workers (filled by the autoscaler). */
  async workers(accountId: string, id: string): Promise<EndpointWorker[]> {
    await this.get(accountId, id);
    return this.store.workers(id);
  }

  /** The endpoint's template, or null when it has gone (templates bound to endpoints cannot be deleted). */
  async templateOf(endpoint: Endpoint): Promise<Template | null> {
    try {
      return await this.deps.templates.get(endpoint.accountId, endpoint.templateId);
    } catch (err) {
      if (isApiError(err) && err.code === 'NOT_FOUND') return null;
      throw err;
    }
  }

  /** Registered with TemplatesService: a template bound to an endpoint cannot be deleted. */
  readonly templateReferenceChecker: TemplateReferenceChecker = async (templateId, accountId) => {
    const bound = await this.store.boundToTemplate(accountId, templateId);
    if (bound.length === 0) return null;
    const names = bound.map((e) => `"${e.name}" (${e.id})`).join(', ');
    return `used by serverless endpoint${bound.length > 1 ? 's' : ''} ${names}; point ${bound.length > 1 ? 'them' : 'it'} at another template or delete ${bound.length > 1 ? 'them' : 'it'} first`;
  };

  async #change(
    accountId: string,
    id: string,
    base: (current: Endpoint) => Settings,
    input: EndpointInput,
  ): Promise<Endpoint> {
    const current = await this.get(accountId, id);
    const before = releaseSnapshot(current, await this.templateOf(current));
    const { settings, template } = await this.#settings(accountId, base(current), input);
    const next: Endpoint = { ...current, ...settings, updatedAt: this.deps.clock.now(), version: current.version + 1 };
    const diff = releaseDiff(before, releaseSnapshot(settings, template));
    await this.store.transaction(async (tx) => {
      if (!(await this.store.replace(next, current.version, tx)))
        throw new ApiError(
          'CONFLICT',
          `Endpoint "${id}" was changed by another request meanwhile; read it again and retry.`,
        );
      if (diff.length > 0) await this.store.insertRelease(this.#release(next, diff), tx);
    });
    return next;
  }

  async #settings(
    accountId: string,
    base: Settings,
    input: EndpointInput,
  ): Promise<{ settings: Settings; template: Template }> {
    const { settings, problems } = merge(base, input);
    problems.push(...endpointViolations(settings, this.deps.config.catalog, this.deps.maxWorkers ?? 100));
    if (problems.length > 0) throw validationFailed(problems);
    const template = await this.deps.templates.get(accountId, settings.templateId);
    if (!template.isServerless)
      throw new ApiError(
        'NOT_SERVERLESS_TEMPLATE',
        `Template "${template.name}" (${template.id}) is a pod template; an endpoint needs a serverless template (create one with isServerless true).`,
      );
    assertEnvAllowed(this.deps.runtime, settings.env, template.imageName);
    if (settings.networkVolumeId !== null) {
      try {
        await this.deps.volumes.get(accountId, settings.networkVolumeId);
      } catch (err) {
        if (isApiError(err) && err.code === 'NOT_FOUND')
          throw new ApiError(
            'UNKNOWN_REFERENCE',
            `networkVolumeId "${settings.networkVolumeId}" is not a network volume of this account (see GET /v2/network-volumes).`,
          );
        throw err;
      }
    }
    return { settings, template };
  }
}
