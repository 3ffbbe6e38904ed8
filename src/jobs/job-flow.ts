import type { JobRecord } from '../store/job-record.js';

/**
 * Where the jobs' moves are told, as this process commits them: what metrics count (submissions,
 * results, the queued and running jobs per endpoint) without reading the store. Each call comes
 * after the commit it reports; none may throw or await.
 */
export interface JobFlow {
  /** `n` jobs of the endpoint were queued by submissions. */
  submitted(endpointId: string, n: number): void;
  /** Queued jobs went IN_PROGRESS on a worker (their `delayMs` is set). */
  taken(jobs: readonly JobRecord[]): void;
  /** `n` jobs went back to the endpoint's queue: from a worker (`running`) or from a final state (`finished`, a retry). */
  requeued(endpointId: string, n: number, from: 'running' | 'finished'): void;
  /** Jobs reached a final state; `startedAt` tells whether they were running (else queued) before. */
  finished(jobs: readonly JobRecord[]): void;
  /** Jobs left the store without a final state (purge, ttl) while `status`. */
  removed(endpointId: string, status: 'IN_QUEUE' | 'IN_PROGRESS', n: number): void;
}
