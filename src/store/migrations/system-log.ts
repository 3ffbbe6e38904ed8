/**
 * Migration `0011-system-log`: the platform's own lines about a pod or a serverless worker (placed
 * on a host, pulling, started, exited with code N, why it failed), the `system` source of the log
 * stream (docs/logs.md). Every replica writes and reads it, so a follower on one replica sees the
 * lines another wrote. At most ~1,000 lines are kept per instance (src/store/system-log-store.ts).
 *
 * Index ↔ query map: `system_log_instance` serves the reads (one instance's lines by time, by seq)
 * and the per-instance bound; the primary key serves the shared poll (`seq > cursor`).
 */
export const systemLogTable = (dialect: 'sqlite' | 'postgres'): string[] => [
  `CREATE TABLE system_log (
    seq ${dialect === 'postgres' ? 'BIGSERIAL PRIMARY KEY' : 'INTEGER PRIMARY KEY AUTOINCREMENT'},
    instance_id TEXT NOT NULL,
    ts ${dialect === 'postgres' ? 'BIGINT' : 'INTEGER'} NOT NULL,
    line TEXT NOT NULL
  )`,
  `CREATE INDEX system_log_instance ON system_log(instance_id, seq)`,
];
