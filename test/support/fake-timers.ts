import { FakeClock } from '../../src/domain/clock.js';
import type { Timers } from '../../src/agent/timers.js';

interface Sleeper {
  due: number;
  order: number;
  resolve: () => void;
}

/** Lets pending promise callbacks and immediates run (no time passes on any clock). */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * Waits on a {@link FakeClock}: `sleep()` resolves only when `advance()` moves the clock past its
 * due time. Sleepers wake in due order, and what each wakes runs before the clock moves on.
 */
export class FakeTimers implements Timers {
  readonly clock: FakeClock;
  readonly #sleepers = new Set<Sleeper>();
  #order = 0;

  constructor(clock = new FakeClock()) {
    this.clock = clock;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const sleeper: Sleeper = {
        due: this.clock.now() + Math.max(0, ms),
        order: this.#order++,
        resolve: () => {
          this.#sleepers.delete(sleeper);
          signal?.removeEventListener('abort', sleeper.resolve);
          resolve();
        },
      };
      this.#sleepers.add(sleeper);
      signal?.addEventListener('abort', sleeper.resolve, { once: true });
    });
  }

  /** The due times of the sleepers, soonest first. */
  get dues(): number[] {
    return [...this.#sleepers].map((s) => s.due).sort((a, b) => a - b);
  }

  /** Moves the clock `ms` forward, waking each sleeper at its due time. */
  async advance(ms: number): Promise<void> {
    const target = this.clock.now() + ms;
    for (;;) {
      await settle();
      const next = [...this.#sleepers]
        .filter((s) => s.due <= target)
        .sort((a, b) => a.due - b.due || a.order - b.order)[0];
      if (!next) break;
      if (next.due > this.clock.now()) this.clock.set(next.due);
      next.resolve();
    }
    this.clock.set(target);
    await settle();
  }
}
