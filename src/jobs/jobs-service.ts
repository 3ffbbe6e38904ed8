import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { Db } from '../store/database.js';
import type { GroupCommit } from '../store/group-commit.js';
import { openJobStore, type JobStore } from '../store/job-store.js';
import { ClientJobs, type ClientJobsDeps } from './client-jobs.js';
import { FinishedJobs } from './finished-jobs.js';
import { JobEvents, type JobEventSink } from './job-events.js';
import { JobSequence } from './job-sequence.js';
import { JobSignals } from './job-signals.js';
import { JobSweeper } from './job-sweeper.js';
import { DEFAULT_JOBS_CONFIG, type JobsConfig } from './jobs-config.js';
import { WorkerJobs } from './worker-jobs.js';
import type { JobFlow } from './job-flow.js';
import { WebhookStore } from '../store/webhook-store.js';
import { JobUsageStore } from '../store/job-usage.js';
import { JobListing, type RecentJobsPage, type RecentJobsQuery } from '../store/job-listing.js';
import { JobQuota } from '../quotas/job-quota.js';
import type { Quotas } from '../domain/quotas.js';

export interface JobsServiceDeps {
  db: Db;
  clock: Clock;
  config?: Partial<JobsConfig>;
  /** @default a private `JobEvents` */
  events?: JobEventSink;
  /** @default private in-process signals (pass shared ones to plug a cross-replica relay in) */
  signals?: JobSignals;
  /** The webhook address policy, for the submit-time check. @default none */
  webhookAddresses?: ClientJobsDeps['webhookAddresses'];
  /** Per-account job quotas (queued jobs, stored bytes, stream bytes per job). @default none */
  quotas?: Pick<Quotas, 'queuedJobs' | 'storedJobBytes' | 'streamBytesPerJob'>;
  /** Told of every job move this process commits (metrics). @default none */
  flow?: JobFlow;
  /** Where the worker side logs jobs a worker's own report gave back. @default none */
  logger?: Pick<Logger, 'warn'>;
}

/**
 * The queue, wired: its three sides over one job store, one set of signals and one sequence.
 * Callers use the sides directly — `client` (the client API: submit, runsync, status, stream,
 * cancel, retry, purge, queue stats), `worker` (the worker protocol: take, release, results,
 * stream chunks, stop requests, lost workers) and `sweeper` (the timekeeper's pass). They share
 * the queue positions (`JobSequence`) and what follows a job's end (`FinishedJobs`).
 *
 * Submissions, results and stream chunks go through group commit; long-polls wait on in-process
 * signals. Every client method checks the job belongs to the caller's account and endpoint, and
 * hides expired jobs (404), even before the timekeeper deletes them.
 */
export class JobsService {
  readonly store: JobStore;
  readonly signals: JobSignals;
  readonly events: JobEventSink;
  readonly config: JobsConfig;
  readonly client: ClientJobs;
  readonly worker: WorkerJobs;
  readonly sweeper: JobSweeper;
  readonly #listing: JobListing;

  constructor(deps: JobsServiceDeps) {
    const { db, clock } = deps;
    this.config = { ...DEFAULT_JOBS_CONFIG, ...deps.config };
    this.store = openJobStore(db, { retention: this.config.retention });
    this.#listing = new JobListing(db);
    this.signals = deps.signals ?? new JobSignals();
    this.events = deps.events ?? new JobEvents();
    const { store, signals, events } = this;
    const sequence = new JobSequence({ store, clock });
    const quota = deps.quotas
      ? new JobQuota({
          usage: new JobUsageStore(db),
          clock,
          quotas: deps.quotas,
          refreshMs: this.config.quotaRefreshMs,
        })
      : undefined;
    const flow = deps.flow ? { flow: deps.flow } : {};
    const finished = new FinishedJobs({ store, clock, signals, events, ...(quota ? { quota } : {}), ...flow });
    const batching = { maxBatchSize: this.config.maxBatchSize, concurrency: this.config.commitConcurrency };
    this.client = new ClientJobs({
      store,
      webhooks: new WebhookStore(db),
      clock,
      signals,
      events,
      sequence,
      finished,
      batching,
      webhookAddresses: deps.webhookAddresses,
      ...(quota ? { quota } : {}),
      ...flow,
    });
    this.worker = new WorkerJobs({
      db,
      store,
      clock,
      signals,
      sequence,
      finished,
      retryBudget: this.config.retryBudget,
      settleMs: this.config.heartbeatTimeoutMs,
      batching,
      ...(deps.logger ? { logger: deps.logger } : {}),
      ...(quota ? { quota } : {}),
      ...flow,
    });
    this.sweeper = new JobSweeper({
      db,
      store,
      clock,
      signals,
      finished,
      sweepLimit: this.config.sweepLimit,
      usage: new JobUsageStore(db),
      ...flow,
    });
  }

  /** Resolves once every accepted submission, result and chunk is committed. */
  async flush(): Promise<void> {
    await Promise.all([this.client.flush(), this.worker.flush()]);
  }

  /** The job path's group commits by name, to observe their batches (metrics). */
  get groupCommits(): Record<string, Pick<GroupCommit<unknown, unknown>, 'observe'>> {
    return { submits: this.client.groupCommit, ...this.worker.groupCommits };
  }

  /** Group-commit counters (batches, items), for benchmarks and metrics. */
  get batchStats(): Record<'submits' | 'takes' | 'posts', GroupCommit<unknown, unknown>['stats']> {
    return { submits: this.client.batchStats, ...this.worker.batchStats };
  }

  /** A page of an endpoint's recent jobs, newest first (`GET /v2/{endpoint}/requests`): never their input or output. */
  recent(accountId: string, endpointId: string, query: RecentJobsQuery): Promise<RecentJobsPage> {
    return this.#listing.recent(accountId, endpointId, query);
  }
}
