/**
 * Table shapes shared by both dialects. Conventions that keep one code path for SQLite and
 * PostgreSQL: timestamps are epoch milliseconds (bigint), booleans are 0/1 integers, structured
 * values are JSON text.
 */
import type { Generated } from 'kysely';
import type { JobStatus } from '../domain/job-state.js';
import type { DesiredStatus, PodStatus } from '../domain/pod-state.js';
import type { WebhookDeliveryStatus } from '../domain/webhook-delivery.js';
import type { WorkerStatus } from '../domain/worker-state.js';

export interface AccountsTable {
  id: string;
  name: string;
  /** JSON array of authorized_keys lines. */
  ssh_keys: string;
  created_at: number;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string;
  scope: KeyScope;
  /** sha256 of the key, hex. The key itself is never stored. */
  hash: string;
  /** First characters of the key, to recognise it in listings. */
  prefix: string;
  rate_limit_exempt: number;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
  /** A `worker` key's endpoint: the only one whose worker protocol it may call (migration 0005). */
  endpoint_id: string | null;
  /** A `worker` key's worker id, when it is bound to one worker (keys of launched workers). */
  worker_id: string | null;
}

/**
 * What a key may do: `read`, `write`, or `worker` — only the worker protocol of one endpoint (and
 * of one worker id, when bound to one).
 */
export type KeyScope = 'read' | 'write' | 'worker';

export interface PodsTable {
  id: string;
  account_id: string;
  name: string;
  status: PodStatus;
  /** What the user asked for. The controller drives status toward it. */
  desired_status: DesiredStatus;
  status_reason: string | null;
  image: string;
  args: string;
  disk: number;
  /** JSON array of `<port>/<protocol>`. */
  ports: string;
  /** JSON object, the user's env as returned by GET. */
  env: string;
  /** JSON object, env injected by startSsh/startJupyter; never returned. */
  hidden_env: string;
  registry: string | null;
  gpu_type_id: string | null;
  gpu_count: number;
  /** JSON array of GPU indices on the host. */
  gpu_indices: string;
  cpu_flavor_id: string | null;
  vcpu_count: number;
  memory_gb: number;
  cloud: string;
  data_center_id: string | null;
  host_id: string | null;
  cuda_version: string | null;
  /** JSON: { persistent?: {size,path}, network?: [{volumeId,path}] } */
  mounts: string;
  /** JSON array of { private, public, type }: public ports reserved on the host. */
  port_mappings: string;
  template_id: string | null;
  locked: number;
  global_networking: number;
  global_ip: string | null;
  cost_per_hr: number;
  /** JSON: the placement constraints kept for restarts (cuda rules, dataCenterIds). */
  constraints: string;
  /** The cluster's id for a member pod, null for a standalone pod. */
  cluster: string | null;
  /** JSON `{ rank, role, ip }` of a cluster member (migration 0016); null for a standalone pod. */
  cluster_member: string | null;
  created_at: number;
  started_at: number | null;
  updated_at: number;
  terminated_at: number | null;
  /** 1 when the pod was created with `startSsh` (migration 0012): only those take SSH proxy sessions. */
  start_ssh: number;
  /** The SSH proxy's routing token, random and unique (migration 0012); null for none. */
  ssh_token: string | null;
  /** When the status last changed, epoch ms (migration 0018); null only on rows written before it. */
  status_changed_at: number | null;
}

export interface PodUsageTable {
  id: string;
  pod_id: string;
  account_id: string;
  cost_per_hr: number;
  started_at: number;
  ended_at: number | null;
}

/** A launched serverless worker's usage interval (migration 0013): append-only, closed when it dies. */
interface WorkerUsageTable {
  id: string;
  worker_id: string;
  endpoint_id: string;
  account_id: string;
  /** `gpu` or `cpu`: which amount of the bill it counts in. */
  kind: string;
  cost_per_hr: number;
  started_at: number;
  ended_at: number | null;
}

/** A network volume's size over an interval (migration 0013): a resize or the deletion closes it. */
interface VolumeUsageTable {
  id: string;
  volume_id: string;
  account_id: string;
  size_gb: number;
  started_at: number;
  ended_at: number | null;
}

