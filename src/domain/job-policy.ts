/**
 * Job policy (spec 2.13) and the `wait` parameters of the long-polling job operations
 * (wire-protocol §2). Pure; violations name the field so the HTTP layer can answer 400 with one
 * `errors` entry each.
 */

const SECOND_MS = 1000;
const DAY_MS = 24 * 60 * 60 * SECOND_MS;

const POLICY_BOUNDS = {
  executionTimeout: { min: 5 * SECOND_MS, max: 7 * DAY_MS, default: 600_000 },
  ttl: { min: 10 * SECOND_MS, max: 7 * DAY_MS, default: DAY_MS },
} as const;

/** A job's normalized policy. */
export interface JobPolicy {
  /** Longest a worker may run the job, ms. @default 600000, or the endpoint's default */
  executionTimeout: number;
  /** The job does not trigger worker scaling. @default false */
  lowPriority: boolean;
  /** Total lifespan from submission, ms; the job is deleted when it ends. @default 86400000 */
  ttl: number;
}

export type Normalized<T> = { ok: true; value: T } | { ok: false; violations: string[] };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function boundedInteger(
  value: unknown,
  field: string,
  bounds: { min: number; max: number },
  violations: string[],
): number | null {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    violations.push(`${field} must be an integer number of milliseconds`);
    return null;
  }
  if (value < bounds.min || value > bounds.max) {
    violations.push(`${field} must be between ${bounds.min} and ${bounds.max} ms`);
    return null;
  }
  return value;
}

/**
 * Validates and fills in a request's `policy`. Unknown keys are violations (the request schema
 * rejects unknown properties everywhere else too).
 * @param defaultExecutionTimeout the endpoint's default, itself bounded like the policy field. @default 600000
 */
export function normalizePolicy(
  raw: unknown,
  defaultExecutionTimeout: number = POLICY_BOUNDS.executionTimeout.default,
): Normalized<JobPolicy> {
  const violations: string[] = [];
  const policy: JobPolicy = {
    executionTimeout: Math.min(
      Math.max(defaultExecutionTimeout, POLICY_BOUNDS.executionTimeout.min),
      POLICY_BOUNDS.executionTimeout.max,
    ),
    lowPriority: false,
    ttl: POLICY_BOUNDS.ttl.default,
  };
  if (raw === undefined || raw === null) return { ok: true, value: policy };
  if (!isObject(raw)) return { ok: false, violations: ['policy must be an object'] };
  for (const key of Object.keys(raw)) {
    if (key !== 'executionTimeout' && key !== 'lowPriority' && key !== 'ttl')
      violations.push(`policy.${key} is not a known policy field`);
  }
  if (raw.executionTimeout !== undefined) {
    const v = boundedInteger(
      raw.executionTimeout,
      'policy.executionTimeout',
      POLICY_BOUNDS.executionTimeout,
      violations,
    );
    if (v !== null) policy.executionTimeout = v;
  }
  if (raw.ttl !== undefined) {
    const v = boundedInteger(raw.ttl, 'policy.ttl', POLICY_BOUNDS.ttl, violations);
    if (v !== null) policy.ttl = v;
  }
  if (raw.lowPriority !== undefined) {
    if (typeof raw.lowPriority !== 'boolean') violations.push('policy.lowPriority must be a boolean');
    else policy.lowPriority = raw.lowPriority;
  }
  return violations.length ? { ok: false, violations } : { ok: true, value: policy };
}

/** The fields of a job's `s3Config` (spec 2.12) and the longest string each may be. */
const S3_CONFIG_FIELDS = { accessId: 256, accessSecret: 1024, bucketName: 255, endpointUrl: 2048 } as const;

/**
 * Violations of a request's `s3Config`: an object whose known fields are strings of bounded
 * length (null or absent: not set). Other keys pass through to the worker untouched, as the spec
 * only names these four. Messages name the field, never its value: `accessSecret` is a credential.
 */
export function s3ConfigViolations(raw: unknown): string[] {
  if (raw === undefined || raw === null) return [];
  if (!isObject(raw)) return ['s3Config must be an object'];
  const violations: string[] = [];
  for (const [field, max] of Object.entries(S3_CONFIG_FIELDS)) {
    const value = raw[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') violations.push(`s3Config.${field} must be a string`);
    else if (value.length > max) violations.push(`s3Config.${field} must be at most ${max} characters`);
  }
  return violations;
}

export interface WaitBounds {
  min: number;
  max: number;
  default: number;
}

/** `/runsync?wait=`: 1 s..300 s, default 90 s. */
export const RUNSYNC_WAIT: WaitBounds = { min: 1000, max: 300_000, default: 90_000 };
/** `/status-sync/{id}?wait=`: same bounds as runsync. */
export const STATUS_SYNC_WAIT: WaitBounds = { ...RUNSYNC_WAIT };
/** `/stream/{id}?wait=`: waits while nothing is buffered; 0 answers at once. */
export const STREAM_WAIT: WaitBounds = { min: 0, max: 300_000, default: 10_000 };

/**
 * Normalizes a `wait` query parameter (string from the URL, or a number). Absent → the default;
 * out of range → clamped into the bounds (clients send their own timeouts; clamping serves them
 * better than a 400); not a number → a violation.
 */
export function normalizeWait(raw: unknown, bounds: WaitBounds, field = 'wait'): Normalized<number> {
  if (raw === undefined || raw === null || raw === '') return { ok: true, value: bounds.default };
  const n = typeof raw === 'string' ? Number(raw.trim()) : raw;
  if (typeof n !== 'number' || !Number.isFinite(n))
    return { ok: false, violations: [`${field} must be a number of milliseconds`] };
  return { ok: true, value: Math.min(Math.max(Math.round(n), bounds.min), bounds.max) };
}
