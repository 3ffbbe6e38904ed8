/**
 * Migration `0013-billing-usage`: append-only usage intervals for what billing prices besides pods
 * (pods have `pod_usage` since 0001), so a bucket's cost is the intervals clipped to it × their
 * rate, exact to the millisecond, whatever was deleted or pruned since (docs/billing.md).
 * - `worker_usage`: one row per launched serverless worker, from its launch to its death, at the
 *   hourly price of what it holds (GPU type × count, or vCPUs) when launched.
 * - `volume_usage`: one row per network volume size, from creation (or a resize) to the next
 *   resize or its deletion. Volumes stored before it get an open interval from their creation.
 *
 * Index ↔ query map: `*_account` serves billing's reads (an account's intervals that overlap a
 * window); `*_open` serves the close (the open interval of one worker or volume).
 */
export function billingUsageTables(dialect: 'sqlite' | 'postgres'): string[] {
  const big = dialect === 'postgres' ? 'BIGINT' : 'INTEGER';
  const real = dialect === 'postgres' ? 'DOUBLE PRECISION' : 'REAL';
  return [
    `CREATE TABLE worker_usage (
      id TEXT PRIMARY KEY,
      worker_id TEXT NOT NULL,
      endpoint_id TEXT NOT NULL,
      account_id TEXT NOT NULL,
      kind TEXT NOT NULL,
      cost_per_hr ${real} NOT NULL,
      started_at ${big} NOT NULL,
      ended_at ${big}
    )`,
    `CREATE INDEX worker_usage_account ON worker_usage(account_id, started_at)`,
    `CREATE INDEX worker_usage_open ON worker_usage(endpoint_id, worker_id) WHERE ended_at IS NULL`,
    `CREATE TABLE volume_usage (
      id TEXT PRIMARY KEY,
      volume_id TEXT NOT NULL,
      account_id TEXT NOT NULL,
      size_gb INTEGER NOT NULL,
      started_at ${big} NOT NULL,
      ended_at ${big}
    )`,
    `CREATE INDEX volume_usage_account ON volume_usage(account_id, started_at)`,
    `CREATE INDEX volume_usage_open ON volume_usage(volume_id) WHERE ended_at IS NULL`,
    `INSERT INTO volume_usage (id, volume_id, account_id, size_gb, started_at, ended_at)
      SELECT 'vu-' || id, id, account_id, size, created_at, NULL FROM network_volumes`,
  ];
}
