/** The fleet's tables (hosts that joined, their GPUs and operations, the journal) and the system log. Conventions: `schema.ts`. */
import type { Generated } from 'kysely';

/** A one-time join token (migration 0009); only its hash is stored. */
export interface JoinTokensTable {
  /** sha256 of the token, hex */
  hash: string;
  data_center_id: string;
  cloud: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
  used_by_host: string | null;
}

/** A host whose agent joined (migration 0009). */
export interface HostsTable {
  id: string;
  name: string;
  /** sha256 of the host credential, hex */
  credential_hash: string;
  data_center_id: string;
  cloud: string;
  public_ip: string;
  port_first: number;
  port_last: number;
  /** JSON: the `HostCapacity` the agent last reported */
  capacity: string;
  agent_version: string;
  /** the last operation sequence number handed out for this host */
  op_seq: number;
  joined_at: number;
  last_report_at: number | null;
  revoked_at: number | null;
}

/** The GPUs of live hosts, by UUID: a GPU belongs to one host. */
export interface HostGpusTable {
  uuid: string;
  host_id: string;
}

/** An operation for a host's agent (migration 0009). */
export interface HostOperationsTable {
  id: string;
  host_id: string;
  seq: number;
  kind: string;
  instance_id: string | null;
  volume_id: string | null;
  /** the operation as JSON, sealed with the server's SecretBox */
  body: string;
  /** `pending` until acknowledged, then `acked` */
  state: 'pending' | 'acked';
  ack_ok: number | null;
  ack_error: string | null;
  created_at: number;
  acked_at: number | null;
}

/** What a replica told the others about the fleet (migration 0010; src/fleet/fleet-journal.ts). */
export interface FleetJournalTable {
  seq: Generated<number>;
  host_id: string;
  origin: string;
  /** a `JournalEntry` as JSON */
  entry: string;
  at: number;
}

/** The platform's own lines about a pod or worker (migration 0011; src/store/system-log-store.ts). */
export interface SystemLogTable {
  seq: Generated<number>;
  /** the pod id or the serverless worker id */
  instance_id: string;
  /** ms epoch */
  ts: number;
  line: string;
}
