/** SQL pieces the parts of the job store share. */
import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import { changesFrom, type JobEventType, type JobStatus } from '../domain/job-state.js';

/** Rows per INSERT statement: well under SQLite's bound-parameter limit (32766). */
export const INSERT_CHUNK = 500;

/** A bigint literal both dialects type correctly (PostgreSQL cannot infer `$1 + $2`). */
export const big = (n: number): RawBuilder<number> => sql<number>`CAST(${n} AS BIGINT)`;

/**
 * The one status an event applies to, for queries that must use a partial index: SQLite matches
 * `status = 'IN_PROGRESS'` to an index `WHERE status = 'IN_PROGRESS'`, but not `status IN (…)`
 * (the timeout sweep and lost-worker requeue scanned the whole table).
 */
export function soleStatus(event: Parameters<typeof changesFrom>[0]): JobStatus {
  const from = changesFrom(event);
  if (from.length !== 1)
    throw new Error(`${event} applies to ${from.length} statuses; its query needs an index on status`);
  return from[0]!;
}

/**
 * A job status written into statement text by hand (a literal, as a partial index needs), checked
 * against the state machine's statuses: `statusLit('IN_PROGRESS')` in a query built with `sql`,
 * `statusText('IN_PROGRESS')` in one prepared from a string.
 */
export const statusLit = (status: JobStatus): RawBuilder<JobStatus> => sql.lit(status);
export const statusText = (status: JobStatus): string => `'${status}'`;

/** The guard of a set-based update: the job is in one of the statuses `event` changes. */
export function statusGuard(event: JobEventType): Expression<SqlBool> {
  const from = changesFrom(event);
  // one status as `=`: SQLite matches it to a partial index `WHERE status = '…'`, `IN (…)` it does not
  if (from.length === 1) return sql<SqlBool>`status = ${statusLit(from[0]!)}`;
  return sql<SqlBool>`status IN (${sql.join(from.map(statusLit))})`;
}

/**
 * What a take writes: IN_PROGRESS on `workerId`, started `now`, delay measured, deadline set, and
 * the take's place in the order of takes (`take-order.ts`).
 */
export const takenBy = (workerId: string | Expression<string>, now: number, takenSeq: number) =>
  ({
    status: statusLit('IN_PROGRESS'),
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