export interface TemplatesTable {
  id: string;
  /** null for public catalog templates shipped with Gantry. */
  account_id: string | null;
  name: string;
  image: string;
  args: string;
  container_disk_gb: number;
  volume_gb: number;
  volume_mount_path: string | null;
  ports: string;
  env: string;
  registry_id: string | null;
  start_ssh: number;
  start_jupyter: number;
  allowed_cuda_versions: string;
  is_serverless: number;
  is_public: number;
  category: string;
  readme: string;
  created_at: number;
  updated_at: number;
}

export interface NetworkVolumesTable {
  id: string;
  account_id: string;
  name: string;
  size: number;
  data_center_id: string;
  created_at: number;
}

export interface RegistriesTable {
  id: string;
  account_id: string;
  name: string;
  /** AES-256-GCM ciphertexts, base64 (iv.tag.data). */
  username_enc: string;
  password_enc: string;
  created_at: number;
}

/** An ECR delegation an account registered (migration 0015). */
export interface RegistryDelegationsTable {
  id: string;
  account_id: string;
  name: string | null;
  /** The 12-digit AWS account id that owns the repository. */
  aws_account: string;
  aws_region: string;
  repository: string;
  tag: string;
  /** The ARN's partition: `aws`, `aws-cn` or `aws-us-gov`. */
  aws_partition: string;
  created_at: number;
}

/** A serverless endpoint (GraphQL saveEndpoint record; REST `GET /v2/serverless`). */
export interface EndpointsTable {
  id: string;
  account_id: string;
  name: string;
  template_id: string;
  /** `QB` queue-based or `LB` load balancing. */
  type: 'QB' | 'LB';
  /** Comma list of GPU pools (`ADA_24,AMPERE_48`). */
  gpu_ids: string;
  gpu_count: number;
  /** Comma list of region codes; empty means any. */
  locations: string;
  network_volume_id: string | null;
  idle_timeout_s: number;
  scaler_type: string;
  scaler_value: number;
  workers_min: number;
  workers_max: number;
  flashboot: number;
  /** JSON array of `major.minor`. */
  allowed_cuda_versions: string;
  /** Lowest host CUDA version, `major.minor` (migration 0018); null for no bound. */
  min_cuda_version: string | null;
  /** Default execution timeout of the endpoint's jobs; a job's policy overrides it. */
  execution_timeout_ms: number;
  /** JSON object string→string. */
  env: string;
  created_at: number;
  updated_at: number;
  version: number;
}

/** A queued job. Timestamps are epoch ms; `seq` orders the queue (FIFO per endpoint). */
export interface JobsTable {
  id: string;
  endpoint_id: string;
  account_id: string;
  status: JobStatus;
  seq: number;
  /** JSON text of the request's `input`. */
  input: string;
  webhook: string | null;
  /** JSON text of the request's `s3Config`; handed to the worker, never returned by views. */
  s3_config: string | null;
  execution_timeout_ms: number;
  low_priority: number;
  ttl_ms: number;
  /** 1 for `/runsync` jobs: shorter result retention. */
  sync: number;
  created_at: number;
  /** When the job last entered the queue (submission or retry); `delay_ms` counts from here. */
  queued_at: number;
  started_at: number | null;
  completed_at: number | null;
  /** created_at + ttl: the job is deleted then, whatever its state. */
  expires_at: number;
  /** completed_at + retention: a terminal job is deleted then. */
  retain_until: number | null;
  /** started_at + execution_timeout_ms while IN_PROGRESS. */
  timeout_at: number | null;
  /** JSON text: the result, or the latest progress output while IN_PROGRESS. */
  output: string | null;
  error: string | null;
  worker_id: string | null;
  retries: number;
  delay_ms: number | null;
  execution_ms: number | null;
  /** 0 none, 1 the worker must stop this job (not yet told), 2 the worker was told. */
  stop_requested: number;
  /**
   * The order of the take that last handed the job out: a later take of the same worker has a
   * larger one (migration 0019); null for jobs taken before it. Read only while IN_PROGRESS.
   */
  taken_seq: number | null;
}

