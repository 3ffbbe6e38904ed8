import type { Clock } from '../domain/clock.js';
import { ApiError, notFound } from '../domain/errors.js';
import { newJobId } from '../domain/ids.js';
import { normalizePolicy, s3ConfigViolations } from '../domain/job-policy.js';
import { isTerminalJobStatus, nextJobState, type JobStatus } from '../domain/job-state.js';
import { GroupCommit, type GroupCommitOptions } from '../store/group-commit.js';
import type { JobRecord, NewJob } from '../store/job-record.js';
import type { JobStore } from '../store/job-store.js';
import type { QueueStats } from '../store/queue-stats.js';
import type { WebhookStore } from '../store/webhook-store.js';
import { nonPublicKind } from '../domain/ip-address.js';
import { literalAddress, webhookUrlViolation } from '../domain/webhook-url.js';
import type { JobQuota } from '../quotas/job-quota.js';
import type { FinishedJobs } from './finished-jobs.js';
import type { JobEventSink } from './job-events.js';
import type { JobSequence } from './job-sequence.js';
import type { CancelSignal, JobSignals, LongPollOptions } from './job-signals.js';
import { isVisible, stateOf, toJobView, toWebhookDeliveryView, type JobView } from './job-view.js';
import { longPoll, type LongPollSteps } from './long-poll.js';
import type { JobFlow } from './job-flow.js';

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

export interface StreamReply {
  id: string;
  status: JobStatus;
  /** Always present (clients crash without it). */
  stream: Array<{ output: unknown }>;
}

export interface ClientJobsDeps {
  store: {
    rows: Pick<JobStore['rows'], 'get' | 'insertCommitted'>;
    controls: Pick<JobStore['controls'], 'cancel' | 'retry' | 'purgeQueue'>;
    stats: Pick<JobStore['stats'], 'queueStats'>;
    stream: Pick<JobStore['stream'], 'drainStream'>;
  };
  /** A finished job's webhook deliveries, for its status view. */
  webhooks: Pick<WebhookStore, 'forJob'>;
  clock: Clock;
  signals: JobSignals;
  events: JobEventSink;
  sequence: JobSequence;
  finished: FinishedJobs;
  /** The webhook address policy, for the submit-time check of IP literals. @default none: no submit-time check */
  webhookAddresses?: { refusal(host: string, addresses: readonly string[]): Promise<string | null> };
  /** Sizing of the submissions' group commit. */
  batching: Pick<GroupCommitOptions<unknown, unknown>, 'maxBatchSize' | 'concurrency'>;
  /** The queued-jobs and stored-bytes quotas; without it, none apply. */
  quota?: Pick<JobQuota, 'admitSubmit' | 'admitRequeue' | 'streamDrained'>;
  /** Told of submissions, retries and purges after their commit (metrics). @default none */
  flow?: JobFlow;
}

/** A client's long-poll on one job: `/status-sync`, the wait of `/runsync`, `/stream`. */
interface JobPoll {
  accountId: string;
  endpointId: string;
  jobId: string;
  signal: CancelSignal | undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The client side of the queue: submit (group-committed), status and its long-polls, cancel,
 * retry, purge, stream. Every method that answers a client checks the job belongs to the caller's
 * account and endpoint, and hides expired jobs (404), even before the timekeeper deletes them.
 */
export class ClientJobs {
  readonly #deps: ClientJobsDeps;
  readonly #submits: GroupCommit<NewJob, void>;

  constructor(deps: ClientJobsDeps) {
    this.#deps = deps;
    this.#submits = new GroupCommit({ ...deps.batching, commit: (jobs) => this.#commitSubmits(jobs) });
  }

