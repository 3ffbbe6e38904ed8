import type { Clock } from '../domain/clock.js';
import type { Waiter } from './job-signals.js';

/**
 * The parts of one kind of long-poll of the job API; {@link longPoll} runs them in the order that
 * loses no wake-up. Built once per kind (not per request: the steps are on the hot path), each
 * part is given the request's `args`.
 */
export interface LongPollSteps<A, T, R> {
  /** Registers a wake-up for at most `timeoutMs` (the wait left). Called before every read. */
  wait(args: A, timeoutMs: number): Waiter;
  /** Reads what the caller waits for (it may consume it, like a take). */
  read(args: A): Promise<T>;
  /** Whether a read ends the wait (a job came, the job finished). */
  ends(value: T): boolean;
  /** The reply made of a read that ends the wait, or of the last read when no time is left. */
  answer(args: A, value: T): R | Promise<R>;
  /** The reply when the wait ends without a wake-up: timed out, aborted, or the server closing. */
  timedOut(args: A): R | Promise<R>;
  /** After a wake-up, a reply that needs no read (e.g. the commit that woke it carried the row). @default none: read again */
  woken?(args: A): R | undefined;
}

/**
 * Waits up to `waitMs` on `clock` for a read that ends the wait. Each round registers its waiter
 * *before* reading and awaits it after, so a notification that lands during the read is never
 * lost; a waiter not awaited (the read answered or threw) is cancelled, which passes a wake-up it
 * already received on to the next waiter. A wake-up without an answer reads again, waiting only
 * for the time left; with none left the read is answered as it is. `waitMs` 0 reads once.
 */
export async function longPoll<A, T, R>(
  clock: Clock,
  waitMs: number,
  steps: LongPollSteps<A, T, R>,
  args: A,
): Promise<R> {
  const deadline = clock.now() + waitMs;
  for (;;) {
    const remaining = deadline - clock.now();
    const waiter = remaining > 0 ? steps.wait(args, remaining) : null;
    let value: T;
    try {
      value = await steps.read(args);
    } catch (err) {
      waiter?.cancel();
      throw err;
    }
    if (!waiter || steps.ends(value)) {
      waiter?.cancel();
      return steps.answer(args, value);
    }
    if (!(await waiter.promise)) return steps.timedOut(args);
    const reply = steps.woken?.(args);
    if (reply !== undefined) return reply;
  }
}