/** Stream chunks a worker posted and no client has drained yet. */
interface JobStreamTable {
  job_id: string;
  seq: number;
  /** JSON text of one chunk's `output`. */
  output: string;
  created_at: number;
  /** The job's account, charged for the chunk's bytes (migration 0006; null on older rows). */
  account_id: string | null;
}

/**
 * Per-account counters of the job quotas, kept by triggers (migration 0006; on SQLite the job insert
 * adds its batch's deltas itself, migration 0017): jobs IN_QUEUE and
 * bytes of job inputs, outputs, errors and stream chunks. An account's figures are the sum of its
 * rows (one per writer shard).
 */
interface JobUsageTable {
  account_id: string;
  shard: number;
  queued_jobs: number;
  stored_bytes: number;
}

/** A serverless worker instance (minimal; the worker/autoscaler layer extends it). */
export interface WorkersTable {
  id: string;
  endpoint_id: string;
  status: WorkerStatus;
  host_id: string | null;
  last_ping_at: number | null;
  created_at: number;
  updated_at: number;
  /** JSON of what a launched worker holds on its host (`WorkerAllocation`); null for workers attached by hand. */
  allocation: string | null;
  /** The endpoint version a launched worker was started with; null when unknown (attached by hand, or before 0014). */
  endpoint_version: number | null;
}

/** An endpoint's configuration history (migration 0014): one row per change of what its workers run. */
export interface EndpointReleasesTable {
  id: string;
  endpoint_id: string;
  account_id: string;
  /** The endpoint version the change produced. */
  version: number;
  /** MANUAL (a configuration change through the API). */
  source: string;
  /** JSON `[{field, old, new}]`. */
  diff: string;
  created_at: number;
}

/** Outbox of webhook calls, written in the transaction that finalises the job. */
export interface WebhookDeliveriesTable {
  id: string;
  job_id: string;
  url: string;
  /** JSON text of the body to POST. */
  payload: string;
  attempts: number;
  next_attempt_at: number;
  status: WebhookDeliveryStatus;
  last_error: string | null;
  created_at: number;
  /** The job's account ('' for rows written before migration 0007 whose job was gone). */
  account_id: string;
  /** The URL's origin: what per-receiver fairness counts. */
  receiver: string;
}

/** A one-time join token (migration 0009); only its hash is stored. */
interface JoinTokensTable {
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
interface HostGpusTable {
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
interface FleetJournalTable {
  seq: Generated<number>;
  host_id: string;
  origin: string;
  /** a `JournalEntry` as JSON */
  entry: string;
  at: number;
}

/** The platform's own lines about a pod or worker (migration 0011; src/store/system-log-store.ts). */
/** A multi-node cluster (migration 0016, docs/clusters.md). */
export interface ClustersTable {
  id: string;
  account_id: string;
  name: string;
  /** APPLICATION, TRAINING, SLURM or RAY */
  type: string;
  gpu_type_id: string;
  gpu_count_per_pod: number;
  pod_count: number;
  /** The private overlay network, unique among clusters, e.g. `10.65.3.0/24`. */
  cidr: string;
  data_center_id: string | null;
  created_at: number;
}

interface SystemLogTable {
  seq: Generated<number>;
  /** the pod id or the serverless worker id */
  instance_id: string;
  /** ms epoch */
  ts: number;
  line: string;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  pods: PodsTable;
  clusters: ClustersTable;
  pod_usage: PodUsageTable;
  worker_usage: WorkerUsageTable;
  volume_usage: VolumeUsageTable;
  templates: TemplatesTable;
  network_volumes: NetworkVolumesTable;
  registries: RegistriesTable;
  registry_delegations: RegistryDelegationsTable;
  endpoints: EndpointsTable;
  jobs: JobsTable;
  job_stream: JobStreamTable;
  job_usage: JobUsageTable;
  workers: WorkersTable;
  endpoint_releases: EndpointReleasesTable;
  webhook_deliveries: WebhookDeliveriesTable;
  join_tokens: JoinTokensTable;
  hosts: HostsTable;
  host_gpus: HostGpusTable;
  host_operations: HostOperationsTable;
  fleet_journal: FleetJournalTable;
  system_log: SystemLogTable;
}
