import type SqliteDatabase from 'better-sqlite3';
import type { Db, Executor } from './database.js';
import { INSERT_CHUNK } from './job-sql.js';
import { prepareSync } from './compiled-statement.js';
import { webhookArgs, webhookRow, webhookValues } from './job-statement-values.js';
import { jobStatements } from './job-statements.js';

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
    for (let i = 0; i < rows.length; i += INSERT_CHUNK)
      await tx
        .insertInto('webhook_deliveries')
        .values(rows.slice(i, i + INSERT_CHUNK).map((d) => webhookRow(webhookArgs(d, now))))
        .execute();
  }

  /** `insertWebhookDeliveries` on SQLite's synchronous executor: one prepared insert, rebound per row. */
  insertRows(raw: SqliteDatabase.Database, rows: readonly NewWebhookDelivery[], now: number): void {
    const insert = prepareSync(raw, jobStatements(this.db).webhook);
    for (const d of rows) insert.run(webhookValues(d, now));
  }
}
