import { sql, type Expression } from 'kysely';
import { big } from './job-sql.js';

export interface JobRetention {
  /** How long a finished `/run` job stays readable. @default 1800000 (30 min) */
  runMs: number;
  /** How long a finished `/runsync` job stays readable. @default 60000 (1 min) */
  runsyncMs: number;
}

export const DEFAULT_RETENTION: JobRetention = { runMs: 30 * 60_000, runsyncMs: 60_000 };

/** The retention rule: a finished job stays readable until `runsyncUntil` or `runUntil`, by its `sync` flag. */
export const retainUntilOf = (runsyncUntil: Expression<number>, runUntil: Expression<number>): Expression<number> =>
  sql<number>`CASE WHEN sync = 1 THEN ${runsyncUntil} ELSE ${runUntil} END`;

/** `now + retention`, chosen per row by its `sync` flag. */
export function retainUntil(retention: JobRetention, now: number): Expression<number> {
  return retainUntilOf(big(now + retention.runsyncMs), big(now + retention.runMs));
}
