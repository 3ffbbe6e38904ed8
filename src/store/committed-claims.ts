import type { Db } from './database.js';
import type { JobClaims, TakeRequest } from './job-claims.js';
import { toJobRecord, type JobRecord, type WorkerResult } from './job-record.js';
import type { JobWebhookOutbox, NewWebhookDelivery } from './job-webhook-outbox.js';

/**
 * The group commits of the worker side, each one whole transaction: a batch of takes, and a batch
 * of results with the webhook outbox rows of the jobs they finish. In-process engines (SQLite) run
 * them on the synchronous executor, in one synchronous transaction (`JobClaims.takeRows`,
 * `completeRows`); others on Kysely in a transaction (`takeMany`, `completeMany`). Same
 * statements, same guards, same answers.
 */
export class CommittedClaims {
  constructor(
    private readonly db: Db,
    private readonly claims: Pick<JobClaims, 'takeMany' | 'completeMany' | 'takeRows' | 'completeRows'>,
    private readonly outbox: Pick<JobWebhookOutbox, 'insertWebhookDeliveries' | 'insertRows'>,
  ) {}

  /** Takes for several requests (see `JobClaims.takeMany`), committed. */
  async takeCommitted(requests: readonly TakeRequest[], now: number): Promise<JobRecord[][]> {
    const sync = this.db.syncTransaction;
    if (!sync) return this.db.withTransaction((tx) => this.claims.takeMany(requests, now, tx));
    const rows = await sync((raw) => this.claims.takeRows(raw, requests, now));
    return rows.map((list) => list.map(toJobRecord));
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
