import type { AutoscalerConfig } from './autoscaler-config.js';
import type { Clock } from '../domain/clock.js';

export interface PassLoopOptions {
  clock: Clock;
  /** The one pass; it is never run twice at once. */
  pass: () => Promise<void>;
  /** A pass that threw (the loop carries on). */
  onError: (err: unknown) => void;
  /** `intervalMs` between passes, `nudgeGapMs` at least between passes that nudges wake (read at each use). */
  config: Pick<AutoscalerConfig, 'intervalMs' | 'nudgeGapMs'>;
}

/**
 * Runs a pass every `intervalMs`, and sooner when nudged. Passes never overlap: a nudge during a
 * pass asks for one more right after it. A nudge after a quiet spell runs a pass at once; a flood
 * of nudges runs at most one pass per `nudgeGapMs`.
 *
 * Starting takes two steps, so that the owner can get ready in between: `open()` lets nudges
 * schedule passes, `begin()` schedules the first.
 */
export class PassLoop {
  readonly #options: PassLoopOptions;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = true;
  #again = false;
  #timerDue = 0;
  #timerDelay = 0;
  #lastPassAt = -Infinity;
  #manual = false;

  constructor(options: PassLoopOptions) {
    this.#options = options;
  }

  /** True before `open()` and after `stop()`. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** From now on nudges schedule passes. */
  open(): void {
    this.#stopped = false;
  }

  /** Schedules the first pass at once; `manual`: never (the owner runs its passes itself) and nudges are ignored. */
  begin(options: { manual: boolean }): void {
    if (options.manual) this.#manual = true;
    else this.#schedule(0);
  }

  /** Asks for a pass soon; passes never overlap. */
  nudge(): void {
    if (this.#stopped || this.#manual) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#schedule(this.#nudgeDelay());
  }

  /** Schedules no more passes and waits for the one running, if any. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running?.catch(() => undefined);
  }

  /** How long until a woken pass may run: at once after a quiet spell, else the rest of the gap. */
  #nudgeDelay(): number {
    return Math.max(0, this.#lastPassAt + this.#options.config.nudgeGapMs - this.#options.clock.now());
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    const due = this.#options.clock.now() + delayMs;
    if (this.#timer) {
      // A pass is already due no later; but a pass due now does not sit behind a timer's wait.
      if (this.#timerDue <= due && (delayMs > 0 || this.#timerDelay === 0)) return;
      clearTimeout(this.#timer);
    }
    this.#timerDue = due;
    this.#timerDelay = delayMs;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#lastPassAt = this.#options.clock.now();
      this.#running = this.#options
        .pass()
        .catch((err: unknown) => this.#options.onError(err))
        .finally(() => {
          this.#running = null;
          const again = this.#again;
          this.#again = false;
          this.#schedule(again ? this.#nudgeDelay() : this.#options.config.intervalMs);
        });
    }, delayMs);
    this.#timer.unref?.();
  }
}
