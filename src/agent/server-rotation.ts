/**
 * Which control-plane URL the agent talks to, and how long it waits after a failure. A call that
 * cannot reach its server moves the agent to the next URL (`--server A,B`: replicas behind their
 * own addresses) and backs off: doubling from `initialMs` up to `maxMs`, each delay drawn between
 * half of it and all of it, so a fleet that lost its control plane does not come back in step.
 *
 * The poll and the report run at once and fail together when a server goes away: only the first
 * failure of an `epoch` (the calls begun since the last failure) counts, so one outage moves one
 * server on, not two.
 */
import type { Clock } from '../domain/clock.js';
import type { Timers } from './timers.js';

export interface Backoff {
  /** the first retry's delay, ms @default 250 */
  initialMs: number;
  /** the longest, ms @default 5000 */
  maxMs: number;
}

const DEFAULT_BACKOFF: Backoff = { initialMs: 250, maxMs: 5_000 };

export interface ServerRotationDeps {
  servers: readonly string[];
  clock: Clock;
  timers: Timers;
  /** [0, 1) @default Math.random */
  random?: () => number;
  backoff?: Backoff;
}

export class ServerRotation {
  readonly #servers: readonly string[];
  readonly #clock: Clock;
  readonly #timers: Timers;
  readonly #random: () => number;
  readonly #backoff: Backoff;
  #index = 0;
  #epoch = 0;
  #failures = 0;
  #retryAt = -Infinity;

  constructor(deps: ServerRotationDeps) {
    if (deps.servers.length === 0) throw new Error('the agent needs at least one control-plane URL');
    this.#servers = deps.servers;
    this.#clock = deps.clock;
    this.#timers = deps.timers;
    this.#random = deps.random ?? Math.random;
    this.#backoff = deps.backoff ?? DEFAULT_BACKOFF;
  }

  /** The URL calls go to now. */
  get server(): string {
    return this.#servers[this.#index]!;
  }

  /** Counts failures: a call remembers it when it begins and hands it to {@link failed}. */
  get epoch(): number {
    return this.#epoch;
  }

  /** Failures in a row (0 once a call succeeds). */
  get failures(): number {
    return this.#failures;
  }

  /**
   * A call begun at `epoch` failed. The first such failure starts a backoff and, with `move`
   * (the server did not answer), moves to the next URL; answers the delay (0 when it did not count).
   */
  failed(epoch: number, options: { move: boolean }): number {
    if (epoch !== this.#epoch) return 0;
    this.#epoch += 1;
    this.#failures += 1;
    if (options.move) this.#index = (this.#index + 1) % this.#servers.length;
    const ceiling = Math.min(this.#backoff.maxMs, this.#backoff.initialMs * 2 ** (this.#failures - 1));
    const delay = Math.round(ceiling / 2 + (this.#random() * ceiling) / 2);
    this.#retryAt = this.#clock.now() + delay;
    return delay;
  }

  /** A call begun at `epoch` succeeded: the next failure starts from the first delay again. */
  succeeded(epoch: number): void {
    if (epoch === this.#epoch) this.#failures = 0;
  }

  /** Waits out the current backoff (at once when there is none, or when `signal` aborts). */
  async ready(signal: AbortSignal): Promise<void> {
    for (;;) {
      const wait = this.#retryAt - this.#clock.now();
      if (wait <= 0 || signal.aborted) return;
      await this.#timers.sleep(wait, signal);
    }
  }
}
