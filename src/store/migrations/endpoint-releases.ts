/**
 * Migration `0014-endpoint-releases`: an endpoint's configuration history and what its workers run.
 * - `endpoint_releases`: one row per change of what an endpoint's workers run (its container,
 *   GPUs, placement, volume, env; docs/serverless.md "Releases"), written in the transaction that
 *   changes the endpoint. `version` is the endpoint version the change produced; `diff` is JSON
 *   `[{field, old, new}]`. Every endpoint stored before it gets one release at its current version
 *   with an empty diff, so the history starts where the platform learned it.
 * - `workers.endpoint_version`: the endpoint version a launched worker was started with; null for
 *   workers attached by hand and for those launched before it (unknown).
 *
 * Index ↔ query map: `endpoint_releases_endpoint` serves the release list of one endpoint (newest
 * first) and the delete of an endpoint's history.
 */
export function endpointReleases(dialect: 'sqlite' | 'postgres'): string[] {
  const big = dialect === 'postgres' ? 'BIGINT' : 'INTEGER';
  return [
    `ALTER TABLE workers ADD COLUMN endpoint_version ${big}`,
    `CREATE TABLE endpoint_releases (
      id TEXT PRIMARY KEY,
      endpoint_id TEXT NOT NULL,
      account_id TEXT NOT NULL,
      version ${big} NOT NULL,
      source TEXT NOT NULL,
      diff TEXT NOT NULL,
      created_at ${big} NOT NULL
    )`,
    `CREATE UNIQUE INDEX endpoint_releases_endpoint ON endpoint_releases(endpoint_id, version)`,
    `INSERT INTO endpoint_releases (id, endpoint_id, account_id, version, source, diff, created_at)
      SELECT 'rel-' || id, id, account_id, version, 'MANUAL', '[]', updated_at FROM endpoints`,
  ];
}
