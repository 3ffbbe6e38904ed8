/**
 * Migration `0023-lb-demand`: what each control-plane replica's load balancer holds of a
 * load-balancing endpoint's traffic (docs/load-balancing.md, "Replicas"), so that the replica
 * driving the autoscaler scales on every replica's requests, not only its own.
 * - `lb_demand`: one row per (replica, endpoint) with requests waiting or held there, or workers it
 *   sent requests to: `waiting`, `in_flight`, `workers` (JSON: per worker id, the requests it
 *   holds from that replica and when it last finished one), `updated_at` (the replica's heartbeat;
 *   a row older than the TTL is the demand of a replica gone, and counts for nothing).
 *
 * Index ↔ query map: the primary key serves a replica's upsert and withdrawal; the reads take
 * every fresh row (a handful per endpoint), `lb_demand_updated` serves the prune of stale rows.
 */
export function lbDemandTable(dialect: 'sqlite' | 'postgres'): string[] {
  const big = dialect === 'postgres' ? 'BIGINT' : 'INTEGER';
  return [
    `CREATE TABLE lb_demand (
      replica_id TEXT NOT NULL,
      endpoint_id TEXT NOT NULL,
      waiting INTEGER NOT NULL,
      in_flight INTEGER NOT NULL,
      workers TEXT NOT NULL,
      updated_at ${big} NOT NULL,
      PRIMARY KEY (replica_id, endpoint_id)
    )`,
    `CREATE INDEX lb_demand_updated ON lb_demand(updated_at)`,
  ];
}
