import type { UnfinishedJobStatus } from '../domain/job-state.js';
import type { JobRecord } from '../store/job-record.js';
import type { JobFlow } from '../jobs/job-flow.js';

/** A count per endpoint of its jobs in one status, as one read of the store answers it. */
export interface JobCountRow {
  endpointId: string;
  status: UnfinishedJobStatus;
  n: number;
}

const bump = (m: Map<string, number>, key: string, by: number): void => {
  const n = (m.get(key) ?? 0) + by;
  if (n > 0) m.set(key, n);
  else m.delete(key);
};

/**
 * Queued and running jobs per endpoint, in memory: set from one read of the store (`reset`, at
 * start and at each background refresh), and moved in between by every submission, take, requeue,
 * result, purge and ttl deletion this process commits (a `JobFlow` tells them). A scrape reads
 * these maps: no query, however many jobs are queued.
 */
export class JobGauges implements Pick<JobFlow, 'submitted' | 'taken' | 'requeued' | 'finished' | 'removed'> {
  readonly queued = new Map<string, number>();
  readonly running = new Map<string, number>();

  /** Replaces every count with what the store answered. */
  reset(rows: readonly JobCountRow[]): void {
    this.queued.clear();
    this.running.clear();
    for (const r of rows) bump(r.status === 'IN_QUEUE' ? this.queued : this.running, r.endpointId, r.n);
  }

  submitted(endpointId: string, n: number): void {
    bump(this.queued, endpointId, n);
  }

  taken(jobs: readonly JobRecord[]): void {
    for (const j of jobs) {
      bump(this.queued, j.endpointId, -1);
      bump(this.running, j.endpointId, 1);
    }
  }

  requeued(endpointId: string, n: number, from: 'running' | 'finished'): void {
    if (from === 'running') bump(this.running, endpointId, -n);
    bump(this.queued, endpointId, n);
  }

  finished(jobs: readonly JobRecord[]): void {
    // Every path back to the queue clears startedAt: a final job with one was running.
    for (const j of jobs) bump(j.startedAt !== null ? this.running : this.queued, j.endpointId, -1);
  }

  removed(endpointId: string, status: UnfinishedJobStatus, n: number): void {
    bump(status === 'IN_QUEUE' ? this.queued : this.running, endpointId, -n);
  }
}
