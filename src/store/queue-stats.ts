import { sql } from 'kysely';
import type { Db, Executor } from './database.js';
import type { JobStatus } from '../domain/job-state.js';

export interface QueueStats {
  inQueue: number;
  /** Queued jobs with `policy.lowPriority`; they do not call for more workers. */
  inQueueLowPriority: number;
  inProgress: number;
  completed: number;
  failed: number;
  cancelled: number;
  timedOut: number;
  /** Jobs (still stored) that went back to the queue at least once. */
  retried: number;
  /** created_at of the oldest queued job; null when the queue is empty. */
  oldestQueuedAt: number | null;
}

/** The job counts of `/health` and the autoscaler, read in one grouped statement. */
export class QueueStatsReader {
  constructor(private readonly db: Db) {}

  /** Exact counts of the endpoint's stored jobs by status. */
  async queueStats(endpointId: string, tx: Executor = this.db.kysely): Promise<QueueStats> {
    const rows = await tx
      .selectFrom('jobs')
      .select((eb) => [
        'status',
        eb.fn.countAll<number>().as('n'),
        eb.fn.sum<number>(sql<number>`CASE WHEN retries > 0 THEN 1 ELSE 0 END`).as('retried'),
        eb.fn.sum<number>('low_priority').as('low'),
        eb.fn.min<number>('created_at').as('oldest'),
      ])
      .where('endpoint_id', '=', endpointId)
      .groupBy('status')
      .execute();
    const stats: QueueStats = { inQueue: 0, inQueueLowPriority: 0, inProgress: 0, completed: 0, failed: 0, cancelled: 0, timedOut: 0, retried: 0, oldestQueuedAt: null };
    for (const r of rows) {
      const n = Number(r.n);
      stats.retried += Number(r.retried ?? 0);
      const status = r.status as JobStatus;
      switch (status) {
        case 'IN_QUEUE':
          stats.inQueue = n;
          stats.inQueueLowPriority = Number(r.low ?? 0);
          stats.oldestQueuedAt = r.oldest === null ? null : Number(r.oldest);
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
