/**
 * One sampling loop per runtime, shared by every reader: utilisation is measured here, on an
 * interval, and `inspect()`/`list()` answer the last sample, so a burst of GETs costs no
 * measurement at all. The loop runs only while something is live: `wake()` (an instance started)
 * starts it, and it stops by itself at the first turn that finds nothing live.
 */
import type { Logger } from 'pino';

/** How the loop waits, as a dependency: tests drive it on a fake clock (test/support/fake-timers.ts). */
export interface SamplerTimers {
  /** Resolves after `ms`, or at once when `signal` aborts (it never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Real waiting that never keeps the server's process alive on its own. */
export const unrefTimers: SamplerTimers = {
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      timer.unref();
      signal?.addEventListener('abort', done, { once: true });
    }),
};

/** Config `runtime.statsIntervalMs`. @default 5000 */
const DEFAULT_STATS_INTERVAL_MS = 5_000;

export interface IntervalSamplerOptions {
  /** Time between the end of one sample and the start of the next. @default 5000 */
  intervalMs?: number;
  /** @default real timers, unref'd */
  timers?: SamplerTimers;
  logger: Logger;
  /** Whether anything is there to sample now; the loop ends at the first turn where it is not. */
  live: () => boolean;
  /** Takes one sample of everything live and keeps it where readers find it. */
  sample: () => Promise<void>;
}

export class IntervalSampler {
  readonly #o: IntervalSamplerOptions;
  readonly #stop = new AbortController();
  #running: Promise<void> | null = null;
  #samples = 0;

  constructor(options: IntervalSamplerOptions) {
    this.#o = options;
  }

  get intervalMs(): number {
    return this.#o.intervalMs ?? DEFAULT_STATS_INTERVAL_MS;
  }

  /** Whether the loop runs (something was live at its last turn). */
  get running(): boolean {
    return this.#running !== null;
  }

  /** Samples taken so far (for tests and diagnostics). */
  get samples(): number {
    return this.#samples;
  }

  /** Starts the loop unless it runs: call it once something became live. The first sample is taken at once. */
  wake(): void {
    if (this.#running || this.#stop.signal.aborted) return;
    this.#running = this.#loop();
  }

  /** Ends the loop; a sample under way finishes, none follows. */
  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  async #loop(): Promise<void> {
    const { logger, live, sample } = this.#o;
    // wake() stores this promise first: a loop that ends at once (nothing live) must clear it after.
    await Promise.resolve();
    for (;;) {
      // Decided and cleared in one synchronous step, so a wake() right after sees a stopped loop.
      if (this.#stop.signal.aborted || !live()) {
        this.#running = null;
        return;
      }
      try {
        await sample();
      } catch (err) {
        logger.warn({ err }, 'taking a utilisation sample failed; the next turn tries again');
      }
      this.#samples++;
      await (this.#o.timers ?? unrefTimers).sleep(this.intervalMs, this.#stop.signal);
    }
  }
}
