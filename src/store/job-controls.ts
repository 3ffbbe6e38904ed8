import { sql } from 'kysely';
import type { Db, Executor } from './database.js';
import { changesFrom } from '../domain/job-state.js';
import { toJobRecord, type JobRecord } from './job-record.js';
import { DEFAULT_RETENTION, retainUntil, type JobRetention } from './job-retention.js';
import { big, statusLit } from './job-sql.js';

/** What a client does to its queued or finished jobs: cancel, retry, purge the queue. */
export class JobControls {
  constructor(
    private readonly db: Db,
    readonly retention: JobRetention = DEFAULT_RETENTION,
  ) {}

  /**
   * Cancels a queued or running job (a running one also gets a stop request for its worker).
   * Answers the cancelled job, or null when it was neither queued nor running.
   */
  async cancel(id: string, now: number, tx?: Executor): Promise<JobRecord | null> {
    if (!tx) return this.db.withTransaction((t) => this.cancel(id, now, t));
    const row = await tx
      .updateTable('jobs')
      .set({
        status: 'CANCELLED',
        stop_requested: sql<number>`CASE WHEN status = ${statusLit('IN_PROGRESS')} THEN 1 ELSE stop_requested END`,
        completed_at: now,
        execution_ms: sql<number>`CASE WHEN started_at IS NULL THEN NULL ELSE ${big(now)} - started_at END`,
        retain_until: retainUntil(this.retention, now),
        timeout_at: null,
      })
      .where('id', '=', id)
      .where('status', 'in', changesFrom('cancel'))
      .returningAll()
      .executeTakeFirst();
    // Its stream chunks would otherwise wait for the retention sweep, charged to the account.
    if (row) await tx.deleteFrom('job_stream').where('job_id', '=', id).execute();
    return row ? toJobRecord(row) : null;
  }

  /**
   * Requeues a FAILED or TIMED_OUT, unexpired job with the same id and input, at the back of the
   * queue (`seq`). Answers the requeued job, or null when the job was not retryable.
   */
  async retry(id: string, seq: number, now: number, tx: Executor = this.db.kysely): Promise<JobRecord | null> {
    const row = await tx
      .updateTable('jobs')
      .set({
        status: 'IN_QUEUE',
        seq,
        retries: sql<number>`retries + 1`,
        queued_at: now,
        worker_id: null,
        started_at: null,
        completed_at: null,
        retain_until: null,
        timeout_at: null,
        delay_ms: null,
        execution_ms: null,
        output: null,
        error: null,
        stop_requested: 0,
      })
      .where('id', '=', id)
      .where('status', 'in', changesFrom('retry'))
      .where('expires_at', '>', now)
      .returningAll()
      .executeTakeFirst();
    return row ? toJobRecord(row) : null;
  }

  /** Deletes the endpoint's queued jobs (running and finished ones stay), with any stream chunks a requeued one kept; answers how many. */
  async purgeQueue(endpointId: string, tx?: Executor): Promise<number> {
    if (!tx) return this.db.withTransaction((t) => this.purgeQueue(endpointId, t));
    const ids = (
      await tx
        .deleteFrom('jobs')
        .where('endpoint_id', '=', endpointId)
        .where('status', '=', 'IN_QUEUE')
        .returning('id')
        .execute()
    ).map((r) => r.id);
    for (let i = 0; i < ids.length; i += 1000)
      await tx
        .deleteFrom('job_stream')
        .where('job_id', 'in', ids.slice(i, i + 1000))
        .execute();
    return ids.length;
  }
}
