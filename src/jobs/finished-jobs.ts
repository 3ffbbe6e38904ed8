import type { Clock } from '../domain/clock.js';
import { newId } from '../domain/ids.js';
import type { Executor } from '../store/database.js';
import type { JobRecord } from '../store/job-record.js';
import type { JobStore } from '../store/job-store.js';
import type { NewWebhookDelivery } from '../store/job-webhook-outbox.js';
import type { JobEventSink } from './job-events.js';
import { stopKey, type JobSignals } from './job-signals.js';
import { toJobView, toWebhookPayload } from './job-view.js';
import type { JobFlow } from './job-flow.js';

export interface FinishedJobsDeps {
  store: { outbox: Pick<JobStore['outbox'], 'insertWebhookDeliveries'> };
  clock: Clock;
  signals: JobSignals;
  events: JobEventSink;
  /** The job quotas, told a job ended (its in-memory stream figure goes). @default none */
  quota?: { jobFinished(jobId: string): void };
  /** Told of every job that reached a final state (metrics). @default none */
  flow?: Pick<JobFlow, 'finished'>;
}

/**
 * What follows a job's end, however it ended (a worker's result, cancel, timeout, lost worker):
 * its webhook goes to the outbox in the transaction that finished it; after the commit its
 * waiters wake, its worker is told to stop, and its event is emitted.
 */
export class FinishedJobs {
  readonly #deps: FinishedJobsDeps;
  readonly #finished = new Map<string, JobRecord>();

  constructor(deps: FinishedJobsDeps) {
    this.#deps = deps;
  }

  /** The webhook outbox rows of finished jobs, in the transaction that finished them. */
  async enqueueWebhooks(jobs: readonly JobRecord[], now: number, tx: Executor): Promise<void> {
    const deliveries = this.webhooksOf(jobs);
    if (deliveries.length) await this.#deps.store.outbox.insertWebhookDeliveries(deliveries, now, tx);
  }

  /** The outbox rows for the jobs among `jobs` that finished with a webhook to call. */
  webhooksOf(jobs: ReadonlyArray<JobRecord | null>): NewWebhookDelivery[] {
    return jobs.flatMap((job) => {
      if (!job || (job.status !== 'COMPLETED' && job.status !== 'FAILED' && job.status !== 'TIMED_OUT')) return [];
      const payload = toWebhookPayload(job);
      return payload
        ? [
            {
              id: newId(20),
              jobId: job.id,
              accountId: job.accountId,
              url: payload.webhook,
              payloadJson: JSON.stringify(payload),
            },
          ]
        : [];
    });
  }

  /** After commit: wake waiters, tell workers to stop, emit events. */
  announce(jobs: readonly JobRecord[]): void {
    const { signals, events } = this.#deps;
    const now = this.#deps.clock.now();
    if (jobs.length > 0) this.#deps.flow?.finished(jobs);
    for (const job of jobs) {
      if (signals.waiting('job', job.id) > 0) this.#hold(job);
      signals.notify('job', job.id);
      signals.notify('stream', job.id);
      // Keyed by endpoint too: a worker id alone is not secret (job replies show it), and another account's worker may use it.
      if (job.stopRequested === 1 && job.workerId) signals.notify('stop', stopKey(job.endpointId, job.workerId));
      this.#deps.quota?.jobFinished(job.id);
      const name =
        job.status === 'COMPLETED'
          ? 'job:completed'
          : job.status === 'FAILED'
            ? 'job:failed'
            : job.status === 'TIMED_OUT'
              ? 'job:timed_out'
              : null;
      if (name)
        events.emit(name, {
          job: toJobView(job),
          endpointId: job.endpointId,
          accountId: job.accountId,
          webhook: toWebhookPayload(job),
          at: now,
        });
    }
  }

  /** The row that just finished the job, while the waiters its commit woke still run; else undefined. */
  held(jobId: string): JobRecord | undefined {
    return this.#finished.get(jobId);
  }

  /**
   * Keeps a just-finished row for the waiters its commit wakes (they run before the next turn of
   * the event loop), so `/runsync` and `/status-sync` answer without reading it back.
   */
  #hold(job: JobRecord): void {
    if (this.#finished.size === 0) setImmediate(() => this.#finished.clear());
    this.#finished.set(job.id, job);
  }
}
