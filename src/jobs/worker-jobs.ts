import type { Clock } from '../domain/clock.js';
import { isTerminalJobStatus, nextJobState } from '../domain/job-state.js';
import type { Db } from '../store/database.js';
import { GroupCommit, type GroupCommitOptions } from '../store/group-commit.js';
import type { JobRecord, WorkerResult } from '../store/job-record.js';
import type { JobStore } from '../store/job-store.js';
import type { TakeRequest } from '../store/job-claims.js';
import type { JobQuota } from '../quotas/job-quota.js';
import type { FinishedJobs } from './finished-jobs.js';
import type { JobSequence } from './job-sequence.js';
import { stopKey, type CancelSignal, type JobSignals, type LongPollOptions } from './job-signals.js';
import { isVisible, stateOf, toTakenJob, type TakenJob } from './job-view.js';
import { longPoll, type LongPollSteps } from './long-poll.js';
import type { JobFlow } from './job-flow.js';
import { parseWorkerPost, workerResultEvent, type WorkerPostOutcome } from './worker-post.js';
import { GiveBack, type GaveBack, type GiveBackDeps } from './give-back.js';

export interface WorkerJobsDeps {
  db: Db;
  store: {
    rows: Pick<JobStore['rows'], 'get'>;
    committed: Pick<JobStore['committed'], 'takeCommitted' | 'completeCommitted'>;
    claims: Pick<JobStore['claims'], 'release' | 'takeStopRequests'>;
    held: Pick<JobStore['held'], 'list' | 'giveBack'>;
    stream: Pick<JobStore['stream'], 'appendStream'>;
  };
  clock: Clock;
  signals: JobSignals;
  sequence: JobSequence;
  finished: FinishedJobs;
  /** How often a job goes back to the queue when its worker is lost before it FAILS. */
  retryBudget: number;
  /** How long after its take a job may still be on its way to its worker (see `GiveBackDeps`). */
  settleMs: number;
  /** Where jobs given back by their own worker's report are logged. @default none */
  logger?: GiveBackDeps['logger'];
  /** Sizing of the takes', results' and stream chunks' group commits. */
  batching: Pick<GroupCommitOptions<unknown, unknown>, 'maxBatchSize' | 'concurrency'>;
  /** The stored-bytes and per-job stream quotas; without it, none apply. */
  quota?: Pick<JobQuota, 'admitBytes' | 'admitStreamChunk'>;
  /** Told of takes, releases and requeues after their commit (metrics). @default none */
  flow?: JobFlow;
}

/** A worker's long-poll: `job-take` (up to `n` jobs) and the `job-stop` channel (`n` unused). */
interface TakePoll {
  endpointId: string;
  workerId: string;
  n: number;
  signal: CancelSignal | undefined;
  /** The take says its worker holds no job: the first read gives back what the store says it holds. */
  holdsNone?: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The worker side of the queue: take (long-polled), release, results and progress, stream chunks,
 * the job-stop channel, and the jobs a worker gives back (lost, or by its own report: `GiveBack`).
 * Takes, results and chunks go through group commit.
 */
export class WorkerJobs {
  readonly #deps: WorkerJobsDeps;
  readonly #posts: GroupCommit<WorkerResult, JobRecord | null>;
  readonly #chunks: GroupCommit<{ jobId: string; seq: number; outputJson: string; accountId: string }, void>;
  readonly #takes: GroupCommit<TakeRequest, JobRecord[]>;
  readonly #giveBack: GiveBack;

