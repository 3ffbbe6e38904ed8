import type SqliteDatabase from 'better-sqlite3';
import { receiverKey } from '../domain/webhook-url.js';
import type { WorkerResult } from './job-record.js';
import type { JobsTable } from './schema.js';

/**
 * The group-committed job writes (takes, workers' results) as SQLite runs them best: one prepared
 * statement per row, rebound, inside one synchronous transaction (`Db.syncTransaction`). The
 * set-based forms the job store uses elsewhere (`UPDATE … SET x = CASE id WHEN … END WHERE id IN
 * (…)`) must be built and compiled per batch, have a different text for every batch size, and
 * cost SQLite a comparison per row per case arm; in-process, many small statements beat them
 * (`capabilities.inProcess`).
 *
 * Every statement here keeps the guard of its set-based twin in `job-claims.ts`: a take claims
 * only an IN_QUEUE, unexpired job; a result applies only to a job IN_PROGRESS on that worker.
 */

export interface TakeRequest {
  endpointId: string;
  workerId: string;
  n: number;
}

export interface WebhookRow {
  id: string;
  jobId: string;
  url: string;
  payloadJson: string;
  /** @default '' */
  accountId?: string;
}

const SQL = {
  head: `SELECT id FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE' AND expires_at > ? ORDER BY seq LIMIT ?`,
  claim: `UPDATE jobs SET status = 'IN_PROGRESS', worker_id = ?, started_at = ?, delay_ms = ? - queued_at,
    timeout_at = ? + execution_timeout_ms, output = NULL, error = NULL
    WHERE id = ? AND status = 'IN_QUEUE' RETURNING *`,
  finish: `UPDATE jobs SET status = ?, output = ?, error = ?, completed_at = ?, execution_ms = ? - started_at,
    retain_until = CASE WHEN sync = 1 THEN ? ELSE ? END, timeout_at = NULL
    WHERE id = ? AND status = 'IN_PROGRESS' AND worker_id = ? AND endpoint_id = coalesce(?, endpoint_id) RETURNING *`,
  progress: `UPDATE jobs SET output = ? WHERE id = ? AND status = 'IN_PROGRESS' AND worker_id = ? AND endpoint_id = coalesce(?, endpoint_id) RETURNING *`,
  webhook: `INSERT INTO webhook_deliveries (id, job_id, url, payload, attempts, next_attempt_at, status, last_error, created_at, account_id, receiver)
    VALUES (?, ?, ?, ?, 0, ?, 'PENDING', NULL, ?, ?, ?)`,
} as const;

export class SqliteJobWrites {
  constructor(private readonly retention: { runMs: number; runsyncMs: number }) {}

  /**
   * Takes for several requests: per endpoint one read of the queue head (FIFO), dealt out to the
   * requests in order, each job claimed by its own guarded UPDATE. Answers each request's rows.
   */
  take(raw: SqliteDatabase.Database, requests: readonly TakeRequest[], now: number): JobsTable[][] {
    // `raw.prepare` answers from the connection's statement cache (see `Db.syncTransaction`)
    const head = raw.prepare<unknown[], { id: string }>(SQL.head);
    const claim = raw.prepare<unknown[], JobsTable>(SQL.claim);
    const results: JobsTable[][] = requests.map(() => []);
    const byEndpoint = new Map<string, number[]>();
    requests.forEach((r, i) => {
      if (r.n <= 0) return;
      const list = byEndpoint.get(r.endpointId);
      if (list) list.push(i);
      else byEndpoint.set(r.endpointId, [i]);
    });
    for (const [endpointId, indexes] of byEndpoint) {
      let total = 0;
      for (const i of indexes) total += requests[i]!.n;
      const ids = head.all(endpointId, now, total).map((r) => r.id);
      let next = 0;
      for (const i of indexes) {
        const request = requests[i]!;
        for (let k = 0; k < request.n && next < ids.length; k++) {
          const row = claim.get(request.workerId, now, now, now, ids[next++]);
          if (row) results[i]!.push(row);
        }
      }
    }
    return results;
  }

  /**
   * Applies workers' posts: first the first result of each job, in order of arrival, then progress
   * posts and repeated results one by one, in order (so a progress post in the same batch as its
   * job's result is dropped like any late progress). Answers the changed row per post, or null.
   */
  complete(raw: SqliteDatabase.Database, posts: readonly WorkerResult[], now: number): Array<JobsTable | null> {
    const finishStmt = raw.prepare<unknown[], JobsTable>(SQL.finish);
    const progress = raw.prepare<unknown[], JobsTable>(SQL.progress);
    const changed: Array<JobsTable | null> = posts.map(() => null);
    const seen = new Set<string>();
    const rest: number[] = [];
    const runsync = now + this.retention.runsyncMs;
    const run = now + this.retention.runMs;
    const finish = (p: WorkerResult): JobsTable | undefined =>
      finishStmt.get(
        p.status,
        p.status === 'COMPLETED' ? p.outputJson : null,
        p.status === 'FAILED' ? p.error : null,
        now,
        now,
        runsync,
        run,
        p.id,
        p.workerId,
        p.endpointId ?? null,
      );
    posts.forEach((p, i) => {
      if (p.status !== 'IN_PROGRESS' && !seen.has(p.id)) {
        seen.add(p.id);
        changed[i] = finish(p) ?? null;
      } else rest.push(i);
    });
    for (const i of rest) {
      const p = posts[i]!;
      changed[i] =
        (p.status === 'IN_PROGRESS' ? progress.get(p.outputJson, p.id, p.workerId, p.endpointId ?? null) : finish(p)) ??
        null;
    }
    return changed;
  }

  /** Outbox rows for finished jobs' webhooks, due now. */
  insertWebhooks(raw: SqliteDatabase.Database, rows: readonly WebhookRow[], now: number): void {
    const insert = raw.prepare<unknown[]>(SQL.webhook);
    for (const d of rows)
      insert.run(d.id, d.jobId, d.url, d.payloadJson, now, now, d.accountId ?? '', receiverKey(d.url));
  }
}
