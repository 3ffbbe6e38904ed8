import { receiverKey } from '../domain/webhook-url.js';
import type { Db, Executor } from './database.js';
import { INSERT_CHUNK } from './job-sql.js';

export interface NewWebhookDelivery {
  id: string;
  jobId: string;
  url: string;
  payloadJson: string;
  /** The job's account, for fair delivery across accounts. @default '' */
  accountId?: string;
}

/**
 * The webhook outbox as finished jobs fill it, in the transaction that finished them (the
 * dispatcher's side is `WebhookStore`).
 */
export class JobWebhookOutbox {
  constructor(private readonly db: Db) {}

  /** Writes webhook calls to the outbox; the dispatcher delivers them after the commit. */
  async insertWebhookDeliveries(
    rows: readonly NewWebhookDelivery[],
    now: number,
    tx: Executor = this.db.kysely,
  ): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      await tx
        .insertInto('webhook_deliveries')
        .values(
          rows.slice(i, i + INSERT_CHUNK).map((d) => ({
            id: d.id,
            job_id: d.jobId,
            url: d.url,
            payload: d.payloadJson,
            attempts: 0,
            next_attempt_at: now,
            status: 'PENDING',
            last_error: null,
            created_at: now,
            account_id: d.accountId ?? '',
            receiver: receiverKey(d.url),
          })),
        )
        .execute();
    }
  }
}
