import { proxyMeter, type ProxyMeterPort } from './proxy-meter.js';
import { lbMeter, type LbMeterPort } from './lb-meter.js';
import { timingSafeEqual, createHash } from 'node:crypto';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import { isTerminalJobStatus, UNFINISHED_JOB_STATUSES, type UnfinishedJobStatus } from '../domain/job-state.js';
import type { PodStatus } from '../domain/pod-state.js';
import type { Db } from '../store/database.js';
import type { JobRecord } from '../store/job-record.js';
import type { JobFlow } from '../jobs/job-flow.js';
import type { BatchObserver } from '../store/group-commit.js';
import { JobGauges, type JobCountRow } from './job-gauges.js';
import { registerSourceGauges, type MetricsSources } from './source-gauges.js';

export type { MetricsSources } from './source-gauges.js';

export interface MetricsDeps {
  db: Db;
  logger: Pick<Logger, 'warn'>;
  /** The token `GET /metrics` requires. */
  token: string;
  /** Background refresh of the store-held gauges (ms); 0: once at start only. */
  refreshMs: number;
  /**
   * Whether the refresh re-reads the job counts too (true where other replicas move jobs:
   * PostgreSQL). On SQLite this process commits every move, so they are read at start only: that
   * count walks the whole `jobs_take` index (1.5 s with a million queued) on the event loop.
   */
  refreshJobs: boolean;
}

/** Seconds buckets for HTTP latency: from a cached read to a long-poll. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 90];
/** Seconds buckets for job delay and execution time: sub-second to an hour. */
const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
const COMMIT_SECONDS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const BATCH_SIZES = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
/** HTTP methods a label may name; anything else is `other` (a label value never comes from a client unbounded). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * The Prometheus metrics of one server (docs/metrics.md), in a registry of its own (several
 * servers in one process never share one). Counters are incremented where their events happen
 * (an HTTP reply, a job committed, a webhook attempt recorded, a group commit); gauges are read at
 * scrape time from what the services keep in memory (the autoscaler's last pass, the inventory,
 * the job flow's per-endpoint counts). The store-held gauges (queued and running jobs, pods) are
 * re-read in the background every `refreshMs`, never by a scrape.
 */
export class Metrics implements JobFlow {
  readonly registry = new Registry();
  readonly #deps: MetricsDeps;
  readonly #tokenDigest: Buffer;
  readonly #jobs = new JobGauges();
  /** Pods not TERMINATED by `status\u0000gpuType`. */
  readonly #pods = new Map<string, number>();
  #sources: MetricsSources | null = null;
  #timer: NodeJS.Timeout | null = null;
  #refreshing: Promise<void> | null = null;
  #jobsRead = false;

  readonly #httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly #httpSeconds: Histogram<'method' | 'route' | 'status'>;
  readonly #httpSeries = new Map<string, { requests: { inc(): void }; seconds: { observe(value: number): void } }>();
  readonly #submitted: Counter<'endpoint'>;
  readonly #finished: Counter<'endpoint' | 'status'>;
  readonly #requeued: Counter<'endpoint' | 'from'>;
  readonly #delay: Histogram<'endpoint'>;
  readonly #execution: Histogram<'endpoint'>;
  readonly #batchItems: Histogram<'group'>;
  readonly #batchSeconds: Histogram<'group'>;
  readonly #batchFailures: Counter<'group'>;
  readonly #refreshSeconds: Gauge;
  readonly #refreshFailures: Counter;
  #proxyMeter: ProxyMeterPort | null = null;
  #lbMeter: LbMeterPort | null = null;

