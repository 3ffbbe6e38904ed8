/**
 * Waiting, as a dependency: the agent's loops (heartbeats, batching, backoff, re-discovery) wait
 * through this, so tests drive them on a fake clock (test/support/fake-timers.ts) instead of
 * sleeping.
 */
export interface Timers {
  /** Resolves after `ms`, or at once when `signal` aborts (it never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemTimers: Timers = {
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal?.addEventListener('abort', done, { once: true });
    }),
};
