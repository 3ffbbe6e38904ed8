/**
 * Migration `0016-clusters`: multi-node clusters (spec 2.7, docs/clusters.md).
 * - `clusters`: one row per cluster, its homogeneous shape and its private overlay CIDR. The
 *   unique `cidr` index is what makes two concurrent creates (on any replica) take different
 *   networks: the loser's insert fails and it takes the next free one.
 * - `pods.cluster_member`: JSON `{ rank, role, ip }` of a member pod (null for standalone pods);
 *   `pods.cluster` (since 0001) holds the cluster's id.
 *
 * Index ↔ query map: `clusters_account` serves an account's list (oldest first);
 * `pods_cluster` serves a cluster's members.
 */
export function clusterTables(dialect: 'sqlite' | 'postgres'): string[] {
  const big = dialect === 'postgres' ? 'BIGINT' : 'INTEGER';
  return [
    `CREATE TABLE clusters (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      name TEXT NOT NULL,
      type TEXT NOT NULL,
      gpu_type_id TEXT NOT NULL,
      gpu_count_per_pod INTEGER NOT NULL,
      pod_count INTEGER NOT NULL,
      cidr TEXT NOT NULL,
      data_center_id TEXT,
      created_at ${big} NOT NULL
    )`,
    `CREATE INDEX clusters_account ON clusters(account_id, created_at)`,
    `CREATE UNIQUE INDEX clusters_cidr ON clusters(cidr)`,
    `ALTER TABLE pods ADD COLUMN cluster_member TEXT`,
    `CREATE INDEX pods_cluster ON pods(cluster) WHERE cluster IS NOT NULL`,
  ];
}
