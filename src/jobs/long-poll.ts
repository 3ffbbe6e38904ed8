import type { Clock } from '../domain/clock.js';
import type { Waiter } from './job-signals.js';

/** The parts of one long-poll of the job API; {@link longPoll} runs them in the order that loses no wake-up. */
export interface LongPollSteps<T, R> {
  /** Registers a wake-up for at most `timeoutMs` (the wait left). Called before every read. */
  wait(timeoutMs: number): Waiter;
  /** Reads what the caller waits for (it may consume it, like a take). */
  read(): Promise<T>;
  /** Whether a read ends the wait (a job came, the job finished). */
  ends(value: T): boolean;
  /** The reply made of a read that ends the wait, or of the last read when no time is left. */
  answer(value: T): R | Promise<R>;
  /** The reply when the wait ends without a wake-up: timed out, aborted, or the server closing. */
  timedOut(): R | Promise<R>;
  /** After a wake-up, a reply that needs no read (e.g. the commit that woke it carried the row). @default none: read again */
  woken?(): R | undefined;
}

/**
 * Waits up to `waitMs` on `clock` for a read that ends the wait. Each round registers its waiter
 * *before* reading and awaits it after, so a notification that lands during the read is never
 * lost; a waiter not awaited (the read answered or threw) is cancelled, which passes a wake-up it
 * already received on to the next waiter. A wake-up without an answer reads again, waiting only
 * for the time left; with none left the read is answered as it is. `waitMs` 0 reads once.
 */
export async function longPoll<T, R>(clock: Clock, waitMs: number, steps: LongPollSteps<T, R>): Promise<R> {
  const deadline = clock.now() + waitMs;
  for (;;) {
    const remaining = deadline - clock.now();
    const waiter = remaining > 0 ? steps.wait(remaining) : null;
    let value: T;
    try {
      value = await steps.read();
    } catch (err) {
      waiter?.cancel();
      throw err;
    }
    if (!waiter || steps.ends(value)) {
      waiter?.cancel();
      return steps.answer(value);
    }
    if (!(await waiter.promise)) return steps.timedOut();
    const reply = steps.woken?.();
    if (reply !== undefined) return reply;
  }
}
