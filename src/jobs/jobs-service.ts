import { EventEmitter } from 'node:events';
import type { Clock } from '../domain/clock.js';
import { ApiError, notFound } from '../domain/errors.js';
import { newId, newJobId } from '../domain/ids.js';
import { normalizePolicy } from '../domain/job-policy.js';
import { isTerminalJobStatus, nextJobState, type JobEvent, type JobState, type JobStatus, type JobRefusal } from '../domain/job-state.js';
import type { Db, Executor } from '../store/database.js';
import { DEFAULT_RETENTION, JobStore, type JobRecord, type JobRetention, type NewJob, type QueueStats, type WorkerResult } from '../store/job-store.js';
import { GroupCommit } from '../store/group-commit.js';
import { JobSignals } from './job-signals.js';
import { toJobView, toTakenJob, toWebhookPayload, type JobEventPayload, type JobView, type TakenJob } from './job-view.js';

/** The jobs slice of the configuration. */
export interface JobsConfig {
  /** How often a job goes back to the queue when its worker is lost before it FAILS. @default 3 */
  retryBudget: number;
  /** @default { runMs: 1800000, runsyncMs: 60000 } */
  retention: JobRetention;
  /** Most submissions (or completions) committed in one transaction. @default 1000 */
  maxBatchSize: number;
  /** Group-commit transactions open at once; >1 only helps on PostgreSQL. @default 1 */
  commitConcurrency: number;
  /** Rows one timekeeper statement times out or deletes. @default 1000 */
  sweepLimit: number;
}

export const DEFAULT_JOBS_CONFIG: JobsConfig = { retryBudget: 3, retention: DEFAULT_RETENTION, maxBatchSize: 1000, commitConcurrency: 1, sweepLimit: 1000 };

/** Job events; webhooks (through the outbox), metrics and the console feed subscribe. */
export interface JobEventMap {
  /** A job was committed to the queue (the autoscaler wakes on it). */
  'job:queued': { endpointId: string; jobId: string; lowPriority: boolean };
  'job:completed': JobEventPayload;
  'job:failed': JobEventPayload;
  'job:timed_out': JobEventPayload;
}

/** Where the service emits; the app's `EventBus` fits, and so does `JobEvents`. */
export interface JobEventSink {
  emit<K extends keyof JobEventMap>(name: K, payload: JobEventMap[K]): void;
}

/** A typed emitter of job events, for use without the app's EventBus. */
export class JobEvents implements JobEventSink {
  readonly #emitter = new EventEmitter();
  emit<K extends keyof JobEventMap>(name: K, payload: JobEventMap[K]): void {
    this.#emitter.emit(name, payload);
  }
  on<K extends keyof JobEventMap>(name: K, listener: (payload: JobEventMap[K]) => void): () => void {
    this.#emitter.on(name, listener);
    return () => this.#emitter.off(name, listener);
  }
}

export interface JobsServiceDeps {
  db: Db;
  clock: Clock;
  config?: Partial<JobsConfig>;
  /** @default a private `JobEvents` */
  events?: JobEventSink;
  /** @default private in-process signals (pass shared ones to plug a cross-replica relay in) */
  signals?: JobSignals;
}

/** Body of `/run` and `/runsync` (spec 2.12), as parsed JSON. */
export interface SubmitBody {
  input?: unknown;
  webhook?: unknown;
  policy?: unknown;
  s3Config?: unknown;
}

export interface SubmitOptions {
  /** `/runsync`: result retention 1 minute instead of 30. @default false */
  sync?: boolean;
  /** The endpoint's default execution timeout; the job's policy overrides it. @default 600000 */
  defaultExecutionTimeoutMs?: number;
}

