import type { Clock } from '../domain/clock.js';
import { streamQuotaRefusal, type Quotas } from '../domain/quotas.js';

export interface StreamQuotaDeps {
  /** Bytes of the stream chunks a job buffers, as stored (read at most once per job, and on a refusal). */
  usage: { streamBytes(jobId: string): Promise<number> };
  clock: Clock;
  quotas: Pick<Quotas, 'streamBytesPerJob'>;
  /** How old a job's figure may get before a refusal re-reads it. @default 1000 */
  refreshMs?: number;
  /** Jobs whose figures are kept; past it the oldest idle ones are forgotten (re-read if they stream again). @default 10000 */
  maxJobs?: number;
  /** The error a refusal throws. */
  exceeded(detail: string): Error;
}

/** What this process knows of one job's buffered chunks. */
interface Buffered {
  /** Committed bytes: read from the store, plus chunks committed here since, minus drains here. */
  stored: number;
  /** Reserved by chunks being committed here. */
  reserved: number;
  readAt: number;
}

/** Settles a chunk's reservation: `true` once it is committed (it now counts as stored), `false` when it failed. */
export type StreamSettle = (committed: boolean) => void;

/**
 * The per-job stream quota (`quotas.streamBytesPerJob`) without a query per chunk: each job's
 * buffered bytes are kept in memory, read from the store once — on the first chunk this process
 * sees for the job — then moved by the chunks committed and drained here. A chunk reserves its
 * bytes synchronously, before any await, so concurrent chunks of one job never pass the quota
 * together.
 *
 * The figure may overcount (a client drained on another replica, or a chunk was both read and
 * added while it committed): a refusal re-reads it when it is older than `refreshMs`, so a stale
 * figure costs at most one wait of `refreshMs`, and a refused worker at most one query per job per
 * `refreshMs`. It undercounts only what other replicas buffered for the same job since the read:
 * a worker posting one job's chunks to several replicas can pass the quota by what each admits.
 */
export class StreamQuota {
  readonly #deps: StreamQuotaDeps;
  readonly #refreshMs: number;
  readonly #maxJobs: number;
  readonly #jobs = new Map<string, Buffered>();
  readonly #loading = new Map<string, Promise<void>>();

  constructor(deps: StreamQuotaDeps) {
    this.#deps = deps;
    this.#refreshMs = deps.refreshMs ?? 1000;
    this.#maxJobs = deps.maxJobs ?? 10_000;
  }

  /**
   * Reserves `bytes` of a job's chunk under the per-job quota; answers its settle. Synchronous
   * once the job's figure is known.
   * @throws the `exceeded` error naming the quota
   */
  reserve(jobId: string, bytes: number): StreamSettle | Promise<StreamSettle> {
    const job = this.#jobs.get(jobId);
    if (!job) return this.#load(jobId).then(() => this.#reserveKnown(jobId, bytes, true));
    return this.#reserveKnown(jobId, bytes, false);
  }

  /** A client drained `bytes` of the job's chunks here. */
  drained(jobId: string, bytes: number): void {
    const job = this.#jobs.get(jobId);
    if (job) job.stored = Math.max(0, job.stored - bytes);
  }

  /** The job ended: no chunk will be admitted for it any more, its figure is dropped. */
  finished(jobId: string): void {
    this.#jobs.delete(jobId);
  }

  /** Jobs whose figures are held (for tests: bounded, and emptied as jobs finish). */
  get size(): number {
    return this.#jobs.size;
  }

  #reserveKnown(jobId: string, bytes: number, fresh: boolean): StreamSettle | Promise<StreamSettle> {
    const job = this.#jobs.get(jobId);
    if (!job) return this.reserve(jobId, bytes); // forgotten meanwhile (finished or evicted): read again
    const refusal = streamQuotaRefusal(jobId, job.stored + job.reserved, bytes, this.#deps.quotas);
    if (refusal !== null) {
      // The figure may be stale (a drain on another replica): re-read it, at most once per refreshMs.
      if (!fresh && this.#deps.clock.now() - job.readAt >= this.#refreshMs)
        return this.#load(jobId).then(() => this.#reserveKnown(jobId, bytes, true));
      throw this.#deps.exceeded(refusal);
    }
    job.reserved += bytes;
    let settled = false;
    return (committed) => {
      if (settled) return;
      settled = true;
      job.reserved -= bytes;
      if (committed) job.stored += bytes;
    };
  }

  /** Reads the job's stored figure; concurrent first chunks of a job share one read. */
  #load(jobId: string): Promise<void> {
    let loading = this.#loading.get(jobId);
    if (!loading) {
      loading = this.#deps.usage
        .streamBytes(jobId)
        .then((stored) => {
          const readAt = this.#deps.clock.now();
          const job = this.#jobs.get(jobId);
          if (job) Object.assign(job, { stored, readAt });
          else this.#remember(jobId, { stored, reserved: 0, readAt });
        })
        .finally(() => this.#loading.delete(jobId));
      this.#loading.set(jobId, loading);
    }
    return loading;
  }

  /** Keeps a job's figure, forgetting the oldest idle ones past `maxJobs` (jobs that finished on another replica). */
  #remember(jobId: string, job: Buffered): void {
    this.#jobs.set(jobId, job);
    if (this.#jobs.size <= this.#maxJobs) return;
    for (const [id, old] of this.#jobs) {
      if (this.#jobs.size <= this.#maxJobs) break;
      if (old.reserved === 0 && id !== jobId) this.#jobs.delete(id);
    }
  }
}
