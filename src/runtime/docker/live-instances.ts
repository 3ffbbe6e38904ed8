/**
 * The Docker runtime's memory of its live instances (started or adopted, not stopped), which
 * `inspect()` and `list()` answer from, and the listeners told of every change.
 */
import type { Logger } from 'pino';
import type { HealthProbe } from '../../domain/image-spec.js';
import type { ProbeTarget } from '../health-probe.js';
import type { InstanceListener, InstanceState, InstanceStatus } from '../runtime.js';

/** The states of an instance whose container is meant to run: held until it ends or is stopped. */
export const LIVE_STATES: ReadonlySet<InstanceState> = new Set(['starting', 'running', 'suspended', 'unknown']);

export interface Live {
  id: string;
  containerId: string;
  status: InstanceStatus;
  /** false until the engine has started it: hidden from inspect/list; an exit seen meanwhile waits */
  launched: boolean;
  exitSeen: boolean;
  /** what was held before the engine became unreachable */
  beforeOutage: InstanceState | null;
  probe: { target: ProbeTarget; health: HealthProbe } | null;
  probing: AbortController | null;
  /** a stop or remove under way: the container's end is the runtime's doing */
  stopping: Promise<void> | null;
  observing: boolean;
  /** its memory limit, for an out-of-memory reason */
  memoryBytes: number;
  /** the engine's `oom` event for its container came (it may come after the exit it caused) */
  oomSeen: boolean;
  /**
   * Wall-clock ms from which the container's log is this run's (a kept container's log holds its
   * earlier runs too); null: all of it. Not the engine's StartedAt: a quick process has written
   * (and exited) before the engine records that it started.
   */
  logsSinceMs: number | null;
}

/** A live instance of `id` in `containerId`, not yet launched. */
export const newLive = (id: string, containerId: string, memoryBytes: number, probe: Live['probe']): Live => ({
  id,
  containerId,
  status: { id, state: 'starting', startedAt: null, exitCode: null, reason: null, stats: null },
  launched: false,
  exitSeen: false,
  beforeOutage: null,
  probe,
  probing: null,
  stopping: null,
  observing: false,
  memoryBytes,
  oomSeen: false,
  logsSinceMs: null,
});

export class LiveInstances {
  readonly #byId = new Map<string, Live>();
  readonly #listeners = new Set<InstanceListener>();
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  get(id: string): Live | undefined {
    return this.#byId.get(id);
  }

  /** The instance when its container runs (launched, not being stopped); else throws that `what` "id" is not running here. */
  running(id: string, what: string): Live {
    const live = this.#byId.get(id);
    if (!live?.launched || live.stopping || live.status.state !== 'running')
      throw new Error(`${what} "${id}" is not running here`);
    return live;
  }

  has(id: string): boolean {
    return this.#byId.has(id);
  }

  add(live: Live): void {
    this.#byId.set(live.id, live);
  }

  /** Forgets `live`, unless a newer instance of its id has taken its place. */
  forget(live: Live): void {
    if (this.current(live)) this.#byId.delete(live.id);
  }

  /** Whether `live` is still the instance of its id. */
  current(live: Live): boolean {
    return this.#byId.get(live.id) === live;
  }

  all(): Live[] {
    return [...this.#byId.values()];
  }

  clear(): void {
    this.#byId.clear();
  }

  /** The launched instances' statuses, copies callers may keep. */
  statuses(): InstanceStatus[] {
    return this.all()
      .filter((l) => l.launched)
      .map((l) => copyStatus(l.status));
  }

  onChange(listener: InstanceListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Tells every listener; one that throws (or rejects) is logged and the others still hear. */
  emit(live: Live): void {
    for (const listener of [...this.#listeners]) {
      try {
        const result: unknown = listener(copyStatus(live.status));
        if (result instanceof Promise) result.catch((err: unknown) => this.#listenerFailed(err));
      } catch (err) {
        this.#listenerFailed(err);
      }
    }
  }

  #listenerFailed(err: unknown): void {
    this.#logger.error({ err }, 'an instance listener threw; the runtime carries on');
  }
}

/** A status callers may keep or change without touching ours. */
export const copyStatus = (status: InstanceStatus): InstanceStatus => ({
  ...status,
  stats: status.stats && { ...status.stats },
});
