import { ApiError } from '../domain/errors.js';
import type { WorkerStore } from '../store/worker-store.js';

/** How long an endpoint found at its cap is taken to be full without counting again. */
const FULL_RECHECK_MS = 1_000;

/**
 * The cap on worker rows of hand-attached workers (not launched by the platform) per endpoint: a
 * ping with a fresh made-up id must not grow the table without bound. Launched workers never
 * count; dead hand-attached rows are dropped to make room before a new id is refused.
 */
export class AttachedWorkersCap {
  readonly #store: WorkerStore;
  readonly #max: number;
  readonly #heartbeatTimeoutMs: number;
  /** Endpoints found at their cap, until when (clock ms) to trust that without a count. */
  readonly #full = new Map<string, number>();

  constructor(deps: { store: WorkerStore; /** 0: no cap */ max: number; heartbeatTimeoutMs: number }) {
    this.#store = deps.store;
    this.#max = Math.max(0, Math.floor(deps.max));
    this.#heartbeatTimeoutMs = deps.heartbeatTimeoutMs;
  }

  /** A worker of the endpoint was lost here: there may be room again. */
  roomMade(endpointId: string): void {
    this.#full.delete(endpointId);
  }

  /**
   * Admits a worker new to this replica, or throws 429 RATE_LIMITED: past `max` rows for the endpoint,
   * its dead hand-attached rows go first; if the live ones alone are at the cap, a worker without
   * a live row is refused. Runs only for a sighting not yet known here, never per ping.
   */
  async admit(endpointId: string, workerId: string, now: number): Promise<void> {
    if (this.#max === 0) return;
    const full = this.#full.get(endpointId);
    let live = this.#max;
    if (full === undefined || full <= now) {
      this.#full.delete(endpointId);
      const attached = await this.#store.countAttachedByStatus(endpointId);
      let total = 0;
      let dead = 0;
      for (const r of attached) {
        total += Number(r.n);
        if (r.status === 'dead') dead += Number(r.n);
      }
      if (total < this.#max) return;
      if (dead > 0) await this.#store.deleteDeadAttached(endpointId);
      live = total - dead;
      if (live < this.#max) return;
      // Full: for a second, further new ids cost one primary-key read, not a count each (a flood
      // of fresh ids); a worker lost here makes room at once.
      this.#full.set(endpointId, now + FULL_RECHECK_MS);
    }
    // A worker with a live row (launched, or seen by another replica) is not new: it passes.
    const own = await this.#store.statusOf(endpointId, workerId);
    if (own !== undefined && own !== 'dead') return;
    const retry = Math.max(1, Math.ceil(this.#heartbeatTimeoutMs / 1000));
    throw new ApiError(
      'RATE_LIMITED',
      `Endpoint ${endpointId} already has ${live} workers attached by hand (the most allowed, jobs.workerRateLimits.attachedWorkers); a new worker id is accepted once one of them has been silent for ${retry} s.`,
      { headers: { 'Retry-After': String(retry) } },
    );
  }
}
