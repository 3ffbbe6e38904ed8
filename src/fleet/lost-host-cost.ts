/**
 * The cost of pods on hosts that stopped reporting (docs/fleet.md, "Heartbeats"): once a host has
 * been unreachable for the lost grace, its pods' usage intervals close as of the end of the grace
 * (cost stops accruing; the pods keep their status); the first report of the host once it is back
 * reopens them for the pods it shows running. The first report of each host after a server start
 * does so too: a grace may have passed while no server ran.
 *
 * Checked by `sweep(now)` on the injected clock, which runs on a timer while a host is unreachable
 * and within its grace (tests call it). The usage itself is the pod controller's (`FleetCost`):
 * pausing closes what is open, resuming opens an interval only for a pod still RUNNING with none
 * open, so a repeated call does no harm.
 */
import type { Logger } from 'pino';
import { iso, type Clock } from '../domain/clock.js';

/** The usage intervals of the pods on a lost host (the pod controller's `pauseUsage`/`resumeUsage`). */
export interface FleetCost {
  /** Closes the open usage interval of each pod on the host, as of `at`. */
  pause(hostId: string, at: number): Promise<void>;
  /** Opens a usage interval from `at` for each of the pods that is RUNNING and has none open. */
  resume(podIds: readonly string[], at: number): Promise<void>;
}

const DEFAULT_LOST_GRACE_MS = 300_000;

interface HostCost {
  /** since when it is unreachable; null while available */
  downSince: number | null;
  /** its pods' cost was paused and not yet resumed */
  paused: boolean;
  /** it reported since this server started */
  heard: boolean;
}

export class LostHostCost {
  readonly #clock: Clock;
  readonly #logger: Pick<Logger, 'warn' | 'error'>;
  readonly #graceMs: number;
  readonly #intervalMs: number;
  readonly #hosts = new Map<string, HostCost>();
  #cost: FleetCost | null;
  #timer: NodeJS.Timeout | null = null;
  /** sweeps run one after the other, each at its own `now` */
  #sweeps: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(deps: {
    clock: Clock;
    logger: Pick<Logger, 'warn' | 'error'>;
    cost?: FleetCost;
    config?: { lostGraceMs?: number; sweepIntervalMs?: number };
  }) {
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#cost = deps.cost ?? null;
    this.#graceMs = deps.config?.lostGraceMs ?? DEFAULT_LOST_GRACE_MS;
    this.#intervalMs = Math.max(50, Math.min(this.#graceMs, deps.config?.sweepIntervalMs ?? 10_000));
  }

  use(cost: FleetCost): void {
    this.#cost = cost;
  }

  /** The host is unreachable since `since`: its grace starts then (a host lost long ago is past it at once). */
  lost(hostId: string, since: number): void {
    this.#host(hostId).downSince = since;
    if (this.#closed) return;
    this.#timer ??= setInterval(() => void this.sweep(), this.#intervalMs);
    this.#timer.unref();
    void this.sweep();
  }

  back(hostId: string): void {
    this.#host(hostId).downSince = null;
  }

  /** The host is gone for good (revoked): its pods end on their own, nothing of it is paused or resumed. */
  forget(hostId: string): void {
    this.#hosts.delete(hostId);
  }

  /**
   * The host reported (and is reachable): when its cost was paused, or this is its first report
   * since the server started, its pods `running` (ids) get their usage back from now.
   */
  async reported(hostId: string, running: () => string[]): Promise<void> {
    const host = this.#host(hostId);
    if (host.downSince !== null) return;
    const first = !host.heard;
    host.heard = true;
    if (!host.paused && !first) return;
    const ids = running();
    if (!this.#cost || (!host.paused && ids.length === 0)) {
      host.paused = false;
      return;
    }
    try {
      await this.#cost.resume(ids, this.#clock.now());
      host.paused = false;
    } catch (err) {
      this.#logger.error(
        { hostId, err: (err as Error).message },
        'resuming the cost of a host’s pods failed; trying again at its next report',
      );
    }
  }

  /** Pauses the cost of the hosts unreachable for the grace at `now`, each once. */
  sweep(now: number = this.#clock.now()): Promise<void> {
    const run = this.#sweeps.then(() => this.#sweep(now));
    this.#sweeps = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#sweeps;
  }

  async #sweep(now: number): Promise<void> {
    let waiting = false;
    for (const [hostId, host] of this.#hosts) {
      if (host.downSince === null || host.paused) continue;
      if (now - host.downSince < this.#graceMs) {
        waiting = true;
        continue;
      }
      host.paused = true;
      this.#logger.warn(
        { hostId, since: iso(host.downSince) },
        'a host is lost past the grace: the cost of its pods stops',
      );
      try {
        await this.#cost?.pause(hostId, host.downSince + this.#graceMs);
      } catch (err) {
        host.paused = false;
        waiting = true;
        this.#logger.error(
          { hostId, err: (err as Error).message },
          'pausing the cost of a lost host’s pods failed; trying again',
        );
      }
    }
    if (!waiting && this.#timer) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }

  #host(hostId: string): HostCost {
    let host = this.#hosts.get(hostId);
    if (!host) this.#hosts.set(hostId, (host = { downSince: null, paused: false, heard: false }));
    return host;
  }
}
