import type { Clock } from '../domain/clock.js';
import { ApiError } from '../domain/errors.js';
import { storedBytesRefusal, submitQuotaRefusal, type JobHoldings, type Quotas } from '../domain/quotas.js';
import { StreamQuota, type StreamSettle } from './stream-quota.js';

export interface JobQuotaDeps {
  /** Every account's counters as stored (migration 0006's triggers keep them exact). */
  usage: { byAccount(): Promise<Map<string, JobHoldings>>; streamBytes(jobId: string): Promise<number> };
  clock: Clock;
  quotas: Pick<Quotas, 'queuedJobs' | 'storedJobBytes' | 'streamBytesPerJob'>;
  /** How old the stored counters may get before a request starts a refresh. @default 1000 */
  refreshMs?: number;
  /** Jobs whose buffered stream bytes are kept in memory (see StreamQuota). @default 10000 */
  maxStreamingJobs?: number;
}

/** Why storing bytes was refused, or the settle of their admission. */
export type BytesAdmission = { refusal: string } | { settle: () => void };

const add = (map: Map<string, JobHoldings>, accountId: string, queuedJobs: number, storedBytes: number): void => {
  const h = map.get(accountId);
  if (h) {
    h.queuedJobs += queuedJobs;
    h.storedBytes += storedBytes;
  } else map.set(accountId, { queuedJobs, storedBytes });
};

const ZERO: JobHoldings = Object.freeze({ queuedJobs: 0, storedBytes: 0 });

/**
 * The queued-jobs and stored-bytes quotas on the job hot path, without a query per request: the
 * stored counters of every account, re-read (one small table) by the first request that finds them
 * older than `refreshMs`, plus what this process admitted since.
 *
 * The view never undercounts this process's own work: what it admitted is counted from the moment
 * of admission, and kept in the view across a refresh until the refresh's read is known to include
 * it (what was still uncommitted when the read began is carried over). Decrements (takes, drains,
 * expiry) show at the next refresh, so a tenant at its quota waits up to `refreshMs` (Retry-After).
 * Replicas sharing PostgreSQL see each other's admissions at their next refresh: the accounts'
 * totals can pass a quota by what the other replicas admit within one `refreshMs`.
 */
export class JobQuota {
  readonly #deps: JobQuotaDeps;
  readonly #refreshMs: number;
  #stored = new Map<string, JobHoldings>();
  /** Admitted here since the stored figures were read (or uncommitted when the read began). */
  #recent = new Map<string, JobHoldings>();
  /** While a refresh reads: what to carry into `#recent` once it lands. */
  #next: Map<string, JobHoldings> | null = null;
  /** Admitted here, not yet committed (or failed). */
  readonly #uncommitted = new Map<string, JobHoldings>();
  /** Per job: its buffered stream chunks, in memory. */
  readonly #streams: StreamQuota;
  #readAt = -Infinity;
  #loading: Promise<void> | null = null;

