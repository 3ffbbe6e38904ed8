/**
 * The job hot path's statements, each defined once from the state machine's status sets
 * (`changesFrom`) and the retention rule, compiled once per database, and run by either executor:
 *
 * - the asynchronous one (`runAsync`): Kysely runs the compiled text with the call's values, in a
 *   transaction or on the pool — any dialect;
 * - the synchronous one (`prepareSync`): SQLite prepares the compiled text once (the connection
 *   caches it) and rebinds it per row inside one synchronous transaction (`Db.syncTransaction`).
 *
 * A statement's per-call values are named slots (`slot`); its constants are bound from the
 * compiled parameters, and the statuses of its guards are SQL literals, so SQLite can match them
 * to the partial indexes on `status`.
 */
import { CompiledQuery, sql, type Compilable, type Expression, type Kysely, type SqlBool } from 'kysely';
import type SqliteDatabase from 'better-sqlite3';
import { changesFrom, type JobEventType, type JobResultStatus, type JobStatus } from '../domain/job-state.js';
import type { WebhookDeliveryStatus } from '../domain/webhook-delivery.js';
import { receiverKey } from '../domain/webhook-url.js';
import type { Db, Executor } from './database.js';
import type { NewJob, WorkerResult } from './job-record.js';
import { retainUntilOf, type JobRetention } from './job-retention.js';
import { big } from './job-sql.js';
import { TAKE_ORDER_NEXT } from './take-order.js';
import type { Database, JobsTable } from './schema.js';

const SLOT = '\u0000slot:';

/** A value bound per call: the named placeholder of a statement compiled once. */
export const slot = <T>(name: string): T => `${SLOT}${name}` as T;

/** Every key of `A` as its own slot. */
function slotsOf<A extends object>(keys: ReadonlyArray<Extract<keyof A, string>>): A {
  return Object.fromEntries(keys.map((k) => [k, slot(k)])) as A;
}

/**
 * A statement's values in the order of its declared slots (a name may repeat: the text binds it
 * again). The argument builders answer these tuples, which bind positionally as they are.
 */
type SlotValues<A, S extends ReadonlyArray<keyof A>> = { -readonly [I in keyof S]: A[S[I]] };

/** A statement's compiled text; its values are the tuple of its declared slots, in order. */
export interface CompiledStatement<V extends readonly unknown[]> {
  readonly sql: string;
  /** The slots the text binds, in order (as declared, and checked against the compiled text). */
  readonly slots: readonly string[];
  /** Phantom: the values' tuple type. */
  readonly values?: V;
}

/**
 * Compiles `query` and checks that its parameters are exactly the declared `slots`, in order: no
 * constant bound as a parameter (constants are SQL literals), no slot missing, moved or extra. A
 * statement whose declaration disagrees with its text fails when it compiles, not when a row binds
 * the wrong value.
 */
export function compileStatement<V extends readonly unknown[]>(
  query: Compilable,
  slots: readonly string[],
): CompiledStatement<V> {
  const compiled = query.compile();
  const bound = compiled.parameters.map((p) =>
    typeof p === 'string' && p.startsWith(SLOT) ? p.slice(SLOT.length) : `constant ${JSON.stringify(p)}`,
  );
  if (bound.length !== slots.length || bound.some((b, i) => b !== slots[i]))
    throw new Error(
      `statement binds [${bound.join(', ')}] but declares [${slots.join(', ')}]: ${compiled.sql.slice(0, 80)}`,
    );
  return { sql: compiled.sql, slots };
}

/** The asynchronous executor: Kysely runs the compiled text with `values`. */
export async function runAsync<V extends readonly unknown[], R = JobsTable>(
  tx: Executor,
  s: CompiledStatement<V>,
  values: V,
): Promise<R[]> {
  return (await tx.executeQuery<R>(CompiledQuery.raw(s.sql, values as unknown as unknown[]))).rows;
}

/** The synchronous executor (SQLite): the compiled text prepared on `raw`, rebound per call. */
export function prepareSync<V extends readonly unknown[], R = JobsTable>(
  raw: SqliteDatabase.Database,
  s: CompiledStatement<V>,
): { get(values: V): R | undefined; all(values: V): R[]; run(values: V): void } {
  // `raw.prepare` answers from the connection's statement cache (see `Db.syncTransaction`)
  const stmt = raw.prepare<unknown[], R>(s.sql);
  return {
    get: (values) => stmt.get(...values),
    all: (values) => stmt.all(...values),
    run: (values) => void stmt.run(...values),
  };
}

// ── shared pieces ──────────────────────────────────────────────────────────────────────────────

/** The guard of a set-based update: the job is in one of the statuses `event` changes. */
export function statusGuard(event: JobEventType): Expression<SqlBool> {
  const from = changesFrom(event);
  // one status as `=`: SQLite matches it to a partial index `WHERE status = '…'`, `IN (…)` it does not
  if (from.length === 1) return sql<SqlBool>`status = ${sql.lit(from[0]!)}`;
  return sql<SqlBool>`status IN (${sql.join(from.map((s) => sql.lit(s)))})`;
}

