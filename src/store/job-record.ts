import type { JobsTable } from './endpoint-tables.js';
import type { JobResultStatus, JobStatus } from '../domain/job-state.js';
import type { JobPolicy } from '../domain/job-policy.js';

/**
 * A job as the store answers it. JSON columns travel as text (`…Json`): the hot path never parses
 * what it only passes on.
 */
export interface JobRecord {
  id: string;
  endpointId: string;
  accountId: string;
  status: JobStatus;
  /** Queue order within the endpoint (FIFO); a retried job gets a new one, a requeued job keeps its own. */
  seq: number;
  inputJson: string;
  webhook: string | null;
  /** Never returned by views; handed to the worker only. */
  s3ConfigJson: string | null;
  policy: JobPolicy;
  sync: boolean;
  createdAt: number;
  queuedAt: number;
  startedAt: number | null;
  completedAt: number | null;
  expiresAt: number;
  retainUntil: number | null;
  timeoutAt: number | null;
  outputJson: string | null;
  error: string | null;
  workerId: string | null;
  retries: number;
  delayMs: number | null;
  executionMs: number | null;
  /** 0 none, 1 the worker must be told to stop this job, 2 it was told. */
  stopRequested: 0 | 1 | 2;
}

/** What a submission writes; the rest of the record starts empty. */
export type NewJob = Pick<
  JobRecord,
  'id' | 'endpointId' | 'accountId' | 'seq' | 'inputJson' | 'webhook' | 's3ConfigJson' | 'policy' | 'sync' | 'createdAt'
>;

/** A worker's post about a job it holds. `IN_PROGRESS` is a progress update (output only). */
export interface WorkerResult {
  id: string;
  workerId: string;
  /** The endpoint the post came through: it applies only to that endpoint's job. Unset: any. */
  endpointId?: string;
  status: JobResultStatus | 'IN_PROGRESS';
  outputJson: string | null;
  error: string | null;
}

/** A `jobs` row as a record. */
export const toJobRecord = (r: JobsTable): JobRecord => ({
  id: r.id,
  endpointId: r.endpoint_id,
  accountId: r.account_id,
  status: r.status,
  seq: Number(r.seq),
  inputJson: r.input,
  webhook: r.webhook,
  s3ConfigJson: r.s3_config,
  policy: {
    executionTimeout: Number(r.execution_timeout_ms),
    lowPriority: r.low_priority === 1,
    ttl: Number(r.ttl_ms),
  },
  sync: r.sync === 1,
  createdAt: Number(r.created_at),
  queuedAt: Number(r.queued_at),
  startedAt: r.started_at === null ? null : Number(r.started_at),
  completedAt: r.completed_at === null ? null : Number(r.completed_at),
  expiresAt: Number(r.expires_at),
  retainUntil: r.retain_until === null ? null : Number(r.retain_until),
  timeoutAt: r.timeout_at === null ? null : Number(r.timeout_at),
  outputJson: r.output,
  error: r.error,
  workerId: r.worker_id,
  retries: Number(r.retries),
  delayMs: r.delay_ms === null ? null : Number(r.delay_ms),
  executionMs: r.execution_ms === null ? null : Number(r.execution_ms),
  stopRequested: Number(r.stop_requested) as 0 | 1 | 2,
});
