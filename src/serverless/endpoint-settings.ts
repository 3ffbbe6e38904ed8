/**
 * An endpoint's settings as a transport hands them over, their defaults, and the rules on them
 * that need no I/O (the endpoints service checks the references: template, network volume).
 */
import type { Catalog } from '../domain/catalog.js';
import { parseCpuInstanceId } from '../domain/endpoint-compute.js';
import { ENDPOINT_TYPES, SCALER_TYPES, type Endpoint, type EndpointType, type ScalerType } from '../domain/endpoint.js';

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
  /** Comma list or array of GPU pools. Required on create, unless `instanceIds` makes it a CPU endpoint. */
  gpuIds?: string | string[] | null;
  /** @default 1 */
  gpuCount?: number | null;
  /** Comma list or array of CPU instance ids (`cpu3g-4-16`): a CPU endpoint. @default [] (a GPU endpoint) */
  instanceIds?: string | string[] | null;
  /** Comma list or array of country codes or data-center ids; empty = any. @default [] */
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
  /** FlashBoot: seconds an idle worker is kept suspended (within the operator's maximum). @default 600 */
  flashBootKeepSeconds?: number | null;
  /** Comma list or array of `major.minor`. @default [] */
  allowedCudaVersions?: string | string[] | null;
  /** Lowest host CUDA version, `major.minor`. @default null (no bound) */
  minCudaVersion?: string | null;
  /** @default 600000 */
  executionTimeoutMs?: number | null;
  /** @default {} */
  env?: Record<string, string> | null;
}

/** An endpoint's settings: what create, replace and update decide. */
export type EndpointSettings = Omit<Endpoint, 'id' | 'accountId' | 'createdAt' | 'updatedAt' | 'version'>;

/** What a field not given (or reset with null) takes. */
export const ENDPOINT_DEFAULTS: EndpointSettings = {
  name: '',
  templateId: '',
  type: 'QB',
  gpuIds: [],
  gpuCount: 1,
  instanceIds: [],
  locations: [],
  networkVolumeId: null,
  idleTimeout: 5,
  scalerType: 'QUEUE_DELAY',
  scalerValue: 4,
  workersMin: 0,
  workersMax: 3,
  flashboot: false,
  flashBootKeepSeconds: 600,
  allowedCudaVersions: [],
  minCudaVersion: null,
  executionTimeoutMs: 600_000,
  env: {},
};

const MIN_EXECUTION_TIMEOUT_MS = 5_000;
const MAX_EXECUTION_TIMEOUT_MS = 7 * 24 * 3600 * 1000;
const MAX_IDLE_TIMEOUT_S = 3600;
const MAX_GPU_COUNT = 16;
/** A day: a suspended worker holds its GPUs; the operator's `maxKeepMs` bounds it further at use. */
const MAX_FLASHBOOT_KEEP_S = 86_400;
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
export function mergeEndpointSettings(
  base: EndpointSettings,
  input: EndpointInput,
): { settings: EndpointSettings; problems: string[] } {
  const problems: string[] = [];
  const s: EndpointSettings = { ...base };
  const pick = <K extends keyof EndpointInput>(k: K): EndpointInput[K] | undefined => input[k];
  const has = (k: keyof EndpointInput): boolean => input[k] !== undefined;
  const isNull = (k: keyof EndpointInput): boolean => input[k] === null;

  if (has('name')) s.name = isNull('name') ? ENDPOINT_DEFAULTS.name : String(pick('name')).trim();
  if (has('templateId'))
    s.templateId = isNull('templateId') ? ENDPOINT_DEFAULTS.templateId : String(pick('templateId')).trim();
  if (has('type')) {
    const raw = pick('type');
    if (raw === null || raw === '') s.type = ENDPOINT_DEFAULTS.type;
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
    s.gpuIds = isNull('gpuIds')
      ? ENDPOINT_DEFAULTS.gpuIds
      : dedupe(splitList(pick('gpuIds')!).map((g) => g.toUpperCase()));
  if (has('instanceIds'))
    s.instanceIds = isNull('instanceIds') ? ENDPOINT_DEFAULTS.instanceIds : dedupe(splitList(pick('instanceIds')!));
  if (has('locations'))
    s.locations = isNull('locations')
      ? ENDPOINT_DEFAULTS.locations
      : dedupe(splitList(pick('locations')!).map((l) => l.toUpperCase()));
  if (has('allowedCudaVersions'))
    s.allowedCudaVersions = isNull('allowedCudaVersions')
      ? ENDPOINT_DEFAULTS.allowedCudaVersions
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
    if (raw === null || raw === '') s.scalerType = ENDPOINT_DEFAULTS.scalerType;
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
    'flashBootKeepSeconds',
  ] as const) {
    if (has(k)) s[k] = isNull(k) ? ENDPOINT_DEFAULTS[k] : (pick(k) as number);
  }
  if (has('flashboot')) s.flashboot = isNull('flashboot') ? ENDPOINT_DEFAULTS.flashboot : pick('flashboot') === true;
  if (has('env')) s.env = isNull('env') ? ENDPOINT_DEFAULTS.env : { ...pick('env')! };
  return { settings: s, problems };
}

/** The region options of spec 2.11's `locations`. */
const SPEC_LOCATIONS = ['CZ', 'FR', 'GB', 'NO', 'RO', 'US'];

/**
 * The rules of an endpoint's settings that need no I/O, one entry per violation, each naming the
 * field and what would be valid.
 */
export function endpointViolations(
  s: EndpointSettings,
  catalog: Pick<Catalog, 'pools' | 'dataCenters' | 'cpuFlavors'>,
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
  const cpu = s.instanceIds.length > 0;
  if (cpu && s.gpuIds.length > 0)
    out.push('instanceIds: an endpoint runs on CPU instances or on GPU pools (gpuIds), not both; send one of them');
  if (!cpu && s.gpuIds.length === 0)
    out.push(
      `gpuIds: is required; a comma list of GPU pools from ${pools.join(', ')} (or instanceIds, CPU instances, for a CPU endpoint)`,
    );
  for (const g of s.gpuIds)
    if (!pools.includes(g)) out.push(`gpuIds: "${g}" is not a GPU pool; valid pools: ${pools.join(', ')}`);
  for (const id of s.instanceIds) {
    const instance = parseCpuInstanceId(id, catalog.cpuFlavors);
    if (typeof instance === 'string') out.push(`instanceIds: ${instance}`);
  }
  if (cpu && (s.allowedCudaVersions.length > 0 || s.minCudaVersion !== null))
    out.push(
      'allowedCudaVersions: CUDA constraints apply to GPU endpoints only; a CPU endpoint (instanceIds) takes none',
    );
  int('gpuCount', s.gpuCount, 1, MAX_GPU_COUNT);
  // the spec's region options are always accepted (with no data center there, workers wait as
  // throttled), and so are the catalog's data centers by id (runpodctl's --data-center-ids)
  const countries = dedupe([...catalog.dataCenters.map((d) => d.country), ...SPEC_LOCATIONS]);
  const dataCenters = catalog.dataCenters.map((d) => d.id.toUpperCase());
  for (const l of s.locations)
    if (!countries.includes(l) && !dataCenters.includes(l))
      out.push(
        `locations: "${l}" is not a known region or data center; valid: ${countries.join(', ')}, or a data center id (${dataCenters.join(', ')}); empty means any`,
      );
  int('idleTimeout', s.idleTimeout, 0, MAX_IDLE_TIMEOUT_S, ' seconds');
  int('flashBootKeepSeconds', s.flashBootKeepSeconds, 0, MAX_FLASHBOOT_KEEP_S, ' seconds (a day)');
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