/**
 * What a take writes: IN_PROGRESS on `workerId`, started `now`, delay measured, deadline set, and
 * the take's place in the order of takes (`take-order.ts`).
 */
export const takenBy = (workerId: string | Expression<string>, now: number, takenSeq: number) =>
  ({
    status: sql.lit<JobStatus>('IN_PROGRESS'),
    worker_id: workerId,
    started_at: big(now),
    delay_ms: sql<number>`${big(now)} - queued_at`,
    timeout_at: sql<number>`${big(now)} + execution_timeout_ms`,
    output: sql.lit(null),
    error: sql.lit(null),
    taken_seq: big(takenSeq),
  }) as const;

/** What a worker's result writes (status, output, error given per post). */
export const finishedAt = (now: number, retainUntil: Expression<number>) =>
  ({
    completed_at: big(now),
    execution_ms: sql<number>`${big(now)} - started_at`,
    retain_until: retainUntil,
    timeout_at: sql.lit(null),
  }) as const;

/**
 * "Held by this worker, through this endpoint": the guard of a worker's post besides its status.
 * `endpointId` null accepts any endpoint.
 */
export const heldBy = (workerId: Expression<string> | string, endpointId: Expression<string | null> | string | null) =>
  sql<SqlBool>`worker_id = ${workerId} AND endpoint_id = coalesce(${endpointId}, endpoint_id)`;

// ── the statements ─────────────────────────────────────────────────────────────────────────────
//
// Each statement declares its slots in the order its text binds them (`…_SLOTS`); its argument
// builder answers the values in that order (`…Values`), and `compileStatement` checks the order
// against the compiled text on every database it compiles for.

