/** SQL pieces the parts of the job store share. */
import { sql, type RawBuilder } from 'kysely';
import { changesFrom, type JobStatus } from '../domain/job-state.js';

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
