import { sql } from 'kysely';
import type { JobHoldings } from '../domain/quotas.js';
import type { Db, Executor } from './database.js';

/** Reads of what the job quotas count (the counters migration 0006's triggers keep). */
export class JobUsageStore {
  constructor(private readonly db: Db) {}

  /** Every account's queued jobs and stored bytes: one small table, one row per account and writer shard. */
  async byAccount(tx: Executor = this.db.kysely): Promise<Map<string, JobHoldings>> {
    const rows = await tx
      .selectFrom('job_usage')
      .select(['account_id', sql<number>`sum(queued_jobs)`.as('queued'), sql<number>`sum(stored_bytes)`.as('bytes')])
      .groupBy('account_id')
      .execute();
    return new Map(rows.map((r) => [r.account_id, { queuedJobs: Number(r.queued), storedBytes: Number(r.bytes) }]));
  }

  /** Bytes of the stream chunks a job buffers (posted, not yet drained). */
  async streamBytes(jobId: string, tx: Executor = this.db.kysely): Promise<number> {
    const row = await tx
      .selectFrom('job_stream')
      .select(sql<number>`coalesce(sum(octet_length(output)), 0)`.as('bytes'))
      .where('job_id', '=', jobId)
      .executeTakeFirst();
    return Number(row?.bytes ?? 0);
  }
}