/** A new job's columns, as bound: every column a submission sets (the rest start at their default). */
interface NewJobArgs {
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
const NEW_JOB_SLOTS = [
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
const NEW_JOB_TYPES: Record<keyof NewJobArgs, string> = {
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
const SUBMITTED = { status: 'IN_QUEUE' satisfies JobStatus, retries: 0, stop_requested: 0 } as const;
const SUBMITTED_COLUMNS = Object.keys(SUBMITTED).map((c) => sql.ref(c));
const SUBMITTED_VALUES = Object.values(SUBMITTED).map((v) => sql.lit(v));

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
const WEBHOOK_SLOTS = [
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
const USAGE_SLOTS = ['account_id', 'queued', 'bytes'] as const satisfies ReadonlyArray<keyof UsageArgs>;
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
const HEAD_SLOTS = ['endpointId', 'now', 'limit'] as const satisfies ReadonlyArray<keyof HeadArgs>;
export type HeadValues = SlotValues<HeadArgs, typeof HEAD_SLOTS>;

interface ClaimArgs {
  id: string;
  workerId: string;
  now: number;
  takenSeq: number;
}
/** `takenBy` binds the worker, `now` three times and the take's order, then the guard the id. */
const CLAIM_SLOTS = ['workerId', 'now', 'now', 'now', 'takenSeq', 'id'] as const satisfies ReadonlyArray<
  keyof ClaimArgs
>;
type ClaimValues = SlotValues<ClaimArgs, typeof CLAIM_SLOTS>;

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
const PROGRESS_SLOTS = ['output', 'id', 'workerId', 'endpointId'] as const satisfies ReadonlyArray<keyof ProgressArgs>;
type ProgressValues = SlotValues<ProgressArgs, typeof PROGRESS_SLOTS>;

/** Where each slot of `slots` first sits in their values. */
export function slotIndex<S extends readonly string[]>(slots: S): Record<S[number], number> {
  const at: Record<string, number> = {};
  slots.forEach((name, i) => (at[name] ??= i));
  return at;
}

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

/** The row-at-a-time job statements of one database, compiled for its dialect. */
export interface JobStatements {
  /** One new job, IN_QUEUE. */
  insert: CompiledStatement<NewJobValues>;
  /** Many new jobs at once from column arrays (PostgreSQL only: `unnest`); null elsewhere. */
  insertColumns: CompiledStatement<NewJobColumns> | null;
  /**
   * The ids at the head of an endpoint's queue: takeable, unexpired, FIFO. Where takes are ordered
   * by the database's sequence (not in process), each row also carries `taken_seq`: one new value
   * of it per statement, for the take that claims these rows.
   */
  head: CompiledStatement<HeadValues>;
  /** Takes one job for a worker, if still takeable. */
  claim: CompiledStatement<ClaimValues>;
  /** A worker's result: COMPLETED or FAILED, if the job is running on that worker. */
  finish: CompiledStatement<FinishValues>;
  /** A worker's progress: replaces the visible output, if the job is running on that worker. */
  progress: CompiledStatement<ProgressValues>;
  /** One outbox row. */
  webhook: CompiledStatement<WebhookValues>;
  /**
   * Adds a batch's new jobs to an account's quota counters, in the transaction that inserted them
   * (SQLite, which has no statement triggers: migration 0017); null where a trigger counts them.
   */
  usage: CompiledStatement<UsageValues> | null;
}

function compileJobStatements(db: Pick<Db, 'kysely' | 'capabilities'>): JobStatements {
  const k: Kysely<Database> = db.kysely;
  const head = k
    .selectFrom('jobs')
    .select('id')
    .$if(!db.capabilities.inProcess, (q) => q.select(TAKE_ORDER_NEXT.as('taken_seq')))
    .where('endpoint_id', '=', slot<string>('endpointId'))
    .where(statusGuard('take'))
    .where('expires_at', '>', big(slot<number>('now')))
    .orderBy('seq')
    .limit(slot<number>('limit'));
  const cols = NEW_JOB_SLOTS.map((c) => sql.ref(c));
  const insertColumns = db.capabilities.inProcess
    ? null
    : compileStatement<NewJobColumns>(
        {
          compile: () =>
            sql`INSERT INTO jobs (${sql.join(SUBMITTED_COLUMNS)}, ${sql.join(cols)})
          SELECT ${sql.join(SUBMITTED_VALUES)}, ${sql.join(cols)}
          FROM unnest(${sql.join(NEW_JOB_SLOTS.map((c) => sql`${slot(c)}::${sql.raw(NEW_JOB_TYPES[c])}[]`))})
          AS t(${sql.join(cols)})`.compile(k),
        },
        NEW_JOB_SLOTS,
      );
  const usage = db.capabilities.inProcess
    ? compileStatement<UsageValues>(
        k
          .insertInto('job_usage')
          .values({
            account_id: slot<string>('account_id'),
            shard: sql.lit(0),
            queued_jobs: slot<number>('queued'),
            stored_bytes: slot<number>('bytes'),
          })
          .onConflict((oc) =>
            oc.columns(['account_id', 'shard']).doUpdateSet({
              queued_jobs: sql<number>`job_usage.queued_jobs + excluded.queued_jobs`,
              stored_bytes: sql<number>`job_usage.stored_bytes + excluded.stored_bytes`,
            }),
          ),
        USAGE_SLOTS,
      )
    : null;
  return {
    usage,
    insert: compileStatement(
      k.insertInto('jobs').values({
        ...slotsOf<NewJobArgs>(NEW_JOB_SLOTS),
        status: sql.lit(SUBMITTED.status),
        retries: sql.lit(SUBMITTED.retries),
        stop_requested: sql.lit(SUBMITTED.stop_requested),
      }),
      NEW_JOB_SLOTS,
    ),
    insertColumns,
    head: compileStatement(db.capabilities.skipLocked ? head.forUpdate().skipLocked() : head, HEAD_SLOTS),
    claim: compileStatement(
      k
        .updateTable('jobs')
        .set(takenBy(slot('workerId'), slot('now'), slot('takenSeq')))
        .where('id', '=', slot<string>('id'))
        .where(statusGuard('take'))
        .returningAll(),
      CLAIM_SLOTS,
    ),
    finish: compileStatement(
      k
        .updateTable('jobs')
        .set({
          status: slot<JobStatus>('status'),
          output: slot<string | null>('output'),
          error: slot<string | null>('error'),
          ...finishedAt(slot('now'), retainUntilOf(big(slot('runsyncUntil')), big(slot('runUntil')))),
        })
        .where('id', '=', slot<string>('id'))
        .where(statusGuard('complete'))
        .where(heldBy(slot('workerId'), slot('endpointId')))
        .returningAll(),
      FINISH_SLOTS,
    ),
    progress: compileStatement(
      k
        .updateTable('jobs')
        .set({ output: slot<string | null>('output') })
        .where('id', '=', slot<string>('id'))
        .where(statusGuard('progress'))
        .where(heldBy(slot('workerId'), slot('endpointId')))
        .returningAll(),
      PROGRESS_SLOTS,
    ),
    webhook: compileStatement(
      k
        .insertInto('webhook_deliveries')
        .values(webhookRow(slotsOf<WebhookArgs>(['id', 'job_id', 'url', 'payload', 'account_id', 'receiver', 'now']))),
      WEBHOOK_SLOTS,
    ),
  };
}

const compiled = new WeakMap<Kysely<Database>, JobStatements>();

/** The job statements of `db`, compiled on first use. */
export function jobStatements(db: Pick<Db, 'kysely' | 'capabilities'>): JobStatements {
  let s = compiled.get(db.kysely);
  if (!s) compiled.set(db.kysely, (s = compileJobStatements(db)));
  return s;
}
