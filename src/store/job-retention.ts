import { sql, type Expression } from 'kysely';
import { big } from './job-sql.js';

export interface JobRetention {
  /** How long a finished `/run` job stays readable. @default 1800000 (30 min) */
  runMs: number;
  /** How long a finished `/runsync` job stays readable. @default 60000 (1 min) */
  runsyncMs: number;
}

export const DEFAULT_RETENTION: JobRetention = { runMs: 30 * 60_000, runsyncMs: 60_000 };

/** `now + retention`, chosen per row by its `sync` flag. */
export function retainUntil(retention: JobRetention, now: number): Expression<number> {
  return sql<number>`CASE WHEN sync = 1 THEN ${big(now + retention.runsyncMs)} ELSE ${big(now + retention.runMs)} END`;
}
