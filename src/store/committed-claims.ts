import type { Db } from './database.js';
import type { GivenBack, HeldJobs } from './held-jobs.js';
import { NOTHING_GIVEN_BACK } from './held-jobs.js';
import type { JobClaims, TakeRequest } from './job-claims.js';
import { toJobRecord, type JobRecord, type WorkerResult } from './job-record.js';
import type { JobWebhookOutbox, NewWebhookDelivery } from './job-webhook-outbox.js';

/** What a batch of takes committed: each request's jobs, and the jobs its workers gave back first. */
export interface TakeBatch extends GivenBack {
  taken: JobRecord[][];
}

/** How a batch of takes gives back the jobs of workers that say they hold none (`TakeRequest.holdsNone`). */
export interface TakeGiveBack {
  retryBudget: number;
  /** The outbox rows of the jobs given back FAILED, written in the takes' transaction. */
  webhooksOf: (failed: readonly JobRecord[]) => NewWebhookDelivery[];
}

/**
 * The group commits of the worker side, each one whole transaction: a batch of takes (with the
 * jobs its workers give back first), and a batch of results with the webhook outbox rows of the
 * jobs they finish. In-process engines (SQLite) run them on the synchronous executor, in one
 * synchronous transaction (`JobClaims.takeRows`, `completeRows`, `HeldJobs.giveBackRows`); others
 * on Kysely in a transaction (`takeMany`, `completeMany`, `giveBackAll`). Same statements, same
 * guards, same answers.
 */
export class CommittedClaims {
  constructor(
    private readonly db: Db,
    private readonly claims: Pick<JobClaims, 'takeMany' | 'completeMany' | 'takeRows' | 'completeRows'>,
    private readonly held: Pick<HeldJobs, 'giveBackAll' | 'giveBackRows'>,
    private readonly outbox: Pick<JobWebhookOutbox, 'insertWebhookDeliveries' | 'insertRows'>,
  ) {}

  /**
   * Takes for several requests (see `JobClaims.takeMany`), committed. With `giveBack`, the workers
   * of requests marked `holdsNone` first give back every job they hold (`HeldJobs.giveBackAll`),
   * in the same transaction and before anything is claimed: those jobs can only come from their
   * earlier takes, and may be taken again by this batch.
   */
  async takeCommitted(requests: readonly TakeRequest[], now: number, giveBack?: TakeGiveBack): Promise<TakeBatch> {
    const holders = giveBack ? requests.filter((r) => r.holdsNone) : [];
    const sync = this.db.syncTransaction;
    if (!sync)
      return this.db.withTransaction(async (tx) => {
        const back = holders.length
          ? await this.held.giveBackAll(holders, now, giveBack!.retryBudget, tx)
          : NOTHING_GIVEN_BACK;
        const deliveries = back.failed.length ? giveBack!.webhooksOf(back.failed) : [];
        if (deliveries.length) await this.outbox.insertWebhookDeliveries(deliveries, now, tx);
        return { ...back, taken: await this.claims.takeMany(requests, now, tx) };
      });
    return sync((raw) => {
      const back = holders.length
        ? this.held.giveBackRows(raw, holders, now, giveBack!.retryBudget)
        : NOTHING_GIVEN_BACK;
      const deliveries = back.failed.length ? giveBack!.webhooksOf(back.failed) : [];
      if (deliveries.length) this.outbox.insertRows(raw, deliveries, now);
      const taken = this.claims.takeRows(raw, requests, now).map((list) => list.map(toJobRecord));
      return { ...back, taken };
    });
  }

  /**
   * Workers' posts (see `JobClaims.completeMany`) and, in the same transaction, the outbox rows
   * `webhooksOf` answers for the jobs they finished. Answers the changed job per post, or null.
   */
  async completeCommitted(
    posts: readonly WorkerResult[],
    now: number,
    webhooksOf: (changed: ReadonlyArray<JobRecord | null>) => NewWebhookDelivery[],
  ): Promise<Array<JobRecord | null>> {
    const sync = this.db.syncTransaction;
    if (!sync)
      return this.db.withTransaction(async (tx) => {
        const changed = await this.claims.completeMany(posts, now, tx);
        const deliveries = webhooksOf(changed);
        if (deliveries.length) await this.outbox.insertWebhookDeliveries(deliveries, now, tx);
        return changed;
      });
    return sync((raw) => {
      const changed = this.claims.completeRows(raw, posts, now).map((r) => (r ? toJobRecord(r) : null));
      const deliveries = webhooksOf(changed);
      if (deliveries.length) this.outbox.insertRows(raw, deliveries, now);
      return changed;
    });
  }
}
