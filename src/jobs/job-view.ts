/**
 * What clients and workers see of a job (wire-protocol §1–2). `s3Config` reaches the worker in
 * the take reply only; no status view, webhook or event carries it.
 */
import type { JobState, JobStatus } from '../domain/job-state.js';
import type { JobPolicy } from '../domain/job-policy.js';
import type { WebhookDeliveryStatus } from '../domain/webhook-delivery.js';
import type { JobRecord } from '../store/job-record.js';
import type { WebhookDelivery } from '../store/webhook-store.js';

/** An endpoint's recent jobs as `JobsService.recent` lists them. */
export type { JobListingPosition, JobSummary } from '../store/job-listing.js';

const parse = (json: string | null): unknown => (json === null ? undefined : (JSON.parse(json) as unknown));

/** The reply of `/status`, `/status-sync`, finished `/runsync`. */
export interface JobView {
  id: string;
  status: JobStatus;
  /** ms in the queue before a worker took it; present once taken. */
  delayTime?: number;
  /** ms a worker ran it; present once finished after running. */
  executionTime?: number;
  /** The result (COMPLETED) or the latest progress (IN_PROGRESS). */
  output?: unknown;
  error?: string;
  retries: number;
  workerId?: string;
  /** Jobs with a webhook, once finished: where its delivery stands (spec 6: durable, retried). */
  webhookDelivery?: WebhookDeliveryView;
}

export interface WebhookDeliveryView {
  status: WebhookDeliveryStatus;
  attempts: number;
  lastError?: string;
  /** ISO time of the next attempt, while PENDING. */
  nextAttemptAt?: string;
}

export function toWebhookDeliveryView(d: WebhookDelivery): WebhookDeliveryView {
  return {
    status: d.status,
    attempts: d.attempts,
    ...(d.lastError !== null ? { lastError: d.lastError } : {}),
    ...(d.status === 'PENDING' ? { nextAttemptAt: new Date(d.nextAttemptAt).toISOString() } : {}),
  };
}

export function toJobView(job: JobRecord): JobView {
  return {
    id: job.id,
    status: job.status,
    ...(job.delayMs !== null ? { delayTime: job.delayMs } : {}),
    ...(job.executionMs !== null ? { executionTime: job.executionMs } : {}),
    ...(job.outputJson !== null && (job.status === 'COMPLETED' || job.status === 'IN_PROGRESS')
      ? { output: parse(job.outputJson) }
      : {}),
    ...(job.error !== null ? { error: job.error } : {}),
    retries: job.retries,
    ...(job.workerId !== null ? { workerId: job.workerId } : {}),
  };
}

/** The body POSTed to a job's webhook: the status view plus `input` and `webhook`. */
export interface WebhookPayload extends JobView {
  input: unknown;
  webhook: string;
}

export function toWebhookPayload(job: JobRecord): WebhookPayload | null {
  if (job.webhook === null) return null;
  return { ...toJobView(job), input: parse(job.inputJson), webhook: job.webhook };
}

/** A job handed to a worker by `job-take`: extra keys reach the handler. */
export interface TakenJob {
  id: string;
  input: unknown;
  webhook?: string;
  s3Config?: unknown;
  policy: JobPolicy;
}

export function toTakenJob(job: JobRecord): TakenJob {
  const taken: TakenJob = { id: job.id, input: parse(job.inputJson), policy: job.policy };
  if (job.webhook !== null) taken.webhook = job.webhook;
  if (job.s3ConfigJson !== null) taken.s3Config = parse(job.s3ConfigJson);
  return taken;
}

/** Payload of the `job:completed`, `job:failed` and `job:timed_out` events. */
export interface JobEventPayload {
  job: JobView;
  endpointId: string;
  accountId: string;
  /** Present when the job carries a webhook; the delivery is already in the outbox. */
  webhook: WebhookPayload | null;
  at: number;
}

/** Whether clients still see the job: not past its ttl nor its retention (else 404, even before the timekeeper deletes it). */
export function isVisible(job: JobRecord, now: number): boolean {
  return job.expiresAt > now && (job.retainUntil === null || job.retainUntil > now);
}

/** The job as the state machine sees it (`nextJobState`). */
export const stateOf = (job: JobRecord): JobState => ({
  status: job.status,
  workerId: job.workerId,
  retries: job.retries,
  queuedAt: job.queuedAt,
  startedAt: job.startedAt,
  completedAt: job.completedAt,
  delayMs: job.delayMs,
  executionMs: job.executionMs,
  output: job.outputJson,
  error: job.error,
  stopRequested: job.stopRequested === 1,
});
