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
import { sql, type Kysely } from 'kysely';
import type { JobStatus } from '../domain/job-state.js';
import type { Db } from './database.js';
import { compileStatement, slot, slotsOf, type CompiledStatement } from './compiled-statement.js';
import { retainUntilOf } from './job-retention.js';
import { big, finishedAt, heldBy, statusGuard, takenBy } from './job-sql.js';
import {
  CLAIM_SLOTS,
  FINISH_SLOTS,
  HEAD_SLOTS,
  NEW_JOB_SLOTS,
  NEW_JOB_TYPES,
  PROGRESS_SLOTS,
  SUBMITTED,
  SUBMITTED_COLUMNS,
  SUBMITTED_VALUES,
  USAGE_SLOTS,
  WEBHOOK_SLOTS,
  webhookRow,
  type ClaimValues,
  type FinishValues,
  type HeadValues,
  type NewJobArgs,
  type NewJobColumns,
  type NewJobValues,
  type ProgressValues,
  type UsageValues,
  type WebhookArgs,
  type WebhookValues,
} from './job-statement-values.js';
import { TAKE_ORDER_NEXT } from './take-order.js';
import type { Database } from './schema.js';

// ── the statements ─────────────────────────────────────────────────────────────────────────────
//
// Each statement declares its slots in the order its text binds them (`…_SLOTS`); its argument
// builder answers the values in that order (`…Values`), and `compileStatement` checks the order
// against the compiled text on every database it compiles for.

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
