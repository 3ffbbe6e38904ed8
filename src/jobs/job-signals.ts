/**
 * In-process wake-ups for the long-polls of the job API, so waiting requests never poll the
 * database (DESIGN "Jobs: the hot path"). A waiter is registered *before* its caller checks the
 * database and awaited after, so a notification that lands in between is never lost.
 *
 * Across replicas, a relay (`PostgresNotifyRelay`, src/store/notify-relay.ts) forwards local
 * notifications through `onLocal` and delivers remote ones with `deliver`; a waiter woken without
 * cause re-reads the database and waits again, so extra wake-ups are harmless.
 */

export interface Waiter {
  /** true when notified, false on timeout, abort or cancel. */
  readonly promise: Promise<boolean>;
  /** Stops waiting. A wake-up this waiter had already received is passed on to the next waiter. */
  cancel(): void;
}

interface Entry {
  settled: boolean;
  notified: boolean;
  settle(notified: boolean): void;
}

/** Waiters per key, woken oldest first. */
export class KeyedSignal {
  readonly #waiters = new Map<string, Set<Entry>>();
  #closed = false;

  /** Registers a waiter on `key` for at most `timeoutMs` (real time), ended early by `signal`. */
  waiter(key: string, timeoutMs: number, signal?: CancelSignal): Waiter {
    let entry!: Entry;
    const promise = new Promise<boolean>((resolve) => {
      // Declared before `settle`, which may run (and read it) before the timer is set.
      // eslint-disable-next-line prefer-const
      let timer: NodeJS.Timeout | undefined;
      const onAbort = (): void => entry.settle(false);
      entry = {
        settled: false,
        notified: false,
        settle: (notified) => {
          if (entry.settled) return;
          entry.settled = true;
          entry.notified = notified;
          if (timer) clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          this.#remove(key, entry);
          resolve(notified);
        },
      };
      const set = this.#waiters.get(key) ?? new Set<Entry>();
      set.add(entry);
      this.#waiters.set(key, set);
      if (this.#closed || signal?.aborted || timeoutMs <= 0) {
        entry.settle(false);
        return;
      }
      timer = setTimeout(() => entry.settle(false), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    return {
      promise,
      cancel: () => {
        if (entry.settled) {
          if (entry.notified) this.notify(key, 1);
          entry.notified = false;
          return;
        }
        entry.settle(false);
      },
    };
  }

  /** Wakes up to `count` waiters of `key`, oldest first; answers how many were woken. */
  notify(key: string, count = Number.POSITIVE_INFINITY): number {
    const set = this.#waiters.get(key);
    if (!set) return 0;
    let woken = 0;
    for (const entry of [...set]) {
      if (woken >= count) break;
      entry.settle(true);
      woken++;
    }
    return woken;
  }

  /** Wakes every waiter of every key. */
  notifyAll(): void {
    for (const key of [...this.#waiters.keys()]) this.notify(key);
  }

  /** Ends every wait now, as if timed out, and every later one at once (the server is closing). */
  close(): void {
    this.#closed = true;
    for (const set of [...this.#waiters.values()]) for (const entry of [...set]) entry.settle(false);
  }

  /** Waiters currently registered on `key`. */
  waiting(key: string): number {
    return this.#waiters.get(key)?.size ?? 0;
  }

  #remove(key: string, entry: Entry): void {
    const set = this.#waiters.get(key);
    if (!set) return;
    set.delete(entry);
    if (set.size === 0) this.#waiters.delete(key);
  }
}

/**
 * The `stop` channel's key: a worker is (endpoint, worker id), as in the workers registry — a
 * worker id alone may be used by another account's worker on another endpoint. Endpoint ids hold
 * no NUL, so the key is unambiguous.
 */
export const stopKey = (endpointId: string, workerId: string): string => `${endpointId}\u0000${workerId}`;

/** What can be waited for. */
export type JobChannel = 'work' | 'job' | 'stream' | 'stop';

export interface JobSignalsOptions {
  /** Called for every local notification, to forward it to other replicas. */
  onLocal?: (channel: JobChannel, key: string, count: number) => void;
}

/**
 * The four wake-ups of the job API:
 * - `work` per endpoint: jobs were queued (submit, retry, requeue) → `job-take` long-polls;
 * - `job` per job id: the job changed state or vanished → `runsync`, `status-sync`;
 * - `stream` per job id: chunks were buffered or the job finished → `stream?wait`;
 * - `stop` per worker (`stopKey`: endpoint and worker id): a job it holds must stop → the `job-stop` channel.
 */
export class JobSignals {
  readonly #channels: Record<JobChannel, KeyedSignal> = {
    work: new KeyedSignal(),
    job: new KeyedSignal(),
    stream: new KeyedSignal(),
    stop: new KeyedSignal(),
  };
  readonly #onLocal: JobSignalsOptions['onLocal'];

  constructor(options: JobSignalsOptions = {}) {
    this.#onLocal = options.onLocal;
  }

  waiter(channel: JobChannel, key: string, timeoutMs: number, signal?: CancelSignal): Waiter {
    return this.#channels[channel].waiter(key, timeoutMs, signal);
  }

  /** A local event: wakes local waiters and goes to the relay. `work` wakes one taker per queued job. */
  notify(channel: JobChannel, key: string, count = Number.POSITIVE_INFINITY): void {
    this.#channels[channel].notify(key, count);
    this.#onLocal?.(channel, key, count);
  }

  /** An event from another replica: wakes local waiters only. An unknown channel (a newer replica's) is ignored. */
  deliver(channel: JobChannel, key: string, count = Number.POSITIVE_INFINITY): void {
    if (Object.hasOwn(this.#channels, channel)) this.#channels[channel].notify(key, count);
  }

  /** Wakes every local waiter, to re-read the database (notifications from other replicas may have been missed). */
  wakeAll(): void {
    for (const signal of Object.values(this.#channels)) signal.notifyAll();
  }

  waiting(channel: JobChannel, key: string): number {
    return this.#channels[channel].waiting(key);
  }

  /**
   * The server is closing: long-polls answer now with what they have (a take with no job answers
   * 204, a status-sync the job as it is) rather than holding the shutdown for up to their wait.
   */
  close(): void {
    for (const signal of Object.values(this.#channels)) signal.close();
  }
}

/** How a long-poll of the job API waits. */
export interface LongPollOptions {
  /** Longest wait, real-time ms. @default 0 (answer at once) */
  waitMs?: number;
  /** Ends the wait early (the client went away). */
  signal?: CancelSignal;
}

/**
 * What a wait needs of an abort signal. `AbortSignal` fits; so does the HTTP layer's lighter
 * "client went away" flag (an AbortController per long-poll request is a measurable cost).
 */
export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}