  /**
   * Queues a job (`/run`, and `/runsync` with `sync`). Resolves after the job is committed.
   * @throws ApiError INVALID_PARAMETER (400) listing each violation of `input`, `webhook`, `policy`, `s3Config`
   * @throws ApiError WEBHOOK_NOT_ALLOWED (400) when `webhook` names an IP address the webhook policy refuses
   */
  async submit(
    endpointId: string,
    accountId: string,
    body: SubmitBody,
    options: SubmitOptions = {},
  ): Promise<{ id: string; status: 'IN_QUEUE' }> {
    const violations: string[] = [];
    if (!isObject(body) || body.input === undefined) violations.push('input is required');
    const webhook = isObject(body) ? body.webhook : undefined;
    const webhookProblem = webhook === undefined || webhook === null ? null : webhookUrlViolation(webhook);
    if (webhookProblem) violations.push(webhookProblem);
    const s3Config = isObject(body) ? body.s3Config : undefined;
    violations.push(...s3ConfigViolations(s3Config));
    if (typeof webhook === 'string' && webhook.includes('\u0000'))
      violations.push('webhook must not contain a NUL character');
    const policy = normalizePolicy(isObject(body) ? body.policy : undefined, options.defaultExecutionTimeoutMs);
    if (!policy.ok) violations.push(...policy.violations);
    if (violations.length || !policy.ok)
      throw new ApiError('INVALID_PARAMETER', `The job request is invalid: ${violations.join('; ')}.`, {
        errors: violations,
      });
    const literal =
      typeof webhook === 'string' && this.#deps.webhookAddresses ? literalAddress(new URL(webhook)) : null;
    // only a non-public IP literal waits on the policy (a public one or a host name costs no await)
    if (literal !== null && nonPublicKind(literal) !== null) await this.#checkWebhookAddress(literal);
    const { sequence, quota } = this.#deps;
    const inputJson = JSON.stringify(body.input);
    // In memory, no query: see JobQuota. Throws 429 QUOTA_EXCEEDED.
    const admitted = quota?.admitSubmit(accountId, Buffer.byteLength(inputJson));
    const settle = admitted instanceof Promise ? await admitted : admitted;
    let job: NewJob;
    // Opened right after admission: whatever fails from here (the sequence's seed read, the commit) settles it.
    try {
      if (!sequence.seeded) await sequence.ensure();
      const createdAt = this.#deps.clock.now();
      job = {
        id: newJobId(createdAt),
        endpointId,
        accountId,
        seq: sequence.next(),
        inputJson,
        webhook: typeof webhook === 'string' ? webhook : null,
        s3ConfigJson: isObject(s3Config) ? JSON.stringify(s3Config) : null,
        policy: policy.value,
        sync: options.sync ?? false,
        createdAt,
      };
      await this.#submits.add(job);
    } finally {
      settle?.();
    }
    this.#deps.events.emit('job:queued', { endpointId, jobId: job.id, lowPriority: job.policy.lowPriority });
    return { id: job.id, status: 'IN_QUEUE' };
  }

  /**
   * Tells the user at once that a webhook naming a refused IP literal would never be delivered.
   * Courtesy only: host names are judged at send time, on the address the call connects to.
   */
  async #checkWebhookAddress(address: string): Promise<void> {
    const refusal = await this.#deps.webhookAddresses!.refusal(address, [address]);
    if (refusal)
      throw new ApiError('WEBHOOK_NOT_ALLOWED', `The job's webhook is not allowed: ${refusal}.`, { errors: [refusal] });
  }

  /** `/runsync`: submits, then waits up to `waitMs` for a terminal state; answers the job as it is then. */
  async runSync(
    endpointId: string,
    accountId: string,
    body: SubmitBody,
    options: Omit<SubmitOptions, 'sync'> & LongPollOptions = {},
  ): Promise<JobView> {
    const { id } = await this.submit(endpointId, accountId, body, { ...options, sync: true });
    return this.waitForTerminal(accountId, endpointId, id, options);
  }

  /** `/status/{id}`. @throws ApiError NOT_FOUND (404) when missing, expired or another account's */
  async status(accountId: string, endpointId: string, jobId: string): Promise<JobView> {
    const job = await this.#visible(accountId, endpointId, jobId);
    const view = toJobView(job);
    if (job.webhook === null || !isTerminalJobStatus(job.status)) return view;
    const latest = (await this.#deps.webhooks.forJob(job.id)).at(-1);
    return latest ? { ...view, webhookDelivery: toWebhookDeliveryView(latest) } : view;
  }

  /** `/status-sync/{id}` and the wait of `/runsync`: the job once terminal, or as it is after `waitMs`. */
  waitForTerminal(
    accountId: string,
    endpointId: string,
    jobId: string,
    options: LongPollOptions = {},
  ): Promise<JobView> {
    return longPoll(this.#deps.clock, options.waitMs ?? 0, this.#terminalPoll, {
      accountId,
      endpointId,
      jobId,
      signal: options.signal,
    });
  }

