/**
 * The platform's own lines about a pod or a serverless worker: the `system` source of the log
 * stream (docs/logs.md). Lifecycle code writes them through {@link SystemLogWriter}; the log
 * stream reads and follows them.
 *
 * Lines are stored (src/store/system-log-store.ts), so every replica reads what any wrote.
 * Followers wait on an in-process wake for lines written here and, for lines another replica
 * wrote, on one shared poll per replica (`seq > cursor`, only while someone follows), so a
 * thousand followers cost one query per interval, not one each. A PostgreSQL line committed after
 * one with a higher seq may pass the poll's cursor unseen: each follower also re-reads on its own
 * every 30 s (the wait's timeout), so such a line is late, never lost.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { SystemLogRead, SystemLogRow, SystemLogStore } from '../store/system-log-store.js';

/** What lifecycle code needs: one call per line. Never throws (a lost line must not fail a lifecycle step). */
export interface SystemLogWriter {
  write(instanceId: string, line: string): Promise<void>;
}

export interface SystemLogDeps {
  store: SystemLogStore;
  clock: Clock;
  logger: Pick<Logger, 'warn'>;
  /** How often the shared poll looks for lines other replicas wrote, while anyone follows. @default 1000 */
  pollMs?: number;
  /** Lines of terminated pods and gone workers are deleted this long after. @default 1 day */
  retainGoneMs?: number;
}

const PRUNE_EVERY_MS = 60 * 60 * 1000;

export class SystemLog implements SystemLogWriter {
  readonly #d: SystemLogDeps;
  /** Followers waiting for a new line, by instance id. */
  readonly #waiters = new Map<string, Set<() => void>>();
  #waiting = 0;
  #cursor: number | null = null;
  #timer: NodeJS.Timeout | null = null;
  #polling = false;
  #prunedAt = 0;
  /** Counts the lines seen (written here or found by the poll). */
  #version = 0;

  constructor(deps: SystemLogDeps) {
    this.#d = deps;
  }

  async write(instanceId: string, line: string): Promise<void> {
    const now = this.#d.clock.now();
    try {
      await this.#d.store.append(instanceId, now, line);
    } catch (err) {
      this.#d.logger.warn({ err: (err as Error).message, instanceId }, 'writing a system log line failed');
      return;
    }
    this.#wake(instanceId);
    if (now - this.#prunedAt >= PRUNE_EVERY_MS) {
      this.#prunedAt = now;
      void this.#d.store.pruneGone(now - (this.#d.retainGoneMs ?? 24 * 60 * 60 * 1000)).catch(() => undefined);
    }
  }

  read(instanceId: string, query?: SystemLogRead): Promise<SystemLogRow[]> {
    return this.#d.store.read(instanceId, query);
  }

  remove(instanceId: string): Promise<void> {
    return this.#d.store.remove(instanceId);
  }

  /** Taken before a read and given to {@link changed}: a line seen in between ends the wait at once. */
  get version(): number {
    return this.#version;
  }

  /**
   * Resolves when a line of the instance may have been written (here or on another replica),
   * when `signal` aborts, or after `maxWaitMs` (callers re-read the store each time). With
   * `since` (a {@link version}), at once when any line was seen since.
   */
  async changed(instanceId: string, signal: AbortSignal, maxWaitMs = 30_000, since?: number): Promise<void> {
    if (signal.aborted || (since !== undefined && since !== this.#version)) return;
    if (this.#cursor === null) this.#cursor = await this.#d.store.lastSeq().catch(() => 0);
    await new Promise<void>((resolve) => {
      let set = this.#waiters.get(instanceId);
      if (!set) this.#waiters.set(instanceId, (set = new Set()));
      const waiters = set;
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        if (waiters.delete(done)) this.#waiting--;
        if (waiters.size === 0) this.#waiters.delete(instanceId);
        if (this.#waiting === 0) this.#stopPolling();
        resolve();
      };
      const timer = setTimeout(done, maxWaitMs);
      signal.addEventListener('abort', done, { once: true });
      waiters.add(done);
      this.#waiting++;
      this.#startPolling();
    });
  }

  /** Stops the shared poll (followers still waiting resolve at their own timeout). */
  close(): void {
    this.#stopPolling();
    for (const set of this.#waiters.values()) for (const w of [...set]) w();
  }

  #wake(instanceId: string): void {
    this.#version++;
    const set = this.#waiters.get(instanceId);
    if (set) for (const w of [...set]) w();
  }

  #startPolling(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.#poll(), this.#d.pollMs ?? 1_000);
    this.#timer.unref();
  }

  #stopPolling(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  async #poll(): Promise<void> {
    if (this.#polling || this.#cursor === null) return;
    this.#polling = true;
    try {
      const { instanceIds, last } = await this.#d.store.since(this.#cursor);
      this.#cursor = last;
      for (const id of instanceIds) this.#wake(id);
    } catch {
      // the next interval tries again
    } finally {
      this.#polling = false;
    }
  }
}
