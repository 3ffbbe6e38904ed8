import type { Clock } from '../domain/clock.js';
import type { JobStore } from '../store/job-store.js';

export interface JobSequenceDeps {
  store: { rows: Pick<JobStore['rows'], 'maxSeq'> };
  clock: Clock;
}

/**
 * Queue positions: increasing in this process, ahead of everything stored (seeded once from the
 * store), and close to submission time across replicas (`now × 1000`).
 */
export class JobSequence {
  readonly #deps: JobSequenceDeps;
  #lastSeq = 0;
  #seqSeed: Promise<void> | null = null;
  #seeded = false;

  constructor(deps: JobSequenceDeps) {
    this.#deps = deps;
  }

  /** Whether `ensure()` has already read the store (then it need not be awaited). */
  get seeded(): boolean {
    return this.#seeded;
  }

  /** The next queue position; call `ensure()` first. */
  next(): number {
    this.#lastSeq = Math.max(this.#lastSeq + 1, this.#deps.clock.now() * 1000);
    return this.#lastSeq;
  }

  /** Seeds the sequence from the store, once (again after a failed read). */
  ensure(): Promise<void> {
    this.#seqSeed ??= this.#deps.store.rows.maxSeq().then(
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