  constructor(deps: MetricsDeps) {
    this.#deps = deps;
    this.#tokenDigest = digest(deps.token);
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });

    this.#httpRequests = new Counter({
      name: 'gantry_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.#httpSeconds = new Histogram({
      name: 'gantry_http_request_duration_seconds',
      help: 'Time from a request to its reply, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers,
    });

    this.#submitted = new Counter({
      name: 'gantry_jobs_submitted_total',
      help: 'Jobs queued by /run and /runsync, by endpoint id.',
      labelNames: ['endpoint'],
      registers,
    });
    this.#finished = new Counter({
      name: 'gantry_jobs_finished_total',
      help: 'Jobs that reached a final status (COMPLETED, FAILED, TIMED_OUT, CANCELLED), by endpoint id.',
      labelNames: ['endpoint', 'status'],
      registers,
    });
    this.#requeued = new Counter({
      name: 'gantry_jobs_requeued_total',
      help: 'Jobs put back in the queue: from a lost or releasing worker (running) or by /retry (finished).',
      labelNames: ['endpoint', 'from'],
      registers,
    });
    const jobs = this.#jobs;
    new Gauge({
      name: 'gantry_jobs_queued',
      help: 'Jobs IN_QUEUE, by endpoint id.',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const [endpoint, n] of jobs.queued) this.set({ endpoint }, n);
      },
    });
    new Gauge({
      name: 'gantry_jobs_in_progress',
      help: 'Jobs IN_PROGRESS on a worker, by endpoint id.',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const [endpoint, n] of jobs.running) this.set({ endpoint }, n);
      },
    });
    this.#delay = new Histogram({
      name: 'gantry_job_delay_seconds',
      help: 'Time a job waited in the queue before a worker took it, by endpoint id.',
      labelNames: ['endpoint'],
      buckets: JOB_BUCKETS,
      registers,
    });
    this.#execution = new Histogram({
      name: 'gantry_job_execution_seconds',
      help: 'Time from a worker taking a job to its final status, by endpoint id.',
      labelNames: ['endpoint'],
      buckets: JOB_BUCKETS,
      registers,
    });

    registerSourceGauges(registers, () => this.#sources);

    const pods = () => this.#pods;
    new Gauge({
      name: 'gantry_pods',
      help: 'Pods not TERMINATED, by status and GPU type ("cpu" for CPU pods), as of the last refresh.',
      labelNames: ['status', 'gpu_type'],
      registers,
      collect() {
        this.reset();
        for (const [key, n] of pods()) {
          const [status, gpuType] = key.split('\u0000') as [string, string];
          this.set({ status, gpu_type: gpuType }, n);
        }
      },
    });
    this.#batchItems = new Histogram({
      name: 'gantry_store_commit_batch_size',
      help: 'Items per group-commit transaction, by group (submits, takes, posts, chunks, pod-inserts, pod-runs).',
      labelNames: ['group'],
      buckets: BATCH_SIZES,
      registers,
    });
    this.#batchSeconds = new Histogram({
      name: 'gantry_store_commit_duration_seconds',
      help: 'Time one group-commit transaction took, by group.',
      labelNames: ['group'],
      buckets: COMMIT_SECONDS,
      registers,
    });
    this.#batchFailures = new Counter({
      name: 'gantry_store_commit_failures_total',
      help: 'Group-commit transactions that failed (every caller of the batch got the error), by group.',
      labelNames: ['group'],
      registers,
    });
    this.#refreshSeconds = new Gauge({
      name: 'gantry_metrics_refresh_duration_seconds',
      help: 'How long the last background read of the store-held gauges (queued and running jobs, pods) took.',
      registers,
    });
    this.#refreshFailures = new Counter({
      name: 'gantry_metrics_refresh_failures_total',
      help: 'Background reads of the store-held gauges that failed (the gauges keep their last values).',
      registers,
    });
  }

  /** The scrape's content type (Prometheus text exposition 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Whether `presented` is the token: both hashed, then compared in constant time. */
  tokenMatches(presented: string): boolean {
    return timingSafeEqual(digest(presented), this.#tokenDigest);
  }

  /** The scrape: every metric in the text format. Reads memory only. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** The collectors' sources, once the services exist. */
  useSources(sources: MetricsSources): void {
    this.#sources = sources;
  }

  /** A group commit's batches go to the store histograms under `group`. */
  batchObserver(group: string): BatchObserver {
    const items = this.#batchItems.labels(group);
    const seconds = this.#batchSeconds.labels(group);
    const failures = this.#batchFailures.labels(group);
    return (n, ms, committed) => {
      items.observe(n);
      seconds.observe(ms / 1000);
      if (!committed) failures.inc();
    };
  }

  /** The pod HTTP proxy's figures (proxy-meter.ts), registered on the first call. */
  proxyMeter(): ProxyMeterPort {
    this.#proxyMeter ??= proxyMeter(this.registry);
    return this.#proxyMeter;
  }

  /** Load-balancing endpoints' figures (lb-meter.ts), registered on first use. */
  lbMeter(): LbMeterPort {
    this.#lbMeter ??= lbMeter(this.registry);
    return this.#lbMeter;
  }

  /** One HTTP reply. `route` is the matched pattern (`/v2/:endpointId/run`), never the URL; null: no route matched. */
  httpReply(method: string, route: string | null, status: number, ms: number): void {
    const m = METHODS.has(method) ? method : 'other';
    const r = route ?? 'unmatched';
    // One pair of series per (method, route, status): a bounded set, looked up without hashing labels.
    const key = `${m} ${status} ${r}`;
    let series = this.#httpSeries.get(key);
    if (!series) {
      const labels = { method: m, route: r, status };
      series = { requests: this.#httpRequests.labels(labels), seconds: this.#httpSeconds.labels(labels) };
      this.#httpSeries.set(key, series);
    }
    series.requests.inc();
    series.seconds.observe(ms / 1000);
  }

  // ── the job flow (job-flow.ts) ───────────────────────────────────────────────────────────

  submitted(endpointId: string, n: number): void {
    this.#submitted.inc({ endpoint: endpointId }, n);
    this.#jobs.submitted(endpointId, n);
  }

  taken(jobs: readonly JobRecord[]): void {
    this.#jobs.taken(jobs);
    for (const j of jobs) if (j.delayMs !== null) this.#delay.observe({ endpoint: j.endpointId }, j.delayMs / 1000);
  }

  requeued(endpointId: string, n: number, from: 'running' | 'finished'): void {
    this.#requeued.inc({ endpoint: endpointId, from }, n);
    this.#jobs.requeued(endpointId, n, from);
  }

  finished(jobs: readonly JobRecord[]): void {
    this.#jobs.finished(jobs);
    for (const j of jobs) {
      if (!isTerminalJobStatus(j.status)) continue;
      this.#finished.inc({ endpoint: j.endpointId, status: j.status });
      if (j.executionMs !== null && j.startedAt !== null)
        this.#execution.observe({ endpoint: j.endpointId }, j.executionMs / 1000);
    }
  }

  removed(endpointId: string, status: UnfinishedJobStatus, n: number): void {
    this.#jobs.removed(endpointId, status, n);
  }

  /** A pod changed status (the `pod:status` event): counted under its new status from now on. */
  podStatus(from: PodStatus, to: PodStatus, gpuTypeId: string | null): void {
    this.#podCount(from, gpuTypeId, -1);
    if (to !== 'TERMINATED') this.#podCount(to, gpuTypeId, 1);
  }

  #podCount(status: PodStatus, gpuTypeId: string | null, by: number): void {
    const key = `${status}\u0000${gpuTypeId ?? 'cpu'}`;
    const n = (this.#pods.get(key) ?? 0) + by;
    if (n > 0) this.#pods.set(key, n);
    else this.#pods.delete(key);
  }

  // ── the store-held gauges ─────────────────────────────────────────────────────────────────

  /** Reads the store-held gauges once, then every `refreshMs` in the background (0: never again). */
  async start(): Promise<void> {
    await this.refresh();
    if (this.#deps.refreshMs > 0 && !this.#timer) {
      this.#timer = setInterval(() => void this.refresh(), this.#deps.refreshMs);
      this.#timer.unref();
    }
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#refreshing;
  }

  /**
   * One read of queued and running jobs per endpoint (from the `jobs_take` index) and of pods by
   * status and GPU type. Concurrent calls share one read. `jobs`: read the job counts even where
   * the refresh leaves them to the job flow (SQLite).
   */
  refresh(options: { jobs?: boolean } = {}): Promise<void> {
    this.#refreshing ??= this.#read(options.jobs === true).finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #read(forceJobs: boolean): Promise<void> {
    const started = performance.now();
    try {
      const db = this.#deps.db.kysely;
      const readJobs = forceJobs || this.#deps.refreshJobs || !this.#jobsRead;
      const jobRows = readJobs
        ? await db
            .selectFrom('jobs')
            .select(['endpoint_id', 'status', (eb) => eb.fn.countAll<number>().as('n')])
            .where('status', 'in', UNFINISHED_JOB_STATUSES)
            .groupBy(['endpoint_id', 'status'])
            .execute()
        : [];
      const podRows = await db
        .selectFrom('pods')
        .select(['status', 'gpu_type_id', (eb) => eb.fn.countAll<number>().as('n')])
        .where('status', '<>', sql.lit<PodStatus>('TERMINATED'))
        .groupBy(['status', 'gpu_type_id'])
        .execute();
      if (readJobs)
        this.#jobs.reset(
          jobRows.map((r): JobCountRow => ({
            endpointId: r.endpoint_id,
            status: r.status as JobCountRow['status'],
            n: Number(r.n),
          })),
        );
      this.#jobsRead ||= readJobs;
      this.#pods.clear();
      for (const r of podRows) this.#podCount(r.status, r.gpu_type_id, Number(r.n));
      this.#refreshSeconds.set((performance.now() - started) / 1000);
    } catch (err) {
      this.#refreshFailures.inc();
      this.#deps.logger.warn({ err }, 'reading the gauges of queued jobs and pods failed; they keep their last values');
    }
  }
}
