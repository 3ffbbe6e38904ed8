import type { Clock } from '../domain/clock.js';
import type { Db } from '../store/database.js';
import type { JobStore } from '../store/job-store.js';
import type { JobUsageStore } from '../store/job-usage.js';
import type { FinishedJobs } from './finished-jobs.js';
import type { JobSignals } from './job-signals.js';
import type { JobFlow } from './job-flow.js';

export interface TickResult {
  timedOut: number;
  expired: number;
  purged: number;
}

export interface JobSweeperDeps {
  db: Db;
  store: { sweeps: Pick<JobStore['sweeps'], 'timeOut' | 'expire'> };
  clock: Clock;
  signals: JobSignals;
  finished: FinishedJobs;
  /** Rows one statement times out or deletes. */
  sweepLimit: number;
  /** The job quotas' counters, whose writer shards a pass folds now and then. @default none: no fold */
  usage?: Pick<JobUsageStore, 'foldShards'>;
  /** How often (clock ms) a pass folds the counters' shards. @default 60000 */
  foldIntervalMs?: number;
  /** Told of queued and running jobs their ttl deleted (metrics). @default none */
  flow?: Pick<JobFlow, 'removed'>;
}

/** The jobs' part of the timekeeper's pass: execution timeouts, ttl expiry, result retention. */
export class JobSweeper {
  readonly #deps: JobSweeperDeps;
  #foldedAt = -Infinity;

  constructor(deps: JobSweeperDeps) {
    this.#deps = deps;
  }

  /**
   * One pass of the timekeeper: running jobs past their execution timeout become TIMED_OUT (and
   * their workers are told to stop); jobs past their ttl are deleted in any state; finished jobs
   * past retention are deleted; once a minute, the quota counters' writer shards are folded (on
   * PostgreSQL each connection adds its own row per account; unfolded they would grow with every
   * connection ever opened, and the quotas' per-second refresh sums them all). Run it every
   * second or so (under a lease on PostgreSQL).
   */
  async tick(now: number = this.#deps.clock.now()): Promise<TickResult> {
    const { db, store, signals, finished } = this.#deps;
    const result: TickResult = { timedOut: 0, expired: 0, purged: 0 };
    const limit = this.#deps.sweepLimit;
    for (;;) {
      const timedOut = await db.withTransaction(async (tx) => {
        const jobs = await store.sweeps.timeOut(now, limit, tx);
        await finished.enqueueWebhooks(jobs, now, tx);
        return jobs;
      });
      finished.announce(timedOut);
      result.timedOut += timedOut.length;
      if (timedOut.length < limit) break;
    }
    for (;;) {
      const { expired, purged, unfinished } = await db.withTransaction((tx) => store.sweeps.expire(now, limit, tx));
      for (const u of unfinished) this.#deps.flow?.removed(u.endpointId, u.status, u.n);
      for (const id of [...expired, ...purged]) {
        signals.notify('job', id);
        signals.notify('stream', id);
      }
      result.expired += expired.length;
      result.purged += purged.length;
      if (expired.length < limit && purged.length < limit) break;
    }
    const { usage, foldIntervalMs = 60_000 } = this.#deps;
    if (usage && now - this.#foldedAt >= foldIntervalMs) {
      this.#foldedAt = now;
      await usage.foldShards();
    }
    return result;
  }
}
