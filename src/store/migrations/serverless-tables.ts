import { sql, type Kysely } from 'kysely';
import { receiverKey } from '../../domain/webhook-url.js';
import type { DialectTypes } from './tables.js';

/**
 * DDL of migration `0002-serverless`: endpoints, jobs (+ their stream buffer), workers and the
 * webhook outbox. Written once with the dialects' type names as parameters, like `tables.ts`.
 *
 * Jobs carry no foreign keys on purpose: the insert path is the hottest write in the system and a
 * job outlives nothing it points to (ttl ≤ 7 days; an endpoint is deleted only when it has no
 * workers, and its jobs expire on their own).
 *
 * Index ↔ query map (every hot query is an index range scan):
 * - `jobs_take (endpoint_id, status, seq)`: take the next IN_QUEUE jobs of an endpoint in FIFO
 *   order; `/health`'s counts by status (covering).
 * - `jobs_retried (endpoint_id, retries)`, partial on retries > 0 (migration 0004): `/health`'s retried count.
 * - `jobs_expires (expires_at)`: ttl expiry, any state.
 * - `jobs_retain (retain_until)`, partial: result retention of terminal jobs.
 * - `jobs_timeout (timeout_at)`, partial on IN_PROGRESS: execution-timeout enforcement.
 * - `jobs_worker (worker_id)`, partial on IN_PROGRESS: requeue the jobs of a lost worker.
 * - `jobs_stop (worker_id)`, partial on stop_requested = 1: a worker's job-stop channel.
 */
export const serverlessTables = ({ big }: DialectTypes): string[] => [
  `CREATE TABLE endpoints (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    template_id TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT 'QB',
    gpu_ids TEXT NOT NULL DEFAULT '',
    gpu_count INTEGER NOT NULL DEFAULT 1,
    locations TEXT NOT NULL DEFAULT '',
    network_volume_id TEXT,
    idle_timeout_s INTEGER NOT NULL DEFAULT 5,
    scaler_type TEXT NOT NULL DEFAULT 'QUEUE_DELAY',
    scaler_value INTEGER NOT NULL DEFAULT 4,
    workers_min INTEGER NOT NULL DEFAULT 0,
    workers_max INTEGER NOT NULL DEFAULT 3,
    flashboot INTEGER NOT NULL DEFAULT 0,
    allowed_cuda_versions TEXT NOT NULL DEFAULT '[]',
    execution_timeout_ms ${big} NOT NULL DEFAULT 600000,
    env TEXT NOT NULL DEFAULT '{}',
    created_at ${big} NOT NULL,
    updated_at ${big} NOT NULL,
    version INTEGER NOT NULL DEFAULT 1
  )`,
  `CREATE INDEX endpoints_account ON endpoints(account_id, created_at)`,
  `CREATE INDEX endpoints_template ON endpoints(template_id)`,
  `CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL,
    account_id TEXT NOT NULL,
    status TEXT NOT NULL,
    seq ${big} NOT NULL,
    input TEXT NOT NULL,
    webhook TEXT,
    s3_config TEXT,
    execution_timeout_ms ${big} NOT NULL,
    low_priority INTEGER NOT NULL DEFAULT 0,
    ttl_ms ${big} NOT NULL,
    sync INTEGER NOT NULL DEFAULT 0,
    created_at ${big} NOT NULL,
    queued_at ${big} NOT NULL,
    started_at ${big},
    completed_at ${big},
    expires_at ${big} NOT NULL,
    retain_until ${big},
    timeout_at ${big},
    output TEXT,
    error TEXT,
    worker_id TEXT,
    retries INTEGER NOT NULL DEFAULT 0,
    delay_ms ${big},
    execution_ms ${big},
    stop_requested INTEGER NOT NULL DEFAULT 0
  )`,
  `CREATE INDEX jobs_take ON jobs(endpoint_id, status, seq)`,
  `CREATE INDEX jobs_expires ON jobs(expires_at)`,
  `CREATE INDEX jobs_retain ON jobs(retain_until) WHERE retain_until IS NOT NULL`,
  `CREATE INDEX jobs_timeout ON jobs(timeout_at) WHERE status = 'IN_PROGRESS'`,
  `CREATE INDEX jobs_worker ON jobs(worker_id) WHERE status = 'IN_PROGRESS'`,
  `CREATE INDEX jobs_stop ON jobs(worker_id) WHERE stop_requested = 1`,
  `CREATE TABLE job_stream (
    job_id TEXT NOT NULL,
    seq ${big} NOT NULL,
    output TEXT NOT NULL,
    created_at ${big} NOT NULL,
    PRIMARY KEY (job_id, seq)
  )`,
  `CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL,
    status TEXT NOT NULL,
    host_id TEXT,
    last_ping_at ${big},
    created_at ${big} NOT NULL,
    updated_at ${big} NOT NULL
  )`,
  `CREATE INDEX workers_endpoint ON workers(endpoint_id, status)`,
  `CREATE INDEX workers_ping ON workers(last_ping_at)`,
  `CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    url TEXT NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at ${big} NOT NULL,
    status TEXT NOT NULL DEFAULT 'PENDING',
    last_error TEXT,
    created_at ${big} NOT NULL
  )`,
  `CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_attempt_at)`,
];

/** Migration `0003-webhook-deliveries-by-job`: a job's deliveries, for its status view. */
export const webhookDeliveriesByJob = (): string[] => [
  `CREATE INDEX webhook_deliveries_job ON webhook_deliveries(job_id, created_at)`,
];

/**
 * Migration `0007-webhook-fairness`: deliveries carry their job's account and their receiver (the
 * URL's origin), so the dispatcher serves accounts in turn and caps calls per account and per
 * receiver. `webhook_deliveries_account_due (status, account_id, next_attempt_at, id)`: the accounts
 * with PENDING rows are found by skipping through it (one seek per account), and an account's due
 * rows are an index range in due order. Receivers of rows already pending are filled in by
 * `backfillWebhookReceivers`.
 */
export const webhookFairness = (): string[] => [
  `ALTER TABLE webhook_deliveries ADD COLUMN account_id TEXT NOT NULL DEFAULT ''`,
  `ALTER TABLE webhook_deliveries ADD COLUMN receiver TEXT NOT NULL DEFAULT ''`,
  `UPDATE webhook_deliveries SET account_id = COALESCE((SELECT j.account_id FROM jobs j WHERE j.id = webhook_deliveries.job_id), '') WHERE status = 'PENDING'`,
  `CREATE INDEX webhook_deliveries_account_due ON webhook_deliveries(status, account_id, next_attempt_at, id)`,
];

/**
 * Migration `0004-jobs-retried`: `/health`'s retried count from an index. Partial: only jobs that
 * went back to the queue have an entry, so inserts pay nothing for it.
 */
export const jobsRetriedIndex = (): string[] => [
  `CREATE INDEX jobs_retried ON jobs(endpoint_id, retries) WHERE retries > 0`,
];

/** Part of migration 0007: the receiver of every PENDING row, from its URL (SQL cannot parse one). */
export async function backfillWebhookReceivers(db: Kysely<unknown>): Promise<void> {
  const rows = await sql<{
    id: string;
    url: string;
  }>`SELECT id, url FROM webhook_deliveries WHERE status = 'PENDING'`.execute(db);
  for (const { id, url } of rows.rows)
    await sql`UPDATE webhook_deliveries SET receiver = ${receiverKey(url)} WHERE id = ${id}`.execute(db);
}
