import { sql } from 'kysely';
import type { Db, Executor } from './database.js';
import { FINISHED_DELIVERY_STATUSES, type WebhookDeliveryStatus } from '../domain/webhook-delivery.js';
import type { WebhookDeliveriesTable } from './endpoint-tables.js';

const PENDING = sql.lit<WebhookDeliveryStatus>('PENDING');

/** One webhook call of the outbox (written by JobsService when a job finishes). */
export interface WebhookDelivery {
  id: string;
  jobId: string;
  url: string;
  /** JSON text of the body to POST. */
  payloadJson: string;
  /** Attempts started so far (an attempt counts from the moment it is claimed). */
  attempts: number;
  nextAttemptAt: number;
  status: WebhookDeliveryStatus;
  lastError: string | null;
  createdAt: number;
  /** The job's account ('' when unknown). */
  accountId: string;
  /** The URL's origin: what per-receiver fairness counts. */
  receiver: string;
}

const toDelivery = (r: WebhookDeliveriesTable): WebhookDelivery => ({
  id: r.id,
  jobId: r.job_id,
  url: r.url,
  payloadJson: r.payload,
  attempts: Number(r.attempts),
  nextAttemptAt: Number(r.next_attempt_at),
  status: r.status,
  lastError: r.last_error,
  createdAt: Number(r.created_at),
  accountId: r.account_id,
  receiver: r.receiver,
});

/** Longest `last_error` kept: a receiver's error page must not bloat the row. */
const MAX_ERROR_CHARS = 500;
const clip = (error: string): string =>
  error.length > MAX_ERROR_CHARS ? `${error.slice(0, MAX_ERROR_CHARS - 1)}…` : error;

/**
 * The webhook outbox as the dispatcher uses it. Claiming a row counts its attempt and pushes its
 * `next_attempt_at` to a lease, so a dispatcher that dies mid-call leaves a row that becomes due
 * again by itself, and two replicas never call the same row at once (SKIP LOCKED on PostgreSQL;
 * SQLite writes are serialised anyway).
 */
export class WebhookStore {
  constructor(private readonly db: Db) {}

  /**
   * Claims up to `limit` due PENDING rows (oldest due first) whose attempts are not spent, of any
   * account: as `claimDueFor` does for one.
   */
  claimDue(
    now: number,
    limit: number,
    leaseUntil: number,
    maxAttempts: number,
    tx?: Executor,
  ): Promise<WebhookDelivery[]> {
    return this.#claim(null, now, { limit, leaseUntil, maxAttempts, skipReceivers: [] }, tx);
  }

  /**
   * The accounts that have PENDING rows due at `now`, in account order. One index seek per
   * account with PENDING rows (a skip scan of `webhook_deliveries_account_due`), however long any
   * account's backlog is.
   */
  async dueAccounts(now: number, tx: Executor = this.db.kysely): Promise<string[]> {
    const { rows } = await sql<{ account_id: string }>`
      WITH RECURSIVE pending(account_id) AS (
        SELECT (SELECT MIN(account_id) FROM webhook_deliveries WHERE status = ${PENDING})
        UNION ALL
        SELECT (SELECT MIN(w.account_id) FROM webhook_deliveries w WHERE w.status = ${PENDING} AND w.account_id > p.account_id)
        FROM pending p WHERE p.account_id IS NOT NULL
      )
      SELECT account_id FROM pending p
      WHERE p.account_id IS NOT NULL
        AND (SELECT MIN(w.next_attempt_at) FROM webhook_deliveries w WHERE w.status = ${PENDING} AND w.account_id = p.account_id) <= ${now}`.execute(
      tx,
    );
    return rows.map((r) => r.account_id);
  }

  /**
   * Claims up to `limit` of `accountId`'s due PENDING rows (oldest due first) whose attempts are
   * not spent, passing over rows to the receivers in `skipReceivers` (those at their cap):
   * `attempts + 1`, `next_attempt_at = leaseUntil`. Answers them as claimed. An index range scan
   * of the account's due rows.
   */
  claimDueFor(
    accountId: string,
    now: number,
    options: { limit: number; leaseUntil: number; maxAttempts: number; skipReceivers: readonly string[] },
    tx?: Executor,
  ): Promise<WebhookDelivery[]> {
    return this.#claim(accountId, now, options, tx);
  }

