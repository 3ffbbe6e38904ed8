import type { Db, Executor } from './database.js';

export interface QueueStats {
  inQueue: number;
  inProgress: number;
  completed: number;
  failed: number;
  cancelled: number;
  timedOut: number;
  /** Jobs (still stored) that went back to the queue at least once. */
  retried: number;
}

/**
 * The exact job counts of `/health`, read from indexes only: the count by status walks
 * `jobs_take (endpoint_id, status, seq)`, the retried count the partial `jobs_retried`. Reading
 * the rows instead took a third of a second per call with a million jobs queued.
 */
export class QueueStatsReader {
  constructor(private readonly db: Db) {}

  /** Exact counts of the endpoint's stored jobs by status. */
  async queueStats(endpointId: string, tx: Executor = this.db.kysely): Promise<QueueStats> {
    const rows = await tx
      .selectFrom('jobs')
      .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
      .where('endpoint_id', '=', endpointId)
      .groupBy('status')
      .execute();
    const retried = await tx
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('endpoint_id', '=', endpointId)
      .where('retries', '>', 0)
      .executeTakeFirst();
    const stats: QueueStats = {
      inQueue: 0,
      inProgress: 0,
      completed: 0,
      failed: 0,
      cancelled: 0,
      timedOut: 0,
      retried: Number(retried?.n ?? 0),
    };
    for (const r of rows) {
      const n = Number(r.n);
      const status = r.status;
      switch (status) {
        case 'IN_QUEUE':
          stats.inQueue = n;
          break;
        case 'IN_PROGRESS':
          stats.inProgress = n;
          break;
        case 'COMPLETED':
          stats.completed = n;
          break;
        case 'FAILED':
          stats.failed = n;
          break;
        case 'CANCELLED':
          stats.cancelled = n;
          break;
        case 'TIMED_OUT':
          stats.timedOut = n;
          break;
        default:
          ((x: never) => x)(status);
      }
    }
    return stats;
  }
}