  constructor(deps: WorkerJobsDeps) {
    this.#deps = deps;
    const { db, store, clock, signals, batching } = deps;
    this.#giveBack = new GiveBack(deps);
    this.#posts = new GroupCommit({ ...batching, commit: (posts) => this.#commitPosts(posts) });
    this.#takes = new GroupCommit({
      ...batching,
      commit: async (requests) => {
        const batch = await store.committed.takeCommitted(requests, clock.now(), {
          retryBudget: deps.retryBudget,
          webhooksOf: (failed) => deps.finished.webhooksOf(failed),
        });
        if (batch.requeued.length > 0 || batch.failed.length > 0) this.#giveBack.tookHoldingNone(requests, batch);
        if (deps.flow) for (const jobs of batch.taken) if (jobs.length > 0) deps.flow.taken(jobs);
        return batch.taken;
      },
    });
    this.#chunks = new GroupCommit({
      ...batching,
      commit: async (chunks) => {
        const now = clock.now();
        await db.withTransaction(async (tx) => {
          for (const c of chunks) await store.stream.appendStream(c.jobId, [c], now, tx);
        });
        for (const jobId of new Set(chunks.map((c) => c.jobId))) signals.notify('stream', jobId);
        return chunks.map(() => undefined);
      },
    });
  }

  /**
   * `job-take` / `job-take-batch`: up to `batchSize` jobs of the endpoint, oldest first, now
   * IN_PROGRESS on `workerId`. Waits up to `waitMs` for a submission when the queue is empty;
   * answers [] when none came. Concurrent takes are group-committed like submissions.
   */
  take(
    endpointId: string,
    workerId: string,
    options: LongPollOptions & { batchSize?: number; holdsNone?: boolean } = {},
  ): Promise<TakenJob[]> {
    const n = Math.max(1, Math.floor(options.batchSize ?? 1));
    return longPoll(this.#deps.clock, options.waitMs ?? 0, this.#takePoll, {
      endpointId,
      workerId,
      n,
      signal: options.signal,
      holdsNone: options.holdsNone === true,
    });
  }

  readonly #takePoll: LongPollSteps<TakePoll, JobRecord[], TakenJob[]> = {
    wait: (p, timeoutMs) => this.#deps.signals.waiter('work', p.endpointId, timeoutMs, p.signal),
    read: (p) => {
      // Only the first read: a later one could only find jobs this very long-poll was not given.
      const holdsNone = p.holdsNone === true;
      p.holdsNone = false;
      return this.#takes.add({
        endpointId: p.endpointId,
        workerId: p.workerId,
        n: p.n,
        ...(holdsNone ? { holdsNone } : {}),
      });
    },
    ends: (jobs) => jobs.length > 0,
    // A worker that went away while its take was being committed would run none of its jobs.
    answer: (p, jobs) =>
      jobs.length > 0 && p.signal?.aborted ? this.#releaseAll(p.workerId, jobs) : jobs.map(toTakenJob),
    timedOut: () => [],
  };

  async #releaseAll(workerId: string, jobs: readonly JobRecord[]): Promise<TakenJob[]> {
    await this.release(
      workerId,
      jobs.map((j) => j.id),
    );
    return [];
  }

  /**
   * Returns taken jobs the worker never received to their place in the queue (call it when the
   * take reply could not be written). No retry is counted.
   */
  async release(workerId: string, jobIds: readonly string[]): Promise<number> {
    const n = await this.#deps.store.claims.release(jobIds, workerId);
    if (n > 0) {
      const job = await this.#deps.store.rows.get(jobIds[0]!);
      if (job) {
        this.#deps.flow?.requeued(job.endpointId, n, 'running');
        this.#deps.signals.notify('work', job.endpointId, n);
      }
    }
    return n;
  }

  /**
   * `job-done`: the worker's result or progress (body as posted; `error` wins over `output`).
   * Committed with other posts in one transaction; idempotent — a repeated or late post is
   * `ignored`, a success for the SDK's retries. With `endpointId` (the route's), the post applies
   * only to a job of that endpoint; to a worker of another, the job is not found.
   *
   * With `accountId` (the endpoint's), its stored-bytes quota applies: an output or error that
   * would pass it is not stored — a result finishes the job FAILED saying so (the job is not left
   * running), a progress post is ignored.
   */
  async complete(
    workerId: string,
    jobId: string,
    body: unknown,
    endpointId?: string,
    accountId?: string,
  ): Promise<WorkerPostOutcome> {
    const { result, stopPod } = parseWorkerPost(jobId, workerId, body, endpointId);
    let settle: (() => void) | undefined;
    const quota = accountId !== undefined ? this.#deps.quota : undefined;
    const bytes = quota ? Buffer.byteLength(result.outputJson ?? '') + Buffer.byteLength(result.error ?? '') : 0;
    if (bytes > 0) {
      // In memory while the stored figures are fresh: no await (see JobQuota).
      const admission = quota!.admitBytes(accountId!, bytes);
      const admitted = admission instanceof Promise ? await admission : admission;
      if ('refusal' in admitted) {
        if (result.status === 'IN_PROGRESS')
          return { outcome: 'ignored', status: 'IN_PROGRESS', reason: admitted.refusal, stopPod };
        Object.assign(result, {
          status: 'FAILED',
          outputJson: null,
          error: `The job's ${result.status === 'FAILED' ? 'error' : 'output'} was not stored: ${admitted.refusal}`,
        });
      } else settle = admitted.settle;
    }
    let changed: JobRecord | null;
    try {
      changed = await this.#posts.add(result);
    } finally {
      settle?.();
    }
    if (changed) return { outcome: 'applied', status: changed.status, stopPod };
    const job = await this.#deps.store.rows.get(jobId);
    const now = this.#deps.clock.now();
    if (!job || !isVisible(job, now) || (endpointId !== undefined && job.endpointId !== endpointId))
      return { outcome: 'not-found', stopPod };
    const t = nextJobState(stateOf(job), workerResultEvent(result), now);
    switch (t.kind) {
      case 'ignored':
        return { outcome: 'ignored', status: job.status, reason: t.reason, stopPod };
      case 'refused':
        return { outcome: 'refused', refusal: t.refusal, stopPod };
      case 'changed':
      case 'deleted':
        // The job moved between the commit and this read (e.g. requeued, then taken again).
        return {
          outcome: 'refused',
          refusal: {
            code: 'NOT_RUNNING',
            status: job.status,
            event: workerResultEvent(result).type,
            reason: 'The job changed state meanwhile.',
          },
          stopPod,
        };
      default:
        return ((x: never) => x)(t);
    }
  }

  /**
   * Whether `body`, posted to `job-done`, is a result (not a progress update) for a job IN_PROGRESS
   * on `workerId` through `endpointId`: a post that finishes a job the worker holds.
   */
  async finishesHeldJob(workerId: string, jobId: string, body: unknown, endpointId: string): Promise<boolean> {
    const { result } = parseWorkerPost(jobId, workerId, body, endpointId);
    if (result.status === 'IN_PROGRESS') return false;
    const job = await this.#deps.store.rows.get(jobId);
    return job !== null && job.status === 'IN_PROGRESS' && job.workerId === workerId && job.endpointId === endpointId;
  }

  /**
   * `job-stream`: buffers one chunk (`{output}`) of a job the worker holds; otherwise ignored. A
   * job of another endpoint than `endpointId` (when given) is not found.
   */
  async appendStream(workerId: string, jobId: string, body: unknown, endpointId?: string): Promise<WorkerPostOutcome> {
    const job = await this.#deps.store.rows.get(jobId);
    const now = this.#deps.clock.now();
    if (!job || !isVisible(job, now) || (endpointId !== undefined && job.endpointId !== endpointId))
      return { outcome: 'not-found', stopPod: false };
    if (job.status !== 'IN_PROGRESS' || job.workerId !== workerId)
      return {
        outcome: 'ignored',
        status: job.status,
        reason: 'the job is not running on this worker',
        stopPod: false,
      };
    const output = isObject(body) && 'output' in body ? body.output : body;
    const outputJson = JSON.stringify(output ?? null);
    // Throws 429 QUOTA_EXCEEDED over the per-job or the account's quota: the chunk is dropped, the job goes on.
    // In memory, no query after the job's first chunk here (see StreamQuota).
    const admission = this.#deps.quota?.admitStreamChunk(job.accountId, jobId, Buffer.byteLength(outputJson));
    const settle = admission instanceof Promise ? await admission : admission;
    let committed = false;
    try {
      const { sequence } = this.#deps;
      if (!sequence.seeded) await sequence.ensure();
      await this.#chunks.add({ jobId, seq: sequence.next(), outputJson, accountId: job.accountId });
      committed = true;
    } finally {
      settle?.(committed);
    }
    return { outcome: 'applied', status: job.status, stopPod: false };
  }

  /** `job-stop`: ids of the endpoint's jobs the worker must stop (each answered once); waits up to `waitMs` for one. */
  stopRequests(endpointId: string, workerId: string, options: LongPollOptions = {}): Promise<string[]> {
    return longPoll(this.#deps.clock, options.waitMs ?? 0, this.#stopPoll, {
      endpointId,
      workerId,
      n: 0,
      signal: options.signal,
    });
  }

  readonly #stopPoll: LongPollSteps<TakePoll, string[], string[]> = {
    wait: (p, timeoutMs) => this.#deps.signals.waiter('stop', stopKey(p.endpointId, p.workerId), timeoutMs, p.signal),
    read: (p) => this.#deps.store.claims.takeStopRequests(p.workerId, p.endpointId),
    ends: (ids) => ids.length > 0,
    answer: (_, ids) => ids,
    timedOut: () => [],
  };

  /**
   * A worker stopped pinging (or was removed): its running jobs of `endpointId` go back to the
   * queue, or FAIL once their retry budget is spent (null: every endpoint's, for worker ids this
   * server issued). Called by the worker supervisor.
   */
  workerLost(workerId: string, endpointId: string | null): Promise<GaveBack> {
    return this.#giveBack.lost(workerId, endpointId);
  }

  /** The platform takes a worker's running jobs back (FlashBoot suspends it): requeued, no retry counted. */
  workerReleased(workerId: string, endpointId: string): Promise<GaveBack> {
    return this.#giveBack.released(workerId, endpointId);
  }

  /**
   * A ping of `workerId` through `endpointId` listed `listed` as the jobs it holds (possibly none):
   * the jobs it shows the worker no longer holds go back to the queue as a lost worker's do.
   */
  pinged(endpointId: string, workerId: string, listed: readonly string[]): Promise<GaveBack> {
    return this.#giveBack.pinged(endpointId, workerId, listed);
  }

  /** Resolves once every accepted take, result and chunk is committed. */
  async flush(): Promise<void> {
    await Promise.all([this.#posts.idle(), this.#chunks.idle(), this.#takes.idle()]);
  }

  /** The group commits (takes, results, stream chunks), to observe their batches (metrics). */
  get groupCommits(): Record<'takes' | 'posts' | 'chunks', Pick<GroupCommit<unknown, unknown>, 'observe'>> {
    return { takes: this.#takes, posts: this.#posts, chunks: this.#chunks };
  }

  /** Group-commit counters of takes and results. */
  get batchStats(): Record<'takes' | 'posts', GroupCommit<unknown, unknown>['stats']> {
    return { takes: this.#takes.stats, posts: this.#posts.stats };
  }

  async #commitPosts(posts: readonly WorkerResult[]): Promise<Array<JobRecord | null>> {
    const { store, clock, finished } = this.#deps;
    const now = clock.now();
    const changed = await store.committed.completeCommitted(posts, now, (rows) => finished.webhooksOf(rows));
    finished.announce(changed.filter((r): r is JobRecord => r !== null && isTerminalJobStatus(r.status)));
    return changed;
  }
}
