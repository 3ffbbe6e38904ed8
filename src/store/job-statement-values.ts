/**
 * What each job statement binds: its slots, in the order its text binds them (`…_SLOTS`), and the
 * builder of its values from a call's arguments (`…Values`), answering them in that order.
 * `compileStatement` checks each order against the compiled text (`job-statements.ts`).
 */
import { sql } from 'kysely';
import type { JobResultStatus, JobStatus } from '../domain/job-state.js';
import type { WebhookDeliveryStatus } from '../domain/webhook-delivery.js';
import { receiverKey } from '../domain/webhook-url.js';
import type { SlotValues } from './compiled-statement.js';
import type { NewJob, WorkerResult } from './job-record.js';
import type { JobRetention } from './job-retention.js';

/** A new job's columns, as bound: every column a submission sets (the rest start at their default). */
export interface NewJobArgs {
  id: string;
  endpoint_id: string;
  account_id: string;
  seq: number;
  input: string;
  webhook: string | null;
  s3_config: string | null;
  execution_timeout_ms: number;
  low_priority: number;
  ttl_ms: number;
  sync: number;
  created_at: number;
  queued_at: number;
  expires_at: number;
}

/** The new job insert's slots: the columns of `NewJobArgs`, in the order both its forms bind them. */
export const NEW_JOB_SLOTS = [
  'id',
  'endpoint_id',
  'account_id',
  'seq',
  'input',
  'webhook',
  's3_config',
  'execution_timeout_ms',
  'low_priority',
  'ttl_ms',
  'sync',
  'created_at',
  'queued_at',
  'expires_at',
] as const satisfies ReadonlyArray<keyof NewJobArgs>;

/** The columns of `NewJobArgs` with their PostgreSQL types (for the column-array insert). */
export const NEW_JOB_TYPES: Record<keyof NewJobArgs, string> = {
  id: 'text',
  endpoint_id: 'text',
  account_id: 'text',
  seq: 'bigint',
  input: 'text',
  webhook: 'text',
  s3_config: 'text',
  execution_timeout_ms: 'bigint',
  low_priority: 'int',
  ttl_ms: 'bigint',
  sync: 'int',
  created_at: 'bigint',
  queued_at: 'bigint',
  expires_at: 'bigint',
};

export type NewJobValues = SlotValues<NewJobArgs, typeof NEW_JOB_SLOTS>;

/** A submission as the columns it writes: IN_QUEUE since its creation, expiring after its ttl. */
export const newJobValues = (j: NewJob): NewJobValues => [
  j.id,
  j.endpointId,
  j.accountId,
  j.seq,
  j.inputJson,
  j.webhook,
  j.s3ConfigJson,
  j.policy.executionTimeout,
  j.policy.lowPriority ? 1 : 0,
  j.policy.ttl,
  j.sync ? 1 : 0,
  j.createdAt,
  j.createdAt,
  j.createdAt + j.policy.ttl,
];

/** What every new job starts with: queued, never retried, no stop request. */
export const SUBMITTED = { status: 'IN_QUEUE' satisfies JobStatus, retries: 0, stop_requested: 0 } as const;
export const SUBMITTED_COLUMNS = Object.keys(SUBMITTED).map((c) => sql.ref(c));
export const SUBMITTED_VALUES = Object.values(SUBMITTED).map((v) => sql.lit(v));

/** Per slot of the new job insert, the values of a batch of new jobs (the column-array insert's values). */
type ColumnsOf<T extends readonly unknown[]> = { -readonly [I in keyof T]: Array<T[I]> };
export type NewJobColumns = ColumnsOf<NewJobValues>;

export const newJobColumns = (jobs: readonly NewJob[]): NewJobColumns => {
  const rows = jobs.map(newJobValues);
  return NEW_JOB_SLOTS.map((_, k) => rows.map((r) => r[k])) as unknown as NewJobColumns;
};

/** An outbox row's values, by slot. */
export interface WebhookArgs {
  id: string;
  job_id: string;
  url: string;
  payload: string;
  account_id: string;
  receiver: string;
  now: number;
}

/** The outbox insert's slots, in the order `webhookRow` binds them. */
export const WEBHOOK_SLOTS = [
  'id',
  'job_id',
  'url',
  'payload',
  'now',
  'now',
  'account_id',
  'receiver',
] as const satisfies ReadonlyArray<keyof WebhookArgs>;

export type WebhookValues = SlotValues<WebhookArgs, typeof WEBHOOK_SLOTS>;

interface WebhookCall {
  id: string;
  jobId: string;
  url: string;
  payloadJson: string;
  accountId?: string;
}

export const webhookArgs = (d: WebhookCall, now: number): WebhookArgs => ({
  id: d.id,
  job_id: d.jobId,
  url: d.url,
  payload: d.payloadJson,
  account_id: d.accountId ?? '',
  receiver: receiverKey(d.url),
  now,
});