  async #claim(
    accountId: string | null,
    now: number,
    options: { limit: number; leaseUntil: number; maxAttempts: number; skipReceivers: readonly string[] },
    tx?: Executor,
  ): Promise<WebhookDelivery[]> {
    const { limit, leaseUntil, maxAttempts, skipReceivers } = options;
    if (limit <= 0) return [];
    const run = async (t: Executor): Promise<WebhookDelivery[]> => {
      const rows = await t
        .updateTable('webhook_deliveries')
        .set({ attempts: sql<number>`attempts + 1`, next_attempt_at: leaseUntil })
        .where('id', 'in', (eb) =>
          eb
            .selectFrom('webhook_deliveries')
            .select('id')
            .where('status', '=', 'PENDING')
            .$if(accountId !== null, (qb) => qb.where('account_id', '=', accountId!))
            .where('next_attempt_at', '<=', now)
            .where('attempts', '<', maxAttempts)
            .$if(skipReceivers.length > 0, (qb) => qb.where('receiver', 'not in', [...skipReceivers]))
            .orderBy('next_attempt_at')
            .orderBy('id')
            .limit(limit)
            .$if(this.db.capabilities.skipLocked, (qb) => qb.forUpdate().skipLocked()),
        )
        .returningAll()
        .execute();
      return rows.map(toDelivery).sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
    };
    return tx ? run(tx) : this.db.withTransaction(run);
  }

  /**
   * PENDING rows whose last attempt was claimed but never recorded (the server stopped during the
   * call) and whose attempts are spent become FAILED with `error`. Answers how many.
   */
  async failInterrupted(
    now: number,
    maxAttempts: number,
    error: string,
    tx: Executor = this.db.kysely,
  ): Promise<number> {
    const rows = await tx
      .updateTable('webhook_deliveries')
      .set({ status: 'FAILED', last_error: clip(error) })
      .where('status', '=', 'PENDING')
      .where('next_attempt_at', '<=', now)
      .where('attempts', '>=', maxAttempts)
      .returning('id')
      .execute();
    return rows.length;
  }

  /** Gives back a claimed attempt that never reached the receiver (shutdown): due again at `now`, not counted. */
  async unclaim(id: string, now: number, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .updateTable('webhook_deliveries')
      .set({ attempts: sql<number>`attempts - 1`, next_attempt_at: now })
      .where('id', '=', id)
      .where('status', '=', 'PENDING')
      .where('attempts', '>', 0)
      .execute();
  }

  /** The claimed attempt succeeded. */
  async markDelivered(id: string, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .updateTable('webhook_deliveries')
      .set({ status: 'DELIVERED', last_error: null })
      .where('id', '=', id)
      .where('status', '=', 'PENDING')
      .execute();
  }

  /** The claimed attempt failed and another one is due at `nextAttemptAt`. */
  async markRetry(id: string, nextAttemptAt: number, error: string, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: nextAttemptAt, last_error: clip(error) })
      .where('id', '=', id)
      .where('status', '=', 'PENDING')
      .execute();
  }

  /** The claimed attempt failed and was the last one. */
  async markFailed(id: string, error: string, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .updateTable('webhook_deliveries')
      .set({ status: 'FAILED', last_error: clip(error) })
      .where('id', '=', id)
      .where('status', '=', 'PENDING')
      .execute();
  }

  async get(id: string, tx: Executor = this.db.kysely): Promise<WebhookDelivery | null> {
    const row = await tx.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toDelivery(row) : null;
  }

  /** A job's deliveries, oldest first (one per finish: a retried job that finishes again gets another). */
  async forJob(jobId: string, tx: Executor = this.db.kysely): Promise<WebhookDelivery[]> {
    const rows = await tx
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('job_id', '=', jobId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toDelivery);
  }

  /** When the next PENDING row falls due; null when none is pending. */
  async nextDueAt(tx: Executor = this.db.kysely): Promise<number | null> {
    const row = await tx
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.min<number>('next_attempt_at').as('at'))
      .where('status', '=', 'PENDING')
      .executeTakeFirst();
    return row?.at === null || row?.at === undefined ? null : Number(row.at);
  }

  /** Deletes DELIVERED and FAILED rows created before `before` (at most `limit`); answers how many. */
  async purgeFinished(before: number, limit: number, tx: Executor = this.db.kysely): Promise<number> {
    const rows = await tx
      .deleteFrom('webhook_deliveries')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('status', 'in', FINISHED_DELIVERY_STATUSES)
          .where('created_at', '<', before)
          .limit(limit),
      )
      .returning('id')
      .execute();
    return rows.length;
  }
}
