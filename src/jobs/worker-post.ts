import type { JobEvent, JobRefusal, JobStatus } from '../domain/job-state.js';
import type { WorkerResult } from '../store/job-record.js';

/** A worker's job-done body, parsed: the result to apply, and whether the worker asks to stop its pod. */
export interface WorkerPost {
  result: WorkerResult;
  stopPod: boolean;
}

/** What became of a worker's post. The HTTP layer answers 200 for `applied` and `ignored`. */
export type WorkerPostOutcome =
  | { outcome: 'applied'; status: JobStatus; stopPod: boolean }
  /** Late progress, a repeated result, a result for a cancelled/timed-out job: a no-op success. */
  | { outcome: 'ignored'; status: JobStatus; reason: string; stopPod: boolean }
  /** The job is queued again or held by another worker. */
  | { outcome: 'refused'; refusal: JobRefusal; stopPod: boolean }
  /** No such job, or it expired. */
  | { outcome: 'not-found'; stopPod: boolean };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A worker's job-done body (wire-protocol §1) as a result: `error` wins over `output`. */
export function parseWorkerPost(jobId: string, workerId: string, body: unknown, endpointId?: string): WorkerPost {
  const post = parse(jobId, workerId, body);
  if (endpointId !== undefined) post.result.endpointId = endpointId;
  return post;
}

function parse(jobId: string, workerId: string, body: unknown): WorkerPost {
  const b = isObject(body) ? body : { output: body };
  const stopPod = b.stopPod === true;
  const outputJson = b.output === undefined ? null : JSON.stringify(b.output);
  if (b.error !== undefined && b.error !== null && b.error !== '') {
    // A worker's message may quote binary output; PostgreSQL text cannot hold NUL, and refusing
    // the post would leave the job to be retried for the same failure, so NUL becomes U+FFFD.
    const error = typeof b.error === 'string' ? b.error.replaceAll('\u0000', '\uFFFD') : JSON.stringify(b.error);
    return { result: { id: jobId, workerId, status: 'FAILED', outputJson: null, error }, stopPod };
  }
  if (b.status === 'IN_PROGRESS')
    return { result: { id: jobId, workerId, status: 'IN_PROGRESS', outputJson, error: null }, stopPod };
  return { result: { id: jobId, workerId, status: 'COMPLETED', outputJson, error: null }, stopPod };
}

/** The state-machine event a worker's result is. */
export const workerResultEvent = (r: WorkerResult): JobEvent =>
  r.status === 'FAILED'
    ? { type: 'fail', workerId: r.workerId, error: r.error ?? '' }
    : r.status === 'IN_PROGRESS'
      ? { type: 'progress', workerId: r.workerId, output: r.outputJson }
      : { type: 'complete', workerId: r.workerId, output: r.outputJson };