/** `webhookArgs` as the outbox insert's values. */
export const webhookValues = (d: WebhookCall, now: number): WebhookValues => [
  d.id,
  d.jobId,
  d.url,
  d.payloadJson,
  now,
  now,
  d.accountId ?? '',
  receiverKey(d.url),
];

/** A webhook call due now, never tried. */
export const webhookRow = (a: WebhookArgs) => ({
  id: a.id,
  job_id: a.job_id,
  url: a.url,
  payload: a.payload,
  attempts: sql.lit(0),
  next_attempt_at: a.now,
  status: sql.lit<WebhookDeliveryStatus>('PENDING'),
  last_error: sql.lit(null),
  created_at: a.now,
  account_id: a.account_id,
  receiver: a.receiver,
});

/** What a batch of new jobs adds to an account's quota counters (migration 0017: SQLite only). */
interface UsageArgs {
  account_id: string;
  queued: number;
  bytes: number;
}
export const USAGE_SLOTS = ['account_id', 'queued', 'bytes'] as const satisfies ReadonlyArray<keyof UsageArgs>;
export type UsageValues = SlotValues<UsageArgs, typeof USAGE_SLOTS>;

/**
 * Per account, the queued jobs and stored bytes a batch of new jobs adds: each is IN_QUEUE and
 * stores its input (UTF-8 bytes, as `octet_length` counts them; output and error start empty).
 */
export function usageValues(jobs: readonly NewJob[]): UsageValues[] {
  if (jobs.length === 1) return [[jobs[0]!.accountId, 1, Buffer.byteLength(jobs[0]!.inputJson)]];
  const by = new Map<string, UsageValues>();
  for (const j of jobs) {
    const u = by.get(j.accountId);
    if (u) {
      u[1]++;
      u[2] += Buffer.byteLength(j.inputJson);
    } else by.set(j.accountId, [j.accountId, 1, Buffer.byteLength(j.inputJson)]);
  }
  return [...by.values()];
}

interface HeadArgs {
  endpointId: string;
  now: number;
  limit: number;
}
export const HEAD_SLOTS = ['endpointId', 'now', 'limit'] as const satisfies ReadonlyArray<keyof HeadArgs>;
export type HeadValues = SlotValues<HeadArgs, typeof HEAD_SLOTS>;

interface ClaimArgs {
  id: string;
  workerId: string;
  now: number;
  takenSeq: number;
}
/** `takenBy` binds the worker, `now` three times and the take's order, then the guard the id. */
export const CLAIM_SLOTS = ['workerId', 'now', 'now', 'now', 'takenSeq', 'id'] as const satisfies ReadonlyArray<
  keyof ClaimArgs
>;
export type ClaimValues = SlotValues<ClaimArgs, typeof CLAIM_SLOTS>;

/** A take of job `id` by `workerId` at `now`, `takenSeq` in the order of takes, as the claim statement binds it. */
export const claimValues = (id: string, workerId: string, now: number, takenSeq: number): ClaimValues => [
  workerId,
  now,
  now,
  now,
  takenSeq,
  id,
];

interface FinishArgs {
  id: string;
  workerId: string;
  endpointId: string | null;
  status: JobResultStatus;
  output: string | null;
  error: string | null;
  now: number;
  runsyncUntil: number;
  runUntil: number;
}
/** The finish statement's slots: what it sets, then its guard. */
export const FINISH_SLOTS = [
  'status',
  'output',
  'error',
  'now',
  'now',
  'runsyncUntil',
  'runUntil',
  'id',
  'workerId',
  'endpointId',
] as const satisfies ReadonlyArray<keyof FinishArgs>;
export type FinishValues = SlotValues<FinishArgs, typeof FINISH_SLOTS>;

interface ProgressArgs {
  id: string;
  workerId: string;
  endpointId: string | null;
  output: string | null;
}
export const PROGRESS_SLOTS = ['output', 'id', 'workerId', 'endpointId'] as const satisfies ReadonlyArray<
  keyof ProgressArgs
>;
export type ProgressValues = SlotValues<ProgressArgs, typeof PROGRESS_SLOTS>;

/** A worker's first result for a job, as the finish statement binds it. */
export const finishValues = (p: WorkerResult, now: number, retention: JobRetention): FinishValues => [
  p.status === 'FAILED' ? 'FAILED' : 'COMPLETED',
  p.status === 'COMPLETED' ? p.outputJson : null,
  p.status === 'FAILED' ? p.error : null,
  now,
  now,
  now + retention.runsyncMs,
  now + retention.runMs,
  p.id,
  p.workerId,
  p.endpointId ?? null,
];

export const progressValues = (p: WorkerResult): ProgressValues => [
  p.outputJson,
  p.id,
  p.workerId,
  p.endpointId ?? null,
];
