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
import { changesFrom, type JobEventType, type JobStatus } from '../domain/job-state.js';
import { receiverKey } from '../domain/webhook-url.js';
import type { Db, Executor } from './database.js';
import type { NewJob, WorkerResult } from './job-record.js';
import { retainUntilOf, type JobRetention } from './job-retention.js';
import { big } from './job-sql.js';
import type { Database, JobsTable } from './schema.js';

const SLOT = '\u0000slot:';

/** A value bound per call: the named placeholder of a statement compiled once. */
const slot = <T>(name: string): T => `${SLOT}${name}` as T;

/** Every key of `A` as its own slot. */
function slotsOf<A extends object>(keys: ReadonlyArray<Extract<keyof A, string>>): A {
  return Object.fromEntries(keys.map((k) => [k, slot(k)])) as A;
}

/** A statement's compiled text and how a call's values bind to it, in order. */
export interface CompiledStatement<A> {
  readonly sql: string;
  bind(args: A): unknown[];
}

function compileStatement<A>(query: Compilable): CompiledStatement<A> {
  const compiled = query.compile();
  const n = compiled.parameters.length;
  // per parameter: the slot it takes its value from, or null for a constant of the statement
  const names = compiled.parameters.map((p) =>
    typeof p === 'string' && p.startsWith(SLOT) ? (p.slice(SLOT.length) as keyof A) : null,
  );
  const constants = compiled.parameters.map((p, i) => (names[i] === null ? p : undefined));
  return {
    sql: compiled.sql,
    bind(args) {
      const values = new Array<unknown>(n);
      for (let i = 0; i < n; i++) {
        const name = names[i];
        values[i] = name === null ? constants[i] : args[name!];
      }
      return values;
    },
  };
}

/** The asynchronous executor: Kysely runs the compiled text with `args`. */
export async function runAsync<A, R = JobsTable>(tx: Executor, s: CompiledStatement<A>, args: A): Promise<R[]> {
  return (await tx.executeQuery<R>(CompiledQuery.raw(s.sql, s.bind(args)))).rows;
}

