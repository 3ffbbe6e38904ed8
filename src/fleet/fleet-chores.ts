/**
 * The fleet service's chores, on a timer of every replica: revocations made elsewhere are looked
 * for every second, the hosts' last-seen times written every few seconds, acknowledged operations
 * and spent or expired join tokens pruned every minute. One chore runs at a time: a tick that
 * finds one under way is skipped.
 */
import type { Logger } from 'pino';
import type { HostStore } from './host-store.js';
import type { OperationStore } from './operation-store.js';

/** How often revocations made elsewhere are looked for, and the period of the other chores. */
const SYNC_INTERVAL_MS = 1000;
/**
 * Last-seen times are written every this many sync ticks at most: `gantry hosts list` and the other
 * replicas read them, and must not find a live host quiet. Fewer when the heartbeat timeout leaves
 * less room (`flushEveryTicks`).
 */
const MAX_FLUSH_EVERY_TICKS = 5;

/**
 * How many sync ticks between writes of the last-seen times: at most half the room the timeout
 * leaves over a heartbeat, so what the database says of a live host is never older than the timeout.
 */
export const flushEveryTicks = (config: { heartbeatMs: number; heartbeatTimeoutMs: number }): number =>
  Math.max(
    1,
    Math.min(
      MAX_FLUSH_EVERY_TICKS,
      Math.floor((config.heartbeatTimeoutMs - config.heartbeatMs) / 2 / SYNC_INTERVAL_MS),
    ),
  );
/** Acknowledged operations and spent or expired join tokens are pruned every this many ticks… */
const PRUNE_EVERY_TICKS = 60;
/** …once they are this old (acknowledged operations serve only to look into what happened). */
export const ACKED_RETENTION_MS = 3_600_000;
const SPENT_TOKEN_RETENTION_MS = 86_400_000;

/** Deletes acknowledged operations and spent or expired join tokens past their retention. */
export async function pruneFleet(
  stores: { operations: Pick<OperationStore, 'pruneAcked'>; hosts: Pick<HostStore, 'pruneJoinTokens'> },
  now: number,
): Promise<{ operations: number; tokens: number }> {
  return {
    operations: await stores.operations.pruneAcked(now - ACKED_RETENTION_MS),
    tokens: await stores.hosts.pruneJoinTokens(now - SPENT_TOKEN_RETENTION_MS),
  };
}

/** What each chore does (the fleet service's own steps). */
export interface FleetChoreSteps {
  /** Whether revocations need looking for: an installation without agents pays nothing. */
  watchesRevocations(): boolean;
  syncRevocations(): Promise<void>;
  flush(): Promise<unknown>;
  prune(): Promise<unknown>;
}

export class FleetChores {
  readonly #steps: FleetChoreSteps;
  readonly #config: { heartbeatMs: number; heartbeatTimeoutMs: number };
  readonly #logger: Pick<Logger, 'warn'> | undefined;
  #timer: NodeJS.Timeout | null = null;
  #ticks = 0;
  #chore: Promise<void> | null = null;

  constructor(
    steps: FleetChoreSteps,
    config: { heartbeatMs: number; heartbeatTimeoutMs: number },
    logger?: Pick<Logger, 'warn'>,
  ) {
    this.#steps = steps;
    this.#config = config;
    this.#logger = logger;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.#tick(), SYNC_INTERVAL_MS);
    this.#timer.unref();
  }

  /** Stops the timer and waits for the chore under way, if any. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#chore?.catch(() => undefined);
  }

  async #tick(): Promise<void> {
    if (this.#chore) return;
    const tick = ++this.#ticks;
    this.#chore = (async () => {
      if (this.#steps.watchesRevocations()) await this.#steps.syncRevocations();
      if (tick % flushEveryTicks(this.#config) === 0) await this.#steps.flush();
      if (tick % PRUNE_EVERY_TICKS === 0) await this.#steps.prune();
    })()
      .catch((err: unknown) => this.#logger?.warn({ err: (err as Error).message }, 'a fleet chore failed'))
      .finally(() => {
        this.#chore = null;
      });
    await this.#chore;
  }
}
