/** The tables of serverless endpoints: their jobs, workers, releases and webhook deliveries. Conventions: `schema.ts`. */
import type { JobStatus } from '../domain/job-state.js';
import type { WebhookDeliveryStatus } from '../domain/webhook-delivery.js';
import type { WorkerStatus } from '../domain/worker-state.js';

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
  /** Comma list of CPU instance ids (`cpu3g-4-16`): a CPU endpoint (migration 0021); empty for a GPU one. */
  instance_ids: string;
  /** Comma list of country codes or data-center ids; empty means any. */
  locations: string;
  network_volume_id: string | null;
  idle_timeout_s: number;
  scaler_type: string;
  scaler_value: number;
  workers_min: number;
  workers_max: number;
  flashboot: number;
  /** FlashBoot's keep time of a suspended worker, seconds (migration 0025); 600 for older rows. */
  flashboot_keep_s: number;
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
export interface JobStreamTable {
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
export interface JobUsageTable {
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
  /** When the worker was suspended (status `suspended`, migration 0024); null otherwise. */
  suspended_at: number | null;
}

/** A replica's load-balancing traffic of one endpoint (migration 0023; lb-demand-store.ts). */
export interface LbDemandTable {
  replica_id: string;
  endpoint_id: string;
  waiting: number;
  in_flight: number;
  /** JSON: `{ [workerId]: [requests held, last finished at (ms epoch)] }` */
  workers: string;
  updated_at: number;
}

/** A launched serverless worker's usage interval (migration 0013): append-only, closed when it dies. */
export interface WorkerUsageTable {
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
