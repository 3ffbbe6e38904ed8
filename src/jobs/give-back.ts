import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { stranded, type HeldJob } from '../domain/held-report.js';
import type { Db } from '../store/database.js';
import type { GivenBack } from '../store/held-jobs.js';
import type { TakeRequest } from '../store/job-claims.js';
import type { JobStore } from '../store/job-store.js';
import type { FinishedJobs } from './finished-jobs.js';
import type { JobFlow } from './job-flow.js';
import type { JobSignals } from './job-signals.js';

export interface GiveBackDeps {
  db: Db;
  store: { held: Pick<JobStore['held'], 'list' | 'giveBack'> };
  clock: Clock;
  signals: Pick<JobSignals, 'notify'>;
  finished: Pick<FinishedJobs, 'enqueueWebhooks' | 'announce'>;
  /** How often a job goes back to the queue before it FAILS. */
  retryBudget: number;
  /**
   * How long after its take a job may still be on its way to its worker, for a ping that lists
   * no job (the heartbeat timeout: `domain/held-report.ts`).
   */
  settleMs: number;
  flow?: Pick<JobFlow, 'requeued'>;
  /** Where jobs given back by their own worker's report are logged. @default none */
  logger?: Pick<Logger, 'warn'>;
}

/** What went back from a worker, by job id. */
export interface GaveBack {
  requeued: string[];
  failed: string[];
}

const NOTHING: GaveBack = Object.freeze({ requeued: [], failed: [] });

/**
 * Jobs going back from their worker to the queue (or FAILED past the retry budget), the way a
 * lost worker's do: when the worker is lost, and when its own ping (`pinged`) or take (in the
 * takes' transaction; `tookHoldingNone` follows it) shows it no longer holds them. After each
 * commit, the moves are counted, the queues' takers woken and the failed jobs finished.
 */
export class GiveBack {
  readonly #deps: GiveBackDeps;

  constructor(deps: GiveBackDeps) {
    this.#deps = deps;
  }

  /** Every job the worker holds through `endpointId` (null: any endpoint, for ids this server issued). */
  lost(workerId: string, endpointId: string | null): Promise<GaveBack> {
    return this.#giveBack(workerId, endpointId);
  }

  /** Every job the worker holds through `endpointId`, back to the queue with no retry counted. */
  released(workerId: string, endpointId: string): Promise<GaveBack> {
    return this.#giveBack(workerId, endpointId, undefined, false);
  }

  /**
   * The held jobs a ping listing `listed` shows the worker no longer holds (`stranded`). Nothing
   * is written when there are none: a read of the worker's held jobs is all a ping costs.
   */
  async pinged(endpointId: string, workerId: string, listed: readonly string[]): Promise<GaveBack> {
    const { store, clock, settleMs } = this.#deps;
    const held = await store.held.list(workerId, endpointId);
    if (held.length === 0) return NOTHING;
    const gone = stranded(new Set(listed), held, clock.now(), settleMs);
    if (gone.length === 0) return NOTHING;
    const moved = await this.#giveBack(workerId, endpointId, gone);
    if (moved.requeued.length > 0 || moved.failed.length > 0)
      this.#deps.logger?.warn(
        { workerId, endpointId, listed: listed.slice(0, 20), ...moved },
        "jobs given back: the worker's ping shows it no longer holds them",
      );
    return moved;
  }

  /** A batch of takes, some saying their worker holds no job, gave back `back` in its transaction. */
  tookHoldingNone(requests: readonly TakeRequest[], back: GivenBack): void {
    this.#announce(back);
    const { logger } = this.#deps;
    if (!logger) return;
    const byEndpoint = new Map<string, GaveBack & { workerIds: Set<string> }>();
    const entry = (endpointId: string) => {
      let e = byEndpoint.get(endpointId);
      if (!e) byEndpoint.set(endpointId, (e = { requeued: [], failed: [], workerIds: new Set() }));
      return e;
    };
    for (const j of back.requeued) entry(j.endpointId).requeued.push(j.id);
    for (const j of back.failed) entry(j.endpointId).failed.push(j.id);
    for (const r of requests) if (r.holdsNone) byEndpoint.get(r.endpointId)?.workerIds.add(r.workerId);
    for (const [endpointId, { requeued, failed, workerIds }] of byEndpoint)
      logger.warn(
        { endpointId, workerIds: [...workerIds], requeued, failed },
        "jobs given back: their worker's take says it holds no job",
      );
  }

  async #giveBack(
    workerId: string,
    endpointId: string | null,
    only?: readonly HeldJob[],
    counted = true,
  ): Promise<GaveBack> {
    const { db, store, clock, finished, retryBudget } = this.#deps;
    const now = clock.now();
    const back = await db.withTransaction(async (tx) => {
      const res = await store.held.giveBack(workerId, endpointId, now, retryBudget, tx, only, counted);
      await finished.enqueueWebhooks(res.failed, now, tx);
      return res;
    });
    this.#announce(back);
    return { requeued: back.requeued.map((j) => j.id), failed: back.failed.map((j) => j.id) };
  }

  /** After the commit that gave jobs back: counted, their queues' takers woken, the failed ones finished. */
  #announce({ requeued, failed }: GivenBack): void {
    const perEndpoint = new Map<string, number>();
    for (const j of requeued) perEndpoint.set(j.endpointId, (perEndpoint.get(j.endpointId) ?? 0) + 1);
    for (const [endpointId, n] of perEndpoint) {
      this.#deps.flow?.requeued(endpointId, n, 'running');
      this.#deps.signals.notify('work', endpointId, n);
    }
    this.#deps.finished.announce(failed);
  }
}
