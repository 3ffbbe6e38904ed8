import type { Logger } from 'pino';
import {
  HEALTHY,
  isBackedOff,
  recordWorkerEnd,
  recordWorkerHealthy,
  type CrashState,
  type ScaleConfig,
} from '../domain/autoscale.js';

/** Worker counts of one endpoint by state, for `/health` ("no capacity" vs "crash-looping"). */
export interface EndpointScaleHealth {
  idle: number;
  running: number;
  initializing: number;
  /** Workers wanted but not placeable: no host has the capacity. */
  throttled: number;
  /** Workers wanted but held back: the endpoint is crash-looping and backed off. */
  unhealthy: number;
  /** Why the last placement failed, while throttled. */
  capacityError: string | null;
  /** Crash-loop state: crashes in a row, back-off end (ms epoch) and the last crash's reason. */
  crashes: number;
  backoffUntil: number | null;
  lastCrash: string | null;
}

/** What the autoscaler carries for one endpoint from one pass to the next. */
export interface EndpointScaleState {
  crash: CrashState;
  throttled: number;
  capacityError: string | null;
  heldBack: number;
  counts: { idle: number; running: number; initializing: number };
  /** FlashBoot: its workers suspended (or being suspended or resumed) at the last pass. */
  suspended: number;
}

/**
 * The autoscaler's per-endpoint state, in memory: each endpoint's crash record (crash-loop
 * bookkeeping and back-off), and what its last pass found and could not do, for `/health`.
 */
export class EndpointScaleStates {
  readonly #states = new Map<string, EndpointScaleState>();
  readonly #config: ScaleConfig;
  readonly #logger: Pick<Logger, 'warn'>;

  constructor(deps: { config: ScaleConfig; logger: Pick<Logger, 'warn'> }) {
    this.#config = deps.config;
    this.#logger = deps.logger;
  }

  has(endpointId: string): boolean {
    return this.#states.has(endpointId);
  }

  delete(endpointId: string): void {
    this.#states.delete(endpointId);
  }

  clear(): void {
    this.#states.clear();
  }

  /** The endpoint's state, created healthy and empty at first use. */
  of(endpointId: string): EndpointScaleState {
    let s = this.#states.get(endpointId);
    if (!s) {
      s = {
        crash: HEALTHY,
        throttled: 0,
        capacityError: null,
        heldBack: 0,
        counts: { idle: 0, running: 0, initializing: 0 },
        suspended: 0,
      };
      this.#states.set(endpointId, s);
    }
    return s;
  }

  /** A worker of the endpoint ended early (or never came up): one more crash, perhaps a back-off. */
  crashed(endpointId: string, startedAt: number, endedAt: number, reason: string): void {
    const state = this.of(endpointId);
    const before = state.crash;
    state.crash = recordWorkerEnd(before, { startedAt, endedAt, reason }, this.#config);
    if (state.crash.backoffUntil !== before.backoffUntil && state.crash.backoffUntil !== null)
      this.#logger.warn(
        {
          endpointId,
          crashes: state.crash.consecutive,
          backoffUntil: new Date(state.crash.backoffUntil).toISOString(),
        },
        'endpoint workers are crash-looping; backing off',
      );
  }

  /** A worker of the endpoint proved itself: the crash count starts over. */
  healthy(endpointId: string): void {
    const state = this.of(endpointId);
    state.crash = recordWorkerHealthy(state.crash);
  }

  /** Worker counts by state over every endpoint, as of each one's last pass (metrics). */
  totals(now: number): Record<'idle' | 'running' | 'initializing' | 'throttled' | 'unhealthy' | 'suspended', number> {
    const t = { idle: 0, running: 0, initializing: 0, throttled: 0, unhealthy: 0, suspended: 0 };
    for (const [id, s] of this.#states) {
      t.suspended += s.suspended;
      const h = this.health(id, now);
      t.idle += h.idle;
      t.running += h.running;
      t.initializing += h.initializing;
      t.throttled += h.throttled;
      t.unhealthy += h.unhealthy;
    }
    return t;
  }

  /** Worker counts by state of an endpoint, as of the last pass. */
  health(endpointId: string, now: number): EndpointScaleHealth {
    const s = this.#states.get(endpointId);
    if (!s)
      return {
        idle: 0,
        running: 0,
        initializing: 0,
        throttled: 0,
        unhealthy: 0,
        capacityError: null,
        crashes: 0,
        backoffUntil: null,
        lastCrash: null,
      };
    const backedOff = isBackedOff(s.crash, now);
    return {
      ...s.counts,
      throttled: s.throttled,
      unhealthy: backedOff ? Math.max(1, s.heldBack) : 0,
      capacityError: s.throttled > 0 ? s.capacityError : null,
      crashes: s.crash.consecutive,
      backoffUntil: backedOff ? s.crash.backoffUntil : null,
      lastCrash: s.crash.lastReason,
    };
  }
}