export interface LongPollOptions {
  /** Longest wait, real-time ms. @default 0 (answer at once) */
  waitMs?: number;
  /** Ends the wait early (the client went away). */
  signal?: AbortSignal;
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

export interface StreamReply {
  id: string;
  status: JobStatus;
  /** Always present (clients crash without it). */
  stream: Array<{ output: unknown }>;
}

export interface TickResult {
  timedOut: number;
  expired: number;
  purged: number;
}

interface PostItem {
  result: WorkerResult;
  stopPod: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const stateOf = (job: JobRecord): JobState => ({
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

/** A worker's job-done body (wire-protocol §1) as a result: `error` wins over `output`. */
export function parseWorkerPost(jobId: string, workerId: string, body: unknown): PostItem {
  const b = isObject(body) ? body : { output: body };
  const stopPod = b.stopPod === true;
  const outputJson = b.output === undefined ? null : JSON.stringify(b.output);
  if (b.error !== undefined && b.error !== null && b.error !== '') {
    const error = typeof b.error === 'string' ? b.error : JSON.stringify(b.error);
    return { result: { id: jobId, workerId, status: 'FAILED', outputJson: null, error }, stopPod };
  }
  if (b.status === 'IN_PROGRESS') return { result: { id: jobId, workerId, status: 'IN_PROGRESS', outputJson, error: null }, stopPod };
  return { result: { id: jobId, workerId, status: 'COMPLETED', outputJson, error: null }, stopPod };
}

const eventOf = (r: WorkerResult): JobEvent =>
  r.status === 'FAILED'
    ? { type: 'fail', workerId: r.workerId, error: r.error ?? '' }
    : r.status === 'IN_PROGRESS'
      ? { type: 'progress', workerId: r.workerId, output: r.outputJson }
      : { type: 'complete', workerId: r.workerId, output: r.outputJson };

/**
 * The queue: submit, take, complete, status, stream, cancel, retry, purge, and the timekeeper.
 * Submissions, completions and stream chunks go through group commit; long-polls wait on
 * in-process signals. Every method that answers a client checks the job belongs to the caller's
 * account and endpoint, and hides expired jobs (404), even before the timekeeper deletes them.
 */
export class JobsService {
  readonly store: JobStore;
  readonly signals: JobSignals;
  readonly events: JobEventSink;
  readonly config: JobsConfig;
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #submits: GroupCommit<NewJob, void>;
  readonly #posts: GroupCommit<WorkerResult, JobRecord | null>;
  readonly #chunks: GroupCommit<{ jobId: string; seq: number; outputJson: string }, void>;
  readonly #takes: GroupCommit<{ endpointId: string; workerId: string; n: number }, JobRecord[]>;
  #lastSeq = 0;
  #seqSeed: Promise<void> | null = null;
  #seeded = false;
  readonly #finished = new Map<string, JobRecord>();

  constructor(deps: JobsServiceDeps) {
    this.#db = deps.db;
    this.#clock = deps.clock;
    this.config = { ...DEFAULT_JOBS_CONFIG, ...deps.config };
    this.store = new JobStore(deps.db, { retention: this.config.retention });
    this.signals = deps.signals ?? new JobSignals();
    this.events = deps.events ?? new JobEvents();
    const batching = { maxBatchSize: this.config.maxBatchSize, concurrency: this.config.commitConcurrency };
    this.#submits = new GroupCommit({ ...batching, commit: (jobs) => this.#commitSubmits(jobs) });
    this.#posts = new GroupCommit({ ...batching, commit: (posts) => this.#commitPosts(posts) });
    this.#takes = new GroupCommit({
      ...batching,
      commit: (requests) => this.#db.withTransaction((tx) => this.store.takeMany(requests, this.#clock.now(), tx)),
    });
    this.#chunks = new GroupCommit({
      ...batching,
      commit: async (chunks) => {
        const now = this.#clock.now();
        await this.#db.withTransaction(async (tx) => {
          for (const c of chunks) await this.store.appendStream(c.jobId, [c], now, tx);
        });
        for (const jobId of new Set(chunks.map((c) => c.jobId))) this.signals.notify('stream', jobId);
        return chunks.map(() => undefined);
      },
    });
  }

  // ── clients ────────────────────────────────────────────────────────────────────────────────

  /**
   * Queues a job (`/run`, and `/runsync` with `sync`). Resolves after the job is committed.
   * @throws ApiError INVALID_PARAMETER (400) listing each violation of `input`, `webhook`, `policy`, `s3Config`
   */
  async submit(endpointId: string, accountId: string, body: SubmitBody, options: SubmitOptions = {}): Promise<{ id: string; status: 'IN_QUEUE' }> {
    const violations: string[] = [];
    if (!isObject(body) || body.input === undefined) violations.push('input is required');
    const webhook = isObject(body) ? body.webhook : undefined;
    if (webhook !== undefined && webhook !== null && (typeof webhook !== 'string' || !/^https?:\/\/\S+$/i.test(webhook)))
      violations.push('webhook must be an http(s) URL');
    const s3Config = isObject(body) ? body.s3Config : undefined;
    if (s3Config !== undefined && s3Config !== null && !isObject(s3Config)) violations.push('s3Config must be an object');
    const policy = normalizePolicy(isObject(body) ? body.policy : undefined, options.defaultExecutionTimeoutMs);
    if (!policy.ok) violations.push(...policy.violations);
    if (violations.length || !policy.ok) throw new ApiError('INVALID_PARAMETER', `The job request is invalid: ${violations.join('; ')}.`, { errors: violations });
    if (!this.#seeded) await this.#ensureSeq();
    const createdAt = this.#clock.now();
    const job: NewJob = {
      id: newJobId(createdAt),
      endpointId,
      accountId,
      seq: this.#nextSeq(),
      inputJson: JSON.stringify(body.input),
      webhook: typeof webhook === 'string' ? webhook : null,
      s3ConfigJson: isObject(s3Config) ? JSON.stringify(s3Config) : null,
      policy: policy.value,
      sync: options.sync ?? false,
      createdAt,
    };
    await this.#submits.add(job);
    this.events.emit('job:queued', { endpointId, jobId: job.id, lowPriority: job.policy.lowPriority });
    return { id: job.id, status: 'IN_QUEUE' };
  }

  /** `/runsync`: submits, then waits up to `waitMs` for a terminal state; answers the job as it is then. */
  async runSync(endpointId: string, accountId: string, body: SubmitBody, options: Omit<SubmitOptions, 'sync'> & LongPollOptions = {}): Promise<JobView> {
    const { id } = await this.submit(endpointId, accountId, body, { ...options, sync: true });
    return this.waitForTerminal(accountId, endpointId, id, options);
  }

  /** `/status/{id}`. @throws ApiError NOT_FOUND (404) when missing, expired or another account's */
  async status(accountId: string, endpointId: string, jobId: string): Promise<JobView> {
    return toJobView(await this.#visible(accountId, endpointId, jobId));
  }

  /** `/status-sync/{id}` and the wait of `/runsync`: the job once terminal, or as it is after `waitMs`. */
  async waitForTerminal(accountId: string, endpointId: string, jobId: string, options: LongPollOptions = {}): Promise<JobView> {
    const deadline = performance.now() + (options.waitMs ?? 0);
    for (;;) {
      const remaining = deadline - performance.now();
      const waiter = remaining > 0 ? this.signals.waiter('job', jobId, remaining, options.signal) : null;
      let view: JobView;
      try {
        view = await this.status(accountId, endpointId, jobId);
      } catch (err) {
        waiter?.cancel();
        throw err;
      }
      if (!waiter || isTerminalJobStatus(view.status)) {
        waiter?.cancel();
        return view;
      }
      if (!(await waiter.promise)) return this.status(accountId, endpointId, jobId);
      // Woken by the commit that finished it: that commit's row answers without a read.
      const finished = this.#finished.get(jobId);
      if (finished && finished.accountId === accountId && finished.endpointId === endpointId && this.#isVisible(finished, this.#clock.now()))
        return toJobView(finished);
    }
  }

  /**
   * `/cancel/{id}`: a queued job is CANCELLED at once; a running one too, and its worker is told
   * on its job-stop channel. A job already finished is left as it is and its status answered
   * (cancel is idempotent; a client racing the result is not an error).
   */
  async cancel(accountId: string, endpointId: string, jobId: string): Promise<{ id: string; status: JobStatus }> {
    await this.#visible(accountId, endpointId, jobId);
    const cancelled = await this.store.cancel(jobId, this.#clock.now());
    if (!cancelled) return { id: jobId, status: (await this.#visible(accountId, endpointId, jobId)).status };
    this.#announceFinished([cancelled]);
    return { id: jobId, status: cancelled.status };
  }

  /**
   * `/retry/{id}`: a FAILED or TIMED_OUT job goes back to the end of the queue, same id and input.
   * @throws ApiError INVALID_STATE (409) for any other status; NOT_FOUND (404)
   */
  async retry(accountId: string, endpointId: string, jobId: string): Promise<{ id: string; status: 'IN_QUEUE' }> {
    const job = await this.#visible(accountId, endpointId, jobId);
    await this.#ensureSeq();
    const retried = await this.store.retry(jobId, this.#nextSeq(), this.#clock.now());
    if (!retried) {
      const now = await this.store.get(jobId);
      const t = nextJobState(stateOf(now ?? job), { type: 'retry' }, this.#clock.now());
      throw new ApiError('INVALID_STATE', t.kind === 'refused' ? t.refusal.reason : `Job ${jobId} cannot be retried now.`);
    }
    this.signals.notify('work', endpointId, 1);
    return { id: jobId, status: 'IN_QUEUE' };
  }

  /** `/purge-queue`: deletes the endpoint's queued jobs (running ones continue). */
  async purgeQueue(endpointId: string): Promise<{ removed: number; status: 'completed' }> {
    return { removed: await this.store.purgeQueue(endpointId), status: 'completed' };
  }

  /** Job counts of `/health` and for the autoscaler. */
  queueStats(endpointId: string): Promise<QueueStats> {
    return this.store.queueStats(endpointId);
  }

  /**
   * `/stream/{id}`: drains the chunks buffered since the last call; while there are none and the
   * job is not finished, waits up to `waitMs` for some.
   */
  async stream(accountId: string, endpointId: string, jobId: string, options: LongPollOptions = {}): Promise<StreamReply> {
    const deadline = performance.now() + (options.waitMs ?? 0);
    for (;;) {
      const remaining = deadline - performance.now();
      const waiter = remaining > 0 ? this.signals.waiter('stream', jobId, remaining, options.signal) : null;
      let reply: StreamReply;
      try {
        const job = await this.#visible(accountId, endpointId, jobId);
        const chunks = await this.store.drainStream(jobId);
        reply = { id: jobId, status: job.status, stream: chunks.map((c) => ({ output: JSON.parse(c) as unknown })) };
      } catch (err) {
        waiter?.cancel();
        throw err;
      }
      if (!waiter || reply.stream.length > 0 || isTerminalJobStatus(reply.status)) {
        waiter?.cancel();
        return reply;
      }
      if (!(await waiter.promise)) return this.stream(accountId, endpointId, jobId);
    }
  }

  // ── workers ────────────────────────────────────────────────────────────────────────────────

  /**
   * `job-take` / `job-take-batch`: up to `batchSize` jobs of the endpoint, oldest first, now
   * IN_PROGRESS on `workerId`. Waits up to `waitMs` for a submission when the queue is empty;
   * answers [] when none came. Concurrent takes are group-committed like submissions.
   */
  async take(endpointId: string, workerId: string, options: LongPollOptions & { batchSize?: number } = {}): Promise<TakenJob[]> {
    const batchSize = Math.max(1, Math.floor(options.batchSize ?? 1));
    const deadline = performance.now() + (options.waitMs ?? 0);
    for (;;) {
      const remaining = deadline - performance.now();
      const waiter = remaining > 0 ? this.signals.waiter('work', endpointId, remaining, options.signal) : null;
      let jobs: JobRecord[];
      try {
        jobs = await this.#takes.add({ endpointId, workerId, n: batchSize });
      } catch (err) {
        waiter?.cancel();
        throw err;
      }
      if (jobs.length > 0 && options.signal?.aborted) {
        // The worker went away while its take was being committed: nobody would run these.
        waiter?.cancel();
        await this.release(workerId, jobs.map((j) => j.id));
        return [];
      }
      if (jobs.length > 0 || !waiter) {
        waiter?.cancel();
        return jobs.map(toTakenJob);
      }
      if (!(await waiter.promise)) return [];
    }
  }

  /**
   * Returns taken jobs the worker never received to their place in the queue (call it when the
   * take reply could not be written). No retry is counted.
   */
  async release(workerId: string, jobIds: readonly string[]): Promise<number> {
    const n = await this.store.release(jobIds, workerId);
    if (n > 0) {
      const job = await this.store.get(jobIds[0]!);
      if (job) this.signals.notify('work', job.endpointId, n);
    }
    return n;
  }

  /**
   * `job-done`: the worker's result or progress (body as posted; `error` wins over `output`).
   * Committed with other posts in one transaction; idempotent — a repeated or late post is
   * `ignored`, a success for the SDK's retries.
   */
  async complete(workerId: string, jobId: string, body: unknown): Promise<WorkerPostOutcome> {
    const { result, stopPod } = parseWorkerPost(jobId, workerId, body);
    const changed = await this.#posts.add(result);
    if (changed) return { outcome: 'applied', status: changed.status, stopPod };
    const job = await this.store.get(jobId);
    const now = this.#clock.now();
    if (!job || !this.#isVisible(job, now)) return { outcome: 'not-found', stopPod };
    const t = nextJobState(stateOf(job), eventOf(result), now);
    switch (t.kind) {
      case 'ignored':
        return { outcome: 'ignored', status: job.status, reason: t.reason, stopPod };
      case 'refused':
        return { outcome: 'refused', refusal: t.refusal, stopPod };
      case 'changed':
      case 'deleted':
        // The job moved between the commit and this read (e.g. requeued, then taken again).
        return { outcome: 'refused', refusal: { code: 'NOT_RUNNING', status: job.status, event: eventOf(result).type, reason: 'The job changed state meanwhile.' }, stopPod };
      default:
        return ((x: never) => x)(t);
    }
  }

  /** `job-stream`: buffers one chunk (`{output}`) of a job the worker holds; otherwise ignored. */
  async appendStream(workerId: string, jobId: string, body: unknown): Promise<WorkerPostOutcome> {
    const job = await this.store.get(jobId);
    const now = this.#clock.now();
    if (!job || !this.#isVisible(job, now)) return { outcome: 'not-found', stopPod: false };
    if (job.status !== 'IN_PROGRESS' || job.workerId !== workerId)
      return { outcome: 'ignored', status: job.status, reason: 'the job is not running on this worker', stopPod: false };
    const output = isObject(body) && 'output' in body ? body.output : body;
    await this.#ensureSeq();
    await this.#chunks.add({ jobId, seq: this.#nextSeq(), outputJson: JSON.stringify(output ?? null) });
    return { outcome: 'applied', status: job.status, stopPod: false };
  }

  /** `job-stop`: ids of jobs the worker must stop (each answered once); waits up to `waitMs` for one. */
  async stopRequests(workerId: string, options: LongPollOptions = {}): Promise<string[]> {
    const deadline = performance.now() + (options.waitMs ?? 0);
    for (;;) {
      const remaining = deadline - performance.now();
      const waiter = remaining > 0 ? this.signals.waiter('stop', workerId, remaining, options.signal) : null;
      let ids: string[];
      try {
        ids = await this.store.takeStopRequests(workerId);
      } catch (err) {
        waiter?.cancel();
        throw err;
      }
      if (ids.length > 0 || !waiter) {
        waiter?.cancel();
        return ids;
      }
      if (!(await waiter.promise)) return [];
    }
  }

  /**
   * A worker stopped pinging (or was removed): its running jobs go back to the queue, or FAIL once
   * their retry budget is spent. Called by the worker supervisor.
   */
  async workerLost(workerId: string): Promise<{ requeued: string[]; failed: string[] }> {
    const now = this.#clock.now();
    const { requeued, failed } = await this.#db.withTransaction(async (tx) => {
      const res = await this.store.requeueFromWorker(workerId, now, this.config.retryBudget, tx);
      await this.#enqueueWebhooks(res.failed, now, tx);
      return res;
    });
    const perEndpoint = new Map<string, number>();
    for (const j of requeued) perEndpoint.set(j.endpointId, (perEndpoint.get(j.endpointId) ?? 0) + 1);
    for (const [endpointId, n] of perEndpoint) this.signals.notify('work', endpointId, n);
    this.#announceFinished(failed);
    return { requeued: requeued.map((j) => j.id), failed: failed.map((j) => j.id) };
  }

  // ── timekeeper ─────────────────────────────────────────────────────────────────────────────

  /**
   * One pass of the timekeeper: running jobs past their execution timeout become TIMED_OUT (and
   * their workers are told to stop); jobs past their ttl are deleted in any state; finished jobs
   * past retention are deleted. Run it every second or so (under a lease on PostgreSQL).
   */
  async tick(now: number = this.#clock.now()): Promise<TickResult> {
    const result: TickResult = { timedOut: 0, expired: 0, purged: 0 };
    const limit = this.config.sweepLimit;
    for (;;) {
      const timedOut = await this.#db.withTransaction(async (tx) => {
        const jobs = await this.store.timeOut(now, limit, tx);
        await this.#enqueueWebhooks(jobs, now, tx);
        return jobs;
      });
      this.#announceFinished(timedOut);
      result.timedOut += timedOut.length;
      if (timedOut.length < limit) break;
    }
    for (;;) {
      const { expired, purged } = await this.#db.withTransaction((tx) => this.store.expire(now, limit, tx));
      for (const id of [...expired, ...purged]) {
        this.signals.notify('job', id);
        this.signals.notify('stream', id);
      }
      result.expired += expired.length;
      result.purged += purged.length;
      if (expired.length < limit && purged.length < limit) break;
    }
    return result;
  }

  /** Resolves once every accepted submission, result and chunk is committed. */
  async flush(): Promise<void> {
    await Promise.all([this.#submits.idle(), this.#posts.idle(), this.#chunks.idle(), this.#takes.idle()]);
  }

  /** Group-commit counters (batches, items), for benchmarks and metrics. */
  get batchStats(): Record<'submits' | 'takes' | 'posts', GroupCommit<unknown, unknown>['stats']> {
    return { submits: this.#submits.stats, takes: this.#takes.stats, posts: this.#posts.stats };
  }

  // ── internals ──────────────────────────────────────────────────────────────────────────────

  async #commitSubmits(jobs: readonly NewJob[]): Promise<void[]> {
    await this.store.insertCommitted(jobs);
    const perEndpoint = new Map<string, number>();
    for (const j of jobs) perEndpoint.set(j.endpointId, (perEndpoint.get(j.endpointId) ?? 0) + 1);
    for (const [endpointId, n] of perEndpoint) this.signals.notify('work', endpointId, n);
    return jobs.map(() => undefined);
  }

  async #commitPosts(posts: readonly WorkerResult[]): Promise<Array<JobRecord | null>> {
    const now = this.#clock.now();
    const changed = await this.#db.withTransaction(async (tx) => {
      const rows = await this.store.completeMany(posts, now, tx);
      await this.#enqueueWebhooks(
        rows.filter((r): r is JobRecord => r !== null && isTerminalJobStatus(r.status)),
        now,
        tx,
      );
      return rows;
    });
    this.#announceFinished(changed.filter((r): r is JobRecord => r !== null && isTerminalJobStatus(r.status)));
    return changed;
  }

  /** The webhook outbox rows of finished jobs, in the transaction that finished them. */
  async #enqueueWebhooks(jobs: readonly JobRecord[], now: number, tx: Executor): Promise<void> {
    const deliveries = jobs.flatMap((job) => {
      if (job.status !== 'COMPLETED' && job.status !== 'FAILED' && job.status !== 'TIMED_OUT') return [];
      const payload = toWebhookPayload(job);
      return payload ? [{ id: newId(20), jobId: job.id, url: payload.webhook, payloadJson: JSON.stringify(payload) }] : [];
    });
    if (deliveries.length) await this.store.insertWebhookDeliveries(deliveries, now, tx);
  }

  /** After commit: wake waiters, tell workers to stop, emit events. */
  #announceFinished(jobs: readonly JobRecord[]): void {
    const now = this.#clock.now();
    for (const job of jobs) {
      if (this.signals.waiting('job', job.id) > 0) this.#holdFinished(job);
      this.signals.notify('job', job.id);
      this.signals.notify('stream', job.id);
      if (job.stopRequested === 1 && job.workerId) this.signals.notify('stop', job.workerId);
      const name = job.status === 'COMPLETED' ? 'job:completed' : job.status === 'FAILED' ? 'job:failed' : job.status === 'TIMED_OUT' ? 'job:timed_out' : null;
      if (name) this.events.emit(name, { job: toJobView(job), endpointId: job.endpointId, accountId: job.accountId, webhook: toWebhookPayload(job), at: now });
    }
  }

  /**
   * Keeps a just-finished row for the waiters its commit wakes (they run before the next turn of
   * the event loop), so `/runsync` and `/status-sync` answer without reading it back.
   */
  #holdFinished(job: JobRecord): void {
    if (this.#finished.size === 0) setImmediate(() => this.#finished.clear());
    this.#finished.set(job.id, job);
  }

  #isVisible(job: JobRecord, now: number): boolean {
    return job.expiresAt > now && (job.retainUntil === null || job.retainUntil > now);
  }

  async #visible(accountId: string, endpointId: string, jobId: string): Promise<JobRecord> {
    const job = await this.store.get(jobId);
    if (!job || job.accountId !== accountId || job.endpointId !== endpointId || !this.#isVisible(job, this.#clock.now())) throw notFound('job', jobId);
    return job;
  }

  /**
   * Queue positions: increasing in this process, ahead of everything stored (seeded once from the
   * store), and close to submission time across replicas (`now × 1000`).
   */
  #nextSeq(): number {
    this.#lastSeq = Math.max(this.#lastSeq + 1, this.#clock.now() * 1000);
    return this.#lastSeq;
  }

  #ensureSeq(): Promise<void> {
    this.#seqSeed ??= this.store.maxSeq().then(
      (max) => {
        this.#lastSeq = Math.max(this.#lastSeq, max);
        this.#seeded = true;
      },
      (err: unknown) => {
        this.#seqSeed = null; // try again on the next call
        throw err;
      },
    );
    return this.#seqSeed;
  }
}
