/**
 * Removes orphans: instances the runtime found at server start (`attach()`) that no service
 * claims. A pod that is not TERMINATED claims the instance of its id, a launched worker (a worker
 * row the autoscaler wrote, not dead) claims its own; anything else (a pod terminated while no
 * server ran, a worker whose row is gone, a container of an installation's deleted database) is
 * `remove()`d once it stayed unclaimed for the grace period, measured on the injected clock.
 *
 * Claims are read when the grace has passed, not when the instance was found: the services adopt
 * what they have a record of at start, and a record written meanwhile (another replica) counts.
 * A claimed instance is forgotten (it is its service's from then on); one whose removal failed
 * (its engine is away) is tried again at the next collection.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { AttachedInstance, InstanceOwner, Runtime } from './runtime.js';

export interface OrphanCollectorDeps {
  runtime: Pick<Runtime, 'remove'>;
  clock: Clock;
  logger: Pick<Logger, 'warn' | 'error'>;
  /** Of these instance ids, the ones a service has a record of. */
  claimed(ids: readonly string[]): Promise<ReadonlySet<string>>;
  config: {
    /** How long an instance may stay unclaimed. */
    graceMs: number;
  };
}

interface Candidate {
  owner: InstanceOwner | null;
  /** clock time it was found */
  foundAt: number;
}

/** Fewest real milliseconds between collections while candidates wait (a clock that runs slow, a failed removal). */
const MIN_RETRY_MS = 1_000;

export class OrphanCollector {
  readonly #deps: OrphanCollectorDeps;
  readonly #candidates = new Map<string, Candidate>();
  #timer: NodeJS.Timeout | null = null;
  #collecting: Promise<string[]> | null = null;
  #stopped = false;

  constructor(deps: OrphanCollectorDeps) {
    this.#deps = deps;
  }

  /** Ids found and not yet claimed or removed. */
  get pending(): string[] {
    return [...this.#candidates.keys()];
  }

  /** Watches what `attach()` answered; collections run by themselves once the grace has passed. */
  watch(instances: readonly AttachedInstance[]): void {
    const foundAt = this.#deps.clock.now();
    for (const i of instances) if (!this.#candidates.has(i.id)) this.#candidates.set(i.id, { owner: i.owner, foundAt });
    this.#schedule(this.#deps.config.graceMs);
  }

  /**
   * Removes the candidates whose grace has passed at `now` and that no service claims; forgets
   * the claimed ones. Answers the ids removed. Tests call it directly on a fake clock.
   */
  collect(now: number = this.#deps.clock.now()): Promise<string[]> {
    this.#collecting ??= this.#collect(now).finally(() => {
      this.#collecting = null;
    });
    return this.#collecting;
  }

  /** Stops the timer and waits for a collection in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#collecting?.catch(() => undefined);
  }

  async #collect(now: number): Promise<string[]> {
    const due = [...this.#candidates].filter(([, c]) => now - c.foundAt >= this.#deps.config.graceMs).map(([id]) => id);
    if (due.length === 0) return [];
    const claimed = await this.#deps.claimed(due);
    const removed: string[] = [];
    for (const id of due) {
      const candidate = this.#candidates.get(id);
      if (!candidate) continue;
      if (claimed.has(id)) {
        this.#candidates.delete(id);
        continue;
      }
      try {
        await this.#deps.runtime.remove(id);
      } catch (err) {
        this.#deps.logger.warn(
          { instance: id, err: (err as Error).message },
          'removing an orphaned instance failed; trying again later',
        );
        continue;
      }
      this.#candidates.delete(id);
      removed.push(id);
      this.#deps.logger.warn(
        { instance: id, owner: candidate.owner, unclaimedMs: now - candidate.foundAt },
        'removed an orphaned instance: no pod or launched worker claims it',
      );
    }
    return removed;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped || this.#timer || this.#candidates.size === 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.collect()
        .catch((err: unknown) => this.#deps.logger.error({ err }, 'orphan collection failed'))
        .finally(() => this.#schedule(Math.max(MIN_RETRY_MS, this.#remainingMs())));
    }, delayMs);
    this.#timer.unref();
  }

  /** Clock time until the next candidate is due (0 when one is). */
  #remainingMs(): number {
    const now = this.#deps.clock.now();
    let next = Infinity;
    for (const c of this.#candidates.values()) next = Math.min(next, c.foundAt + this.#deps.config.graceMs - now);
    return Math.max(0, next);
  }
}
