import type { Db, Executor } from './database.js';

/** Stream chunks a worker posted for a job, buffered until its client drains them (`/stream`). */
export class JobStreamBuffer {
  constructor(private readonly db: Db) {}

  /** Buffers stream chunks (JSON text each) in `seq` order; `accountId`, the job's, is charged for their bytes. */
  async appendStream(
    jobId: string,
    chunks: ReadonlyArray<{ seq: number; outputJson: string; accountId?: string | null }>,
    now: number,
    tx: Executor = this.db.kysely,
  ): Promise<void> {
    if (chunks.length === 0) return;
    await tx
      .insertInto('job_stream')
      .values(
        chunks.map((c) => ({
          job_id: jobId,
          seq: c.seq,
          output: c.outputJson,
          created_at: now,
          account_id: c.accountId ?? null,
        })),
      )
      .execute();
  }

  /** Removes and answers the buffered chunks of a job, oldest first (JSON text each). */
  async drainStream(jobId: string, tx?: Executor): Promise<string[]> {
    const run = async (t: Executor): Promise<string[]> => {
      const rows = await t
        .selectFrom('job_stream')
        .select(['seq', 'output'])
        .where('job_id', '=', jobId)
        .orderBy('seq')
        .execute();
      const last = rows.at(-1);
      if (!last) return [];
      await t.deleteFrom('job_stream').where('job_id', '=', jobId).where('seq', '<=', Number(last.seq)).execute();
      return rows.map((r) => r.output);
    };
    return tx ? run(tx) : this.db.withTransaction(run);
  }
}
