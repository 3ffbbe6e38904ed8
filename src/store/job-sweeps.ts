import { sql } from 'kysely';
import type { Db, Executor } from './database.js';
import { isUnfinishedJobStatus, TIMED_OUT_ERROR, type UnfinishedJobStatus } from '../domain/job-state.js';
import { toJobRecord, type JobRecord } from './job-record.js';
import { DEFAULT_RETENTION, retainUntil, type JobRetention } from './job-retention.js';
import { big, soleStatus } from './job-sql.js';

/** The timekeeper's statements: jobs past their execution deadline, ttl or retention. Bounded by `limit`. */
export class JobSweeps {
  constructor(
    private readonly db: Db,
    readonly retention: JobRetention = DEFAULT_RETENTION,
  ) {}

  /**
   * Deletes up to `limit` jobs whose ttl ended (any state) and up to `limit` finished jobs past
   * their retention, with their stream buffers. Answers the ids of each kind.
   */
  async expire(
    now: number,
    limit = 1000,
    tx: Executor = this.db.kysely,
  ): Promise<{
    expired: string[];
    purged: string[];
    /** Of the expired jobs, how many per endpoint were still queued or running. */
    unfinished: Array<{ endpointId: string; status: UnfinishedJobStatus; n: number }>;
  }> {
    const expired = await tx
      .deleteFrom('jobs')
      .where('id', 'in', (eb) => eb.selectFrom('jobs').select('id').where('expires_at', '<=', now).limit(limit))
      .returning(['id', 'endpoint_id', 'status'])
      .execute();
    const counts = new Map<string, { endpointId: string; status: UnfinishedJobStatus; n: number }>();
    for (const r of expired) {
      if (!isUnfinishedJobStatus(r.status)) continue;
      const key = `${r.endpoint_id}\u0000${r.status}`;
      const c = counts.get(key) ?? { endpointId: r.endpoint_id, status: r.status, n: 0 };
      c.n++;
      counts.set(key, c);
    }
    const purged = await tx
      .deleteFrom('jobs')
      .where('id', 'in', (eb) => eb.selectFrom('jobs').select('id').where('retain_until', '<=', now).limit(limit))
      .returning('id')
      .execute();
    const ids = [...expired, ...purged].map((r) => r.id);
    if (ids.length) await tx.deleteFrom('job_stream').where('job_id', 'in', ids).execute();
    return { expired: expired.map((r) => r.id), purged: purged.map((r) => r.id), unfinished: [...counts.values()] };
  }

  /**
   * Times out up to `limit` running jobs past their execution deadline: TIMED_OUT, stop requested.
   * Queue time never counts: the deadline is set when a worker takes the job.
   */
  async timeOut(now: number, limit = 1000, tx: Executor = this.db.kysely): Promise<JobRecord[]> {
    const rows = await tx
      .updateTable('jobs')
      .set({
        status: 'TIMED_OUT',
        error: TIMED_OUT_ERROR,
        stop_requested: 1,
        completed_at: now,
        execution_ms: sql<number>`${big(now)} - started_at`,
        retain_until: retainUntil(this.retention, now),
        timeout_at: null,
      })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('jobs')
          .select('id')
          .where('status', '=', soleStatus('timeout'))
          .where('timeout_at', '<=', now)
          .limit(limit),
      )
      .returningAll()
      .execute();
    return rows.map(toJobRecord);
  }
}
