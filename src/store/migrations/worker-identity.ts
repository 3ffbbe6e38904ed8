/**
 * Migration `0005-worker-identity`.
 *
 * - A worker row is keyed by (endpoint, worker id): a worker belongs to the endpoint it was
 *   launched for or first called through, so a call through another endpoint naming the same id
 *   is another worker and never moves this one. SQLite cannot change a primary key in place: the
 *   table is rebuilt.
 * - An API key may be bound to an endpoint (and a worker): the `worker` scope, admitted only on
 *   that endpoint's worker protocol. `api_keys_endpoint` finds an endpoint's keys to revoke them.
 * - Keys the autoscaler minted before (write scope, rate-limit exempt, one per endpoint) are
 *   revoked: a server that crashed left them valid, and no worker launched from now on uses one.
 * - So are the account-wide write keys `gantry worker env` minted before (named `worker
 *   <endpoint id>`, an endpoint id being 14 lowercase letters and digits): they sit in the
 *   environments of hand-attached workers, i.e. in worker code. Such a worker needs
 *   `gantry worker env` run again after the upgrade, which mints an endpoint-bound worker key.
 */
export const workerIdentity = (dialect: 'sqlite' | 'postgres'): string[] => {
  const nowMs =
    dialect === 'postgres'
      ? `(EXTRACT(EPOCH FROM now()) * 1000)::BIGINT`
      : `CAST(strftime('%s', 'now') AS INTEGER) * 1000`;
  const workerEnvKey =
    dialect === 'postgres' ? `name ~ '^worker [a-z0-9]{14}$'` : `name GLOB 'worker ${'[a-z0-9]'.repeat(14)}'`;
  const keys = [
    `UPDATE api_keys SET revoked_at = ${nowMs} WHERE revoked_at IS NULL AND rate_limit_exempt = 1 AND name LIKE 'workers of endpoint % (autoscaler)'`,
    `UPDATE api_keys SET revoked_at = ${nowMs} WHERE revoked_at IS NULL AND scope = 'write' AND ${workerEnvKey}`,
    `ALTER TABLE api_keys ADD COLUMN endpoint_id TEXT`,
    `ALTER TABLE api_keys ADD COLUMN worker_id TEXT`,
    `CREATE INDEX api_keys_endpoint ON api_keys(endpoint_id) WHERE endpoint_id IS NOT NULL`,
  ];
  if (dialect === 'postgres')
    return [
      `ALTER TABLE workers DROP CONSTRAINT workers_pkey`,
      `ALTER TABLE workers ADD PRIMARY KEY (endpoint_id, id)`,
      ...keys,
    ];
  return [
    `CREATE TABLE workers_0005 (
      id TEXT NOT NULL,
      endpoint_id TEXT NOT NULL,
      status TEXT NOT NULL,
      host_id TEXT,
      last_ping_at INTEGER,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (endpoint_id, id)
    )`,
    `INSERT INTO workers_0005 (id, endpoint_id, status, host_id, last_ping_at, created_at, updated_at)
      SELECT id, endpoint_id, status, host_id, last_ping_at, created_at, updated_at FROM workers`,
    `DROP TABLE workers`,
    `ALTER TABLE workers_0005 RENAME TO workers`,
    `CREATE INDEX workers_endpoint ON workers(endpoint_id, status)`,
    `CREATE INDEX workers_ping ON workers(last_ping_at)`,
    ...keys,
  ];
};
