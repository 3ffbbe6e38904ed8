import { sql } from 'kysely';
import type { JobHoldings } from '../domain/quotas.js';
import type { Db, Executor } from './database.js';

/**
 * Reads of what the job quotas count (the counters migration 0006's triggers keep; on SQLite the
 * job insert adds its own batch's counts, migration 0017).
 */
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

  /**
   * Folds the writers' shards into one row per account (shard 0), so the table stays one row per
   * account plus the shards written since the last fold (PostgreSQL: one per connection that
   * changed jobs). One statement: the shard rows are locked and deleted, their sums added to shard
   * 0. A shard a running transaction holds is skipped (SKIP LOCKED), so the fold never waits on, or
   * deadlocks with, a job transaction, and an uncommitted increment is never lost: it lands in its
   * own shard, folded next time. A transaction upserting a shard the fold is deleting waits for the
   * fold, then inserts the shard afresh. Nothing to do where there is one writer (one shard).
   * Answers how many shard rows were folded.
   */
  async foldShards(): Promise<number> {
    if (!this.db.capabilities.multipleConnections || !this.db.capabilities.skipLocked) return 0;
    const { rows } = await sql<{ folded: string | number }>`
      WITH taken AS (
        SELECT account_id, shard FROM job_usage WHERE shard <> 0 ORDER BY account_id, shard FOR UPDATE SKIP LOCKED
      ), folded AS (
        DELETE FROM job_usage u USING taken WHERE u.account_id = taken.account_id AND u.shard = taken.shard
        RETURNING u.account_id, u.queued_jobs, u.stored_bytes
      ), added AS (
        INSERT INTO job_usage AS z (account_id, shard, queued_jobs, stored_bytes)
          SELECT account_id, 0, sum(queued_jobs), sum(stored_bytes) FROM folded GROUP BY account_id ORDER BY account_id
          ON CONFLICT (account_id, shard) DO UPDATE SET queued_jobs = z.queued_jobs + excluded.queued_jobs, stored_bytes = z.stored_bytes + excluded.stored_bytes
          RETURNING 1
      )
      SELECT count(*) AS folded FROM folded`.execute(this.db.kysely);
    return Number(rows[0]?.folded ?? 0);
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