/** The synchronous executor (SQLite): the compiled text prepared on `raw`, rebound per call. */
export function prepareSync<A, R = JobsTable>(
  raw: SqliteDatabase.Database,
  s: CompiledStatement<A>,
): { get(args: A): R | undefined; all(args: A): R[]; run(args: A): void } {
  // `raw.prepare` answers from the connection's statement cache (see `Db.syncTransaction`)
  const stmt = raw.prepare<unknown[], R>(s.sql);
  return {
    get: (args) => stmt.get(...s.bind(args)),
    all: (args) => stmt.all(...s.bind(args)),
    run: (args) => void stmt.run(...s.bind(args)),
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

/** What a take writes: IN_PROGRESS on `workerId`, started `now`, delay measured, deadline set. */
export const takenBy = (workerId: string | Expression<string>, now: number) =>
  ({
    status: sql.lit<JobStatus>('IN_PROGRESS'),
    worker_id: workerId,
    started_at: big(now),
    delay_ms: sql<number>`${big(now)} - queued_at`,
    timeout_at: sql<number>`${big(now)} + execution_timeout_ms`,
    output: null,
    error: null,
  }) as const;

/** What a worker's result writes (status, output, error given per post). */
export const finishedAt = (now: number, retainUntil: Expression<number>) =>
  ({
    completed_at: big(now),
    execution_ms: sql<number>`${big(now)} - started_at`,
    retain_until: retainUntil,
    timeout_at: null,
  }) as const;

/**
 * "Held by this worker, through this endpoint": the guard of a worker's post besides its status.
 * `endpointId` null accepts any endpoint.
 */
export const heldBy = (workerId: Expression<string> | string, endpointId: Expression<string | null> | string | null) =>
  sql<SqlBool>`worker_id = ${workerId} AND endpoint_id = coalesce(${endpointId}, endpoint_id)`;

// ── the statements ─────────────────────────────────────────────────────────────────────────────

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

/** The columns of `NewJobArgs` with their PostgreSQL types (for the column-array insert). */
const NEW_JOB_COLUMNS: ReadonlyArray<[keyof NewJobArgs, string]> = [
  ['id', 'text'],
  ['endpoint_id', 'text'],
  ['account_id', 'text'],
  ['seq', 'bigint'],
  ['input', 'text'],
  ['webhook', 'text'],
  ['s3_config', 'text'],
  ['execution_timeout_ms', 'bigint'],
  ['low_priority', 'int'],
  ['ttl_ms', 'bigint'],
  ['sync', 'int'],
  ['created_at', 'bigint'],
  ['queued_at', 'bigint'],
  ['expires_at', 'bigint'],
];

/** A submission as the columns it writes: IN_QUEUE since its creation, expiring after its ttl. */
export const newJobArgs = (j: NewJob): NewJobArgs => ({
  id: j.id,
  endpoint_id: j.endpointId,
  account_id: j.accountId,
  seq: j.seq,
  input: j.inputJson,
  webhook: j.webhook,
  s3_config: j.s3ConfigJson,
  execution_timeout_ms: j.policy.executionTimeout,
  low_priority: j.policy.lowPriority ? 1 : 0,
  ttl_ms: j.policy.ttl,
  sync: j.sync ? 1 : 0,
  created_at: j.createdAt,
  queued_at: j.createdAt,
  expires_at: j.createdAt + j.policy.ttl,
});

/** What every new job starts with: queued, never retried, no stop request. */
const SUBMITTED = { status: 'IN_QUEUE' satisfies JobStatus, retries: 0, stop_requested: 0 } as const;
const SUBMITTED_COLUMNS = Object.keys(SUBMITTED).map((c) => sql.ref(c));
const SUBMITTED_VALUES = Object.values(SUBMITTED).map((v) => sql.lit(v));

/** Per column, the values of a batch of new jobs (the column-array insert's arguments). */
export type NewJobColumns = { [K in keyof NewJobArgs]: Array<NewJobArgs[K]> };

export const newJobColumns = (jobs: readonly NewJob[]): NewJobColumns => {
  const rows = jobs.map(newJobArgs);
  return Object.fromEntries(NEW_JOB_COLUMNS.map(([c]) => [c, rows.map((r) => r[c])])) as NewJobColumns;
};

/** An outbox row's values, as bound. */
export interface WebhookArgs {
  id: string;
  job_id: string;
  url: string;
  payload: string;
  account_id: string;
  receiver: string;
  now: number;
}

export const webhookArgs = (
  d: { id: string; jobId: string; url: string; payloadJson: string; accountId?: string },
  now: number,
): WebhookArgs => ({
  id: d.id,
  job_id: d.jobId,
  url: d.url,
  payload: d.payloadJson,
  account_id: d.accountId ?? '',
  receiver: receiverKey(d.url),
  now,
});

/** A webhook call due now, never tried. */
export const webhookRow = (a: WebhookArgs) => ({
  id: a.id,
  job_id: a.job_id,
  url: a.url,
  payload: a.payload,
  attempts: 0,
  next_attempt_at: a.now,
  status: 'PENDING',
  last_error: null,
  created_at: a.now,
  account_id: a.account_id,
  receiver: a.receiver,
});

export interface HeadArgs {
  endpointId: string;
  now: number;
  limit: number;
}
interface ClaimArgs {
  id: string;
  workerId: string;
  now: number;
}
export interface FinishArgs {
  id: string;
  workerId: string;
  endpointId: string | null;
  status: 'COMPLETED' | 'FAILED';
  output: string | null;
  error: string | null;
  now: number;
  runsyncUntil: number;
  runUntil: number;
}
export interface ProgressArgs {
  id: string;
  workerId: string;
  endpointId: string | null;
  output: string | null;
}

/** A worker's first result for a job, as the finish statement binds it. */
export const finishArgs = (p: WorkerResult, now: number, retention: JobRetention): FinishArgs => ({
  id: p.id,
  workerId: p.workerId,
  endpointId: p.endpointId ?? null,
  status: p.status === 'FAILED' ? 'FAILED' : 'COMPLETED',
  output: p.status === 'COMPLETED' ? p.outputJson : null,
  error: p.status === 'FAILED' ? p.error : null,
  now,
  runsyncUntil: now + retention.runsyncMs,
  runUntil: now + retention.runMs,
});

export const progressArgs = (p: WorkerResult): ProgressArgs => ({
  id: p.id,
  workerId: p.workerId,
  endpointId: p.endpointId ?? null,
  output: p.outputJson,
});

/** The row-at-a-time job statements of one database, compiled for its dialect. */
export interface JobStatements {
  /** One new job, IN_QUEUE. */
  insert: CompiledStatement<NewJobArgs>;
  /** Many new jobs at once from column arrays (PostgreSQL only: `unnest`); null elsewhere. */
  insertColumns: CompiledStatement<NewJobColumns> | null;
  /** The ids at the head of an endpoint's queue: takeable, unexpired, FIFO. */
  head: CompiledStatement<HeadArgs>;
  /** Takes one job for a worker, if still takeable. */
  claim: CompiledStatement<ClaimArgs>;
  /** A worker's result: COMPLETED or FAILED, if the job is running on that worker. */
  finish: CompiledStatement<FinishArgs>;
  /** A worker's progress: replaces the visible output, if the job is running on that worker. */
  progress: CompiledStatement<ProgressArgs>;
  /** One outbox row. */
  webhook: CompiledStatement<WebhookArgs>;
}

function compileJobStatements(db: Pick<Db, 'kysely' | 'capabilities'>): JobStatements {
  const k: Kysely<Database> = db.kysely;
  const head = k
    .selectFrom('jobs')
    .select('id')
    .where('endpoint_id', '=', slot<string>('endpointId'))
    .where(statusGuard('take'))
    .where('expires_at', '>', big(slot<number>('now')))
    .orderBy('seq')
    .limit(slot<number>('limit'));
  const cols = NEW_JOB_COLUMNS.map(([c]) => sql.ref(c));
  const insertColumns = db.capabilities.inProcess
    ? null
    : compileStatement<NewJobColumns>({
        compile: () =>
          sql`INSERT INTO jobs (${sql.join(SUBMITTED_COLUMNS)}, ${sql.join(cols)})
          SELECT ${sql.join(SUBMITTED_VALUES)}, ${sql.join(cols)}
          FROM unnest(${sql.join(NEW_JOB_COLUMNS.map(([c, type]) => sql`${slot(c)}::${sql.raw(type)}[]`))})
          AS t(${sql.join(cols)})`.compile(k),
      });
  return {
    insert: compileStatement(
      k.insertInto('jobs').values({
        ...slotsOf<NewJobArgs>(NEW_JOB_COLUMNS.map(([c]) => c)),
        status: sql.lit(SUBMITTED.status),
        retries: sql.lit(SUBMITTED.retries),
        stop_requested: sql.lit(SUBMITTED.stop_requested),
      }),
    ),
    insertColumns,
    head: compileStatement(db.capabilities.skipLocked ? head.forUpdate().skipLocked() : head),
    claim: compileStatement(
      k
        .updateTable('jobs')
        .set(takenBy(slot('workerId'), slot('now')))
        .where('id', '=', slot<string>('id'))
        .where(statusGuard('take'))
        .returningAll(),
    ),
    finish: compileStatement(
      k
        .updateTable('jobs')
        .set({
          status: slot<string>('status'),
          output: slot<string | null>('output'),
          error: slot<string | null>('error'),
          ...finishedAt(slot('now'), retainUntilOf(big(slot('runsyncUntil')), big(slot('runUntil')))),
        })
        .where('id', '=', slot<string>('id'))
        .where(statusGuard('complete'))
        .where(heldBy(slot('workerId'), slot('endpointId')))
        .returningAll(),
    ),
    progress: compileStatement(
      k
        .updateTable('jobs')
        .set({ output: slot<string | null>('output') })
        .where('id', '=', slot<string>('id'))
        .where(statusGuard('progress'))
        .where(heldBy(slot('workerId'), slot('endpointId')))
        .returningAll(),
    ),
    webhook: compileStatement(
      k
        .insertInto('webhook_deliveries')
        .values(webhookRow(slotsOf<WebhookArgs>(['id', 'job_id', 'url', 'payload', 'account_id', 'receiver', 'now']))),
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