  constructor(deps: JobQuotaDeps) {
    this.#deps = deps;
    this.#refreshMs = deps.refreshMs ?? 1000;
    this.#streams = new StreamQuota({
      usage: deps.usage,
      clock: deps.clock,
      quotas: deps.quotas,
      refreshMs: this.#refreshMs,
      ...(deps.maxStreamingJobs !== undefined ? { maxJobs: deps.maxStreamingJobs } : {}),
      exceeded: (detail) => this.#exceeded(detail),
    });
  }

  /** What the account holds, as this process knows it now. */
  held(accountId: string): JobHoldings {
    const stored = this.#stored.get(accountId) ?? ZERO;
    const recent = this.#recent.get(accountId) ?? ZERO;
    return { queuedJobs: stored.queuedJobs + recent.queuedJobs, storedBytes: stored.storedBytes + recent.storedBytes };
  }

  /**
   * Admits one more queued job of `bytes` (its input), or refuses it; the caller calls the answered
   * function once the submission committed or failed.
   * @throws ApiError QUOTA_EXCEEDED (429) with Retry-After, naming the quota and its value
   */
  admitSubmit(accountId: string, bytes: number): (() => void) | Promise<() => void> {
    const loading = this.#fresh();
    if (loading) return loading.then(() => this.admitSubmit(accountId, bytes));
    const refusal = submitQuotaRefusal(this.held(accountId), bytes, this.#deps.quotas);
    if (refusal !== null) throw this.#exceeded(refusal);
    return this.#admit(accountId, 1, bytes);
  }

  /** `admitSubmit` for a job going back to the queue (`/retry`): its input is stored already. */
  async admitRequeue(accountId: string): Promise<() => void> {
    await this.#fresh();
    const refusal = submitQuotaRefusal(this.held(accountId), 0, this.#deps.quotas);
    if (refusal !== null) throw this.#exceeded(refusal);
    return this.#admit(accountId, 1, 0);
  }

  /**
   * Storing `bytes` more (an output, a stream chunk): why it is refused, or the settle of its
   * admission. Synchronous while the stored figures are fresh (no await on the hot path).
   */
  admitBytes(accountId: string, bytes: number): BytesAdmission | Promise<BytesAdmission> {
    const loading = this.#fresh();
    if (loading) return loading.then(() => this.admitBytes(accountId, bytes));
    const refusal = storedBytesRefusal(this.held(accountId), bytes, this.#deps.quotas);
    return refusal !== null ? { refusal } : { settle: this.#admit(accountId, 0, bytes) };
  }

  /**
   * Admits a stream chunk of `bytes` for a job: under the per-job quota (its chunks no client has
   * drained yet, kept in memory: see StreamQuota) and the account's stored bytes. The per-job
   * bytes are reserved before any await, so concurrent chunks of a job cannot pass it together.
   * The caller calls the answered function once the chunk committed (`true`) or failed (`false`).
   * Synchronous once the job's figure is known and the account's is fresh.
   * @throws ApiError QUOTA_EXCEEDED (429) naming the quota: the worker's library drops the chunk and the job goes on
   */
  admitStreamChunk(accountId: string, jobId: string, bytes: number): StreamSettle | Promise<StreamSettle> {
    const reserved = this.#streams.reserve(jobId, bytes);
    if (reserved instanceof Promise) return reserved.then((settle) => this.#admitChunkBytes(accountId, bytes, settle));
    return this.#admitChunkBytes(accountId, bytes, reserved);
  }

  /** A client drained `bytes` of a job's stream chunks (they no longer count against its quota). */
  streamDrained(jobId: string, bytes: number): void {
    this.#streams.drained(jobId, bytes);
  }

  /** A job ended: its in-memory stream figure is dropped. */
  jobFinished(jobId: string): void {
    this.#streams.finished(jobId);
  }

  /** Jobs whose stream figure is held in memory (bounded by `maxStreamingJobs`). */
  get streamingJobs(): number {
    return this.#streams.size;
  }

  #admitChunkBytes(accountId: string, bytes: number, streamSettle: StreamSettle): StreamSettle | Promise<StreamSettle> {
    const decide = (admitted: BytesAdmission): StreamSettle => {
      if ('refusal' in admitted) {
        streamSettle(false);
        throw this.#exceeded(admitted.refusal);
      }
      return (committed) => {
        admitted.settle();
        streamSettle(committed);
      };
    };
    let admitted: BytesAdmission | Promise<BytesAdmission>;
    try {
      admitted = this.admitBytes(accountId, bytes);
    } catch (err) {
      streamSettle(false);
      throw err;
    }
    return admitted instanceof Promise
      ? admitted.then(decide, (err: unknown) => {
          streamSettle(false);
          throw err;
        })
      : decide(admitted);
  }

  /** The error a refusal answers; Retry-After: when the next refresh may show room. */
  #exceeded(detail: string): ApiError {
    return new ApiError('QUOTA_EXCEEDED', detail, {
      headers: { 'retry-after': String(Math.max(1, Math.ceil(this.#refreshMs / 1000))) },
    });
  }

  #admit(accountId: string, queuedJobs: number, storedBytes: number): () => void {
    add(this.#recent, accountId, queuedJobs, storedBytes);
    if (this.#next) add(this.#next, accountId, queuedJobs, storedBytes);
    add(this.#uncommitted, accountId, queuedJobs, storedBytes);
    let settled = false;
    return () => {
      if (settled) return;
      settled = true;
      add(this.#uncommitted, accountId, -queuedJobs, -storedBytes);
      if (this.#uncommitted.get(accountId)?.queuedJobs === 0 && this.#uncommitted.get(accountId)?.storedBytes === 0)
        this.#uncommitted.delete(accountId);
    };
  }

  /**
   * Nothing while the stored figures are fresh; else the re-read to wait for — one read, whoever
   * asks meanwhile (at most one wait per `refreshMs` on the hot path, for a one-table read).
   */
  #fresh(): Promise<void> | undefined {
    if (this.#deps.clock.now() - this.#readAt < this.#refreshMs) return undefined;
    return (this.#loading ??= this.#refresh().finally(() => (this.#loading = null)));
  }

  async #refresh(): Promise<void> {
    // Whatever is uncommitted now may miss the read: keep it counted past it.
    const next = new Map<string, JobHoldings>();
    for (const [id, h] of this.#uncommitted) next.set(id, { ...h });
    this.#next = next;
    try {
      const stored = await this.#deps.usage.byAccount();
      this.#stored = stored;
      this.#recent = next;
      this.#readAt = this.#deps.clock.now();
    } finally {
      if (this.#next === next) this.#next = null;
    }
  }
}