  readonly #terminalPoll: LongPollSteps<JobPoll, JobView, JobView> = {
    wait: (p, timeoutMs) => this.#deps.signals.waiter('job', p.jobId, timeoutMs, p.signal),
    read: (p) => this.status(p.accountId, p.endpointId, p.jobId),
    ends: (view) => isTerminalJobStatus(view.status),
    answer: (_, view) => view,
    timedOut: (p) => this.status(p.accountId, p.endpointId, p.jobId),
    woken: (p) => this.#heldView(p.accountId, p.endpointId, p.jobId),
  };

  /** The job as the commit that finished it (and woke its waiters) left it, when held: it answers without a read. */
  #heldView(accountId: string, endpointId: string, jobId: string): JobView | undefined {
    const finished = this.#deps.finished.held(jobId);
    if (
      !finished ||
      finished.accountId !== accountId ||
      finished.endpointId !== endpointId ||
      !isVisible(finished, this.#deps.clock.now())
    )
      return undefined;
    // its webhook, if any, entered the outbox in that same commit: not yet attempted
    const view = toJobView(finished);
    const due = new Date(finished.completedAt ?? this.#deps.clock.now()).toISOString();
    return finished.webhook !== null && finished.status !== 'CANCELLED'
      ? { ...view, webhookDelivery: { status: 'PENDING', attempts: 0, nextAttemptAt: due } }
      : view;
  }

  /**
   * `/cancel/{id}`: a queued job is CANCELLED at once; a running one too, and its worker is told
   * on its job-stop channel. A job already finished is left as it is and its status answered
   * (cancel is idempotent; a client racing the result is not an error).
   */
  async cancel(accountId: string, endpointId: string, jobId: string): Promise<{ id: string; status: JobStatus }> {
    await this.#visible(accountId, endpointId, jobId);
    const cancelled = await this.#deps.store.controls.cancel(jobId, this.#deps.clock.now());
    if (!cancelled) return { id: jobId, status: (await this.#visible(accountId, endpointId, jobId)).status };
    this.#deps.finished.announce([cancelled]);
    return { id: jobId, status: cancelled.status };
  }

  /**
   * `/retry/{id}`: a FAILED or TIMED_OUT job goes back to the end of the queue, same id and input.
   * @throws ApiError INVALID_STATE (409) for any other status; NOT_FOUND (404)
   */
  async retry(accountId: string, endpointId: string, jobId: string): Promise<{ id: string; status: 'IN_QUEUE' }> {
    const { store, clock, sequence } = this.#deps;
    const job = await this.#visible(accountId, endpointId, jobId);
    await sequence.ensure();
    const settle = await this.#deps.quota?.admitRequeue(accountId);
    let retried: JobRecord | null;
    try {
      retried = await store.controls.retry(jobId, sequence.next(), clock.now());
    } finally {
      settle?.();
    }
    if (!retried) {
      const now = await store.rows.get(jobId);
      const t = nextJobState(stateOf(now ?? job), { type: 'retry' }, clock.now());
      throw new ApiError(
        'INVALID_STATE',
        t.kind === 'refused' ? t.refusal.reason : `Job ${jobId} cannot be retried now.`,
      );
    }
    this.#deps.flow?.requeued(endpointId, 1, 'finished');
    this.#deps.signals.notify('work', endpointId, 1);
    return { id: jobId, status: 'IN_QUEUE' };
  }

  /** `/purge-queue`: deletes the endpoint's queued jobs (running ones continue). */
  async purgeQueue(endpointId: string): Promise<{ removed: number; status: 'completed' }> {
    const removed = await this.#deps.store.controls.purgeQueue(endpointId);
    if (removed > 0) this.#deps.flow?.removed(endpointId, 'IN_QUEUE', removed);
    return { removed, status: 'completed' };
  }

  /** Job counts of `/health` and for the autoscaler. */
  queueStats(endpointId: string): Promise<QueueStats> {
    return this.#deps.store.stats.queueStats(endpointId);
  }

  /**
   * `/stream/{id}`: drains the chunks buffered since the last call; while there are none and the
   * job is not finished, waits up to `waitMs` for some.
   */
  stream(accountId: string, endpointId: string, jobId: string, options: LongPollOptions = {}): Promise<StreamReply> {
    return longPoll(this.#deps.clock, options.waitMs ?? 0, this.#streamPoll, {
      accountId,
      endpointId,
      jobId,
      signal: options.signal,
    });
  }

  readonly #streamPoll: LongPollSteps<JobPoll, StreamReply, StreamReply> = {
    wait: (p, timeoutMs) => this.#deps.signals.waiter('stream', p.jobId, timeoutMs, p.signal),
    read: async (p) => {
      const job = await this.#visible(p.accountId, p.endpointId, p.jobId);
      const chunks = await this.#deps.store.stream.drainStream(p.jobId);
      if (chunks.length > 0)
        this.#deps.quota?.streamDrained(
          p.jobId,
          chunks.reduce((n, c) => n + Buffer.byteLength(c), 0),
        );
      return { id: p.jobId, status: job.status, stream: chunks.map((c) => ({ output: JSON.parse(c) as unknown })) };
    },
    ends: (reply) => reply.stream.length > 0 || isTerminalJobStatus(reply.status),
    answer: (_, reply) => reply,
    timedOut: (p) => this.stream(p.accountId, p.endpointId, p.jobId),
  };

  /** Resolves once every accepted submission is committed. */
  flush(): Promise<void> {
    return this.#submits.idle();
  }

  /** The submissions' group commit, to observe its batches (metrics). */
  get groupCommit(): Pick<GroupCommit<unknown, unknown>, 'observe'> {
    return this.#submits;
  }

  /** Group-commit counters of submissions. */
  get batchStats(): GroupCommit<unknown, unknown>['stats'] {
    return this.#submits.stats;
  }

  async #commitSubmits(jobs: readonly NewJob[]): Promise<void[]> {
    await this.#deps.store.rows.insertCommitted(jobs);
    const perEndpoint = new Map<string, number>();
    for (const j of jobs) perEndpoint.set(j.endpointId, (perEndpoint.get(j.endpointId) ?? 0) + 1);
    for (const [endpointId, n] of perEndpoint) {
      this.#deps.flow?.submitted(endpointId, n);
      this.#deps.signals.notify('work', endpointId, n);
    }
    return jobs.map(() => undefined);
  }

  async #visible(accountId: string, endpointId: string, jobId: string): Promise<JobRecord> {
    const job = await this.#deps.store.rows.get(jobId);
    if (!job || job.accountId !== accountId || job.endpointId !== endpointId || !isVisible(job, this.#deps.clock.now()))
      throw notFound('job', jobId);
    return job;
  }
}
