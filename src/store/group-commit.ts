/**
 * Group commit: many concurrent callers, few transactions. Each `add(item)` resolves only after
 * the transaction holding its item committed, and rejects when that transaction failed — so a
 * caller may acknowledge its request as soon as its promise resolves (DESIGN "Jobs: the hot
 * path": nothing is acknowledged before its commit).
 *
 * No timers trade latency for batching: when idle, a flush starts on the next turn of the event
 * loop (so the items of one I/O phase travel together); while a flush is in flight, new items
 * wait and go together in the next one. Under load, batch size grows with commit latency.
 */

export interface GroupCommitOptions<T, R> {
  /**
   * Commits a batch in ONE transaction and answers one result per item, in order. Throwing
   * rejects every caller of the batch (and only them).
   */
  commit: (items: readonly T[]) => Promise<readonly R[]>;
  /** Largest batch per transaction. @default 1000 */
  maxBatchSize?: number;
  /**
   * Batches committed at the same time. Keep 1 on SQLite (one writer); more can help on
   * PostgreSQL, whose pool has several connections. @default 1
   */
  concurrency?: number;
}

/** A batch's size, its commit's duration (ms) and whether it committed. */
export type BatchObserver = (items: number, ms: number, committed: boolean) => void;

interface Pending<T, R> {
  item: T;
  resolve(result: R): void;
  reject(err: unknown): void;
}

export class GroupCommit<T, R> {
  readonly #commit: (items: readonly T[]) => Promise<readonly R[]>;
  readonly #maxBatchSize: number;
  readonly #concurrency: number;
  #queue: Array<Pending<T, R>> = [];
  #inFlight = 0;
  #scheduled = false;
  #idleWaiters: Array<() => void> = [];
  /** Counters for tests and benchmarks. */
  readonly stats = { batches: 0, items: 0, failedBatches: 0 };
  /** Told of each batch once committed or failed (metrics). */
  #observer: BatchObserver | null = null;

  constructor(options: GroupCommitOptions<T, R>) {
    this.#commit = options.commit;
    this.#maxBatchSize = Math.max(1, options.maxBatchSize ?? 1000);
    this.#concurrency = Math.max(1, options.concurrency ?? 1);
  }

  /** Queues `item` for the next transaction; resolves with its result once that transaction committed. */
  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  /** Tells `observer` of every later batch: its size, how long its commit took, whether it committed. */
  observe(observer: BatchObserver): void {
    this.#observer = observer;
  }

  /** Items waiting for a transaction (not counting those being committed). */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Resolves when nothing is waiting or being committed. */
  idle(): Promise<void> {
    if (this.#queue.length === 0 && this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#concurrency) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      while (this.#inFlight < this.#concurrency && this.#queue.length > 0) void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#inFlight++;
    try {
      // Keep committing while callers keep arriving: each turn takes everything that queued up
      // during the previous commit.
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#maxBatchSize);
        this.stats.batches++;
        this.stats.items += batch.length;
        let results: readonly R[];
        const started = this.#observer ? performance.now() : 0;
        try {
          results = await this.#commit(batch.map((p) => p.item));
          if (results.length !== batch.length)
            throw new Error(`group commit answered ${results.length} results for ${batch.length} items`);
        } catch (err) {
          this.stats.failedBatches++;
          this.#observer?.(batch.length, performance.now() - started, false);
          for (const p of batch) p.reject(err);
          continue;
        }
        this.#observer?.(batch.length, performance.now() - started, true);
        batch.forEach((p, i) => p.resolve(results[i]!));
      }
    } finally {
      this.#inFlight--;
      if (this.#queue.length > 0) this.#schedule();
      else if (this.#inFlight === 0) for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
  }
}
