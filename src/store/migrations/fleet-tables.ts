import type { DialectTypes } from './tables.js';

/**
 * Migration `0009-fleet`: the control plane's side of the agent protocol (docs/fleet.md).
 *
 * - `join_tokens`: one-time tokens, by the SHA-256 of the token (the token itself is never
 *   stored). A join spends one with a conditional update (`used_at IS NULL AND expires_at > now`),
 *   so two replicas never both accept it.
 * - `hosts`: a joined host, its credential by SHA-256, where it sits, its capacity (JSON, as the
 *   agent reported it), the per-host operation counter `op_seq`, its last report and its
 *   revocation. Rows are never deleted: a revoked host keeps its record (pods name it).
 * - `host_gpus`: the GPU UUIDs of live hosts, one row each: the primary key is the rule "a GPU
 *   belongs to one host" (two replicas joining the same GPU at once cannot both win). A revoked
 *   host's rows go with the revocation, so the machine may join again.
 * - `host_operations`: what the control plane asks of an agent, pending until acknowledged, in
 *   per-host `seq` order. `body` is the operation sealed with the server's secret key (an
 *   instance spec holds tenant env and registry passwords); `kind`, `instance_id` and `volume_id`
 *   stay in clear for lookups. Acknowledged rows are pruned after an hour.
 *
 * Index ↔ query map:
 * - `host_operations_pending (host_id, seq)`, partial on pending: an agent's long-poll.
 * - `host_operations_acked (acked_at)`, partial on acked: the prune.
 * - `hosts_revoked (revoked_at)`, partial: replicas learn revocations made elsewhere (the CLI).
 * - `join_tokens_expires (expires_at)`: the prune of spent and expired tokens.
 */
export const fleetTables = ({ big }: DialectTypes): string[] => [
  `CREATE TABLE join_tokens (
    hash TEXT PRIMARY KEY,
    data_center_id TEXT NOT NULL,
    cloud TEXT NOT NULL,
    created_at ${big} NOT NULL,
    expires_at ${big} NOT NULL,
    used_at ${big},
    used_by_host TEXT
  )`,
  `CREATE INDEX join_tokens_expires ON join_tokens(expires_at)`,
  `CREATE TABLE hosts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    credential_hash TEXT NOT NULL UNIQUE,
    data_center_id TEXT NOT NULL,
    cloud TEXT NOT NULL,
    public_ip TEXT NOT NULL,
    port_first INTEGER NOT NULL,
    port_last INTEGER NOT NULL,
    capacity TEXT NOT NULL,
    agent_version TEXT NOT NULL,
    op_seq ${big} NOT NULL DEFAULT 0,
    joined_at ${big} NOT NULL,
    last_report_at ${big},
    revoked_at ${big}
  )`,
  `CREATE INDEX hosts_revoked ON hosts(revoked_at) WHERE revoked_at IS NOT NULL`,
  `CREATE TABLE host_gpus (
    uuid TEXT PRIMARY KEY,
    host_id TEXT NOT NULL REFERENCES hosts(id)
  )`,
  `CREATE INDEX host_gpus_host ON host_gpus(host_id)`,
  `CREATE TABLE host_operations (
    id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL REFERENCES hosts(id),
    seq ${big} NOT NULL,
    kind TEXT NOT NULL,
    instance_id TEXT,
    volume_id TEXT,
    body TEXT NOT NULL,
    state TEXT NOT NULL,
    ack_ok INTEGER,
    ack_error TEXT,
    created_at ${big} NOT NULL,
    acked_at ${big},
    UNIQUE (host_id, seq)
  )`,
  `CREATE INDEX host_operations_pending ON host_operations(host_id, seq) WHERE state = 'pending'`,
  `CREATE INDEX host_operations_acked ON host_operations(acked_at) WHERE state = 'acked'`,
];

/**
 * Migration `0010-fleet-journal`: what one control-plane replica tells the others about the fleet
 * (src/fleet/fleet-journal.ts). Each replica's fleet runtime keeps the agents' last word in memory;
 * with several replicas on one PostgreSQL database, the replica an agent talks to (or the one that
 * queued an operation) appends what it learned here, and the others read it in `seq` order. Rows
 * are pruned after ten minutes: a replica away longer starts again from the records and a full
 * report of every host. SQLite (one process) never writes it.
 *
 * Index ↔ query map: the primary key serves the readers (`seq > cursor`), `fleet_journal_at` the prune.
 */
export const fleetJournalTable = (dialect: 'sqlite' | 'postgres'): string[] => [
  `CREATE TABLE fleet_journal (
    seq ${dialect === 'postgres' ? 'BIGSERIAL PRIMARY KEY' : 'INTEGER PRIMARY KEY AUTOINCREMENT'},
    host_id TEXT NOT NULL,
    origin TEXT NOT NULL,
    entry TEXT NOT NULL,
    at ${dialect === 'postgres' ? 'BIGINT' : 'INTEGER'} NOT NULL
  )`,
  `CREATE INDEX fleet_journal_at ON fleet_journal(at)`,
];
