/**
 * Load balancing across control-plane replicas sharing one database (docs/load-balancing.md,
 * "Replicas"). Each replica's balancer (lb-pool.ts) serves the requests that reach it; only the
 * replica holding the autoscaler lease launches and stops workers. So that a request reaching any
 * replica is served, and every replica's requests count for scaling:
 *
 * - **Members from the store**: every `refreshMs`, the launched workers of load-balancing
 *   endpoints are read from the workers table. One this replica did not launch is added to its
 *   pool with its host ports (WorkerAllocation.publicPorts) and health-checked here, through
 *   `Runtime.connect` (the fleet: this replica's own tunnel; the process runtime: the host port
 *   the launching replica recorded). One gone from the table (dead, or its row removed) leaves the
 *   pool; requests it holds end as its instance does.
 * - **Demand in the store**: this replica's requests waiting and held per endpoint, and per worker
 *   the requests held and the last finish (`LbPool.demand()`), are written to `lb_demand` when they
 *   change (at most every `publishGapMs`), and rewritten every `heartbeatMs` while there are any.
 *   The autoscaler's replica reads the other replicas' rows fresher than `ttlMs` at each pass
 *   (`ReplicaTraffic`), and adds them to its own pool's: a waiting request anywhere starts a
 *   worker, and a worker busy with another replica's requests is not idle.
 *
 * Only where several replicas may share the database (PostgreSQL); with SQLite nothing here runs
 * and the balancer writes nothing to the store.
 */
import type { Logger } from 'pino';
import type { LbDemandStore, LbEndpointDemand } from '../store/lb-demand-store.js';
import type { LbPool, LbTraffic, LbWorkerInfo } from './lb-pool.js';
import { lbHostPorts, type LbWorkerPorts } from './lb-worker-ports.js';

export interface LbReplicaSettings {
  /** How often the workers table is read for members. */
  refreshMs: number;
  /** The least time between two writes of this replica's demand. */
  publishGapMs: number;
  /** How often a demand that did not change is written again (the replica is alive). */
  heartbeatMs: number;
  /** A row not written for this long is a gone replica's: it counts for nothing. */
  ttlMs: number;
}

const DEFAULT_LB_REPLICA_SETTINGS: LbReplicaSettings = {
  refreshMs: 1_000,
  publishGapMs: 250,
  heartbeatMs: 5_000,
  ttlMs: 15_000,
};

export interface LbReplicasDeps {
  store: Pick<LbDemandStore, 'publish' | 'read' | 'prune' | 'withdraw' | 'balancedWorkers'>;
  pool: Pick<
    LbPool,
    | 'add'
    | 'remove'
    | 'has'
    | 'wasRemoved'
    | 'learntIds'
    | 'demand'
    | 'changes'
    | 'waiting'
    | 'inFlight'
    | 'workerState'
    | 'freeze'
    | 'thaw'
    | 'isFrozen'
  >;
  /** This replica's id in `lb_demand` (unique per process). */
  replicaId: string;
  /** Whether this replica's autoscaler launched the worker (its pool entry is the autoscaler's). */
  launchedHere(workerId: string): boolean;
  /** The ports and health path of an endpoint's workers; null when the endpoint is gone. */
  portsOf(accountId: string, endpointId: string): Promise<LbWorkerPorts | null>;
  now(): number;
  logger: Pick<Logger, 'info' | 'warn' | 'debug'>;
  settings?: Partial<LbReplicaSettings>;
}

export class LbReplicas {
  readonly settings: LbReplicaSettings;
  readonly #d: LbReplicasDeps;
  #timers: NodeJS.Timeout[] = [];
  /** The pool's change count and the time of the last write; what was last written (null: nothing). */
  #written: { changes: number; at: number; empty: boolean } | null = null;
  #publishing: Promise<void> | null = null;
  #refreshing: Promise<void> | null = null;
  #failed = { refresh: false, publish: false };
  #onWaiting: (() => void) | null = null;

  constructor(deps: LbReplicasDeps) {
    this.#d = deps;
    this.settings = { ...DEFAULT_LB_REPLICA_SETTINGS, ...deps.settings };
  }

  start(): void {
    if (this.#timers.length > 0) return;
    void this.refresh();
    this.#timers = [
      setInterval(() => void this.refresh(), this.settings.refreshMs),
      setInterval(() => void this.publish(), this.settings.publishGapMs),
    ];
    for (const t of this.#timers) t.unref();
  }

  /**
   * Calls `listener` after a write of a demand with requests waiting (the relay then wakes the
   * lease holder's autoscaler rather than leave them to its next pass).
   */
  onWaiting(listener: () => void): void {
    this.#onWaiting = listener;
  }

  /** Stops the loops and removes this replica's demand from the store. */
  async stop(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await Promise.allSettled([this.#publishing, this.#refreshing]);
    await this.#d.store.withdraw(this.#d.replicaId).catch(() => undefined);
  }

  /** One read of the workers table: learnt members added and removed (tests may call it). */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#refresh()
      .then(() => this.#recovered('refresh'))
      .catch((err: unknown) => this.#failure('refresh', err))
      .finally(() => (this.#refreshing = null));
    return this.#refreshing;
  }

  /** Writes this replica's demand when it changed since the last write, or the heartbeat is due (tests may call it). */
  publish(): Promise<void> {
    this.#publishing ??= this.#publish()
      .then(() => this.#recovered('publish'))
      .catch((err: unknown) => this.#failure('publish', err))
      .finally(() => (this.#publishing = null));
    return this.#publishing;
  }

  async #refresh(): Promise<void> {
    const { pool } = this.#d;
    const rows = await this.#d.store.balancedWorkers();
    const live = new Set(rows.map((r) => r.id));
    for (const id of pool.learntIds()) if (!live.has(id)) pool.remove(id);
    const ports = new Map<string, LbWorkerPorts | null>();
    for (const r of rows) {
      if (this.#d.launchedHere(r.id)) continue;
      if (pool.has(r.id)) {
        this.#follow(r.id, r.suspended);
        continue;
      }
      if (pool.wasRemoved(r.id)) continue;
      if (!ports.has(r.endpointId)) ports.set(r.endpointId, await this.#d.portsOf(r.accountId, r.endpointId));
      const p = ports.get(r.endpointId);
      // Read again after the awaits: the autoscaler here may have launched or stopped it meanwhile.
      if (!p || pool.has(r.id) || pool.wasRemoved(r.id) || this.#d.launchedHere(r.id)) continue;
      const info: LbWorkerInfo = {
        workerId: r.id,
        endpointId: r.endpointId,
        accountId: r.accountId,
        ...p,
        hostPorts: lbHostPorts(p, r.publicPorts),
      };
      this.#d.logger.debug({ workerId: r.id, endpointId: r.endpointId }, 'balancing a worker another replica launched');
      pool.add(info, r.suspended);
    }
  }

  /**
   * FlashBoot: a learnt worker follows its row — suspended by the autoscaler's replica, it leaves
   * this pool's ready set (a request this replica sent it in the instant before waits, frozen,
   * until it is resumed); resumed, its health is checked at once.
   */
  #follow(workerId: string, suspended: boolean): void {
    const { pool } = this.#d;
    if (suspended && !pool.isFrozen(workerId))
      pool.freeze(workerId, 'suspended (FlashBoot, by the autoscaler of another replica)', true);
    else if (!suspended && pool.isFrozen(workerId))
      pool.thaw(workerId, 'resumed (by the autoscaler of another replica)');
  }

  async #publish(): Promise<void> {
    const { pool } = this.#d;
    const now = this.#d.now();
    const changes = pool.changes;
    const last = this.#written;
    const changed = last === null || last.changes !== changes;
    const beat = last !== null && !last.empty && now - last.at >= this.settings.heartbeatMs;
    if (!changed && !beat) return;
    const demand = pool.demand();
    // Nothing here, and nothing written before: no write at all (a replica without traffic writes nothing).
    if (demand.length === 0 && (last === null || last.empty)) {
      this.#written = { changes, at: now, empty: true };
      return;
    }
    await this.#d.store.publish(this.#d.replicaId, demand, now);
    this.#written = { changes, at: now, empty: demand.length === 0 };
    if (changed && demand.some((d) => d.waiting > 0)) this.#onWaiting?.();
  }

  #failure(what: 'refresh' | 'publish', err: unknown): void {
    if (this.#failed[what]) return;
    this.#failed[what] = true;
    this.#d.logger.warn(
      { err: (err as Error).message },
      what === 'refresh'
        ? "reading load-balancing workers from the store failed; other replicas' new workers are not balanced here until it works"
        : "writing this replica's load-balancing demand failed; the autoscaler does not see it until it works",
    );
  }

  #recovered(what: 'refresh' | 'publish'): void {
    if (!this.#failed[what]) return;
    this.#failed[what] = false;
    this.#d.logger.info(`${what === 'refresh' ? 'reading' : 'writing'} load-balancing state in the store works again`);
  }
}

/** The pool the autoscaler adds workers to, with every replica's traffic (`traffic`) in place of its own. */
export const balancedTraffic = (
  pool: Pick<LbPool, 'add' | 'has'>,
  traffic: LbTraffic,
): LbTraffic & Pick<LbPool, 'add' | 'has'> => ({
  add: (info, suspended) => pool.add(info, suspended),
  has: (id) => pool.has(id),
  waiting: (id) => traffic.waiting(id),
  inFlight: (id) => traffic.inFlight(id),
  workerState: (id) => traffic.workerState(id),
  resumeWanted: (id) => traffic.resumeWanted(id),
  preferredWaiting: (id) => traffic.preferredWaiting(id),
});

/**
 * The traffic the autoscaler scales on: its own pool's, plus the other replicas' fresh demand read
 * at the start of each pass (`refresh`).
 */
export class ReplicaTraffic implements LbTraffic {
  readonly #pool: LbTraffic;
  readonly #store: Pick<LbDemandStore, 'read' | 'prune'>;
  readonly #replicaId: string;
  readonly #ttlMs: number;
  #remote = new Map<string, LbEndpointDemand>();
  #remoteWorkers = new Map<string, LbEndpointDemand['workers'][string]>();
  #prunedAt = -Infinity;

  constructor(deps: {
    pool: LbTraffic;
    store: Pick<LbDemandStore, 'read' | 'prune'>;
    replicaId: string;
    ttlMs: number;
  }) {
    this.#pool = deps.pool;
    this.#store = deps.store;
    this.#replicaId = deps.replicaId;
    this.#ttlMs = deps.ttlMs;
  }

  /** Reads the other replicas' fresh demand (and now and then removes rows long stale). */
  async refresh(now: number): Promise<void> {
    const rows = await this.#store.read(now - this.#ttlMs, this.#replicaId);
    this.#remote = new Map(rows.map((r) => [r.endpointId, r]));
    this.#remoteWorkers = new Map(rows.flatMap((r) => Object.entries(r.workers)));
    if (now - this.#prunedAt >= this.#ttlMs) {
      this.#prunedAt = now;
      await this.#store.prune(now - 4 * this.#ttlMs);
    }
  }

  waiting(endpointId: string): number {
    return this.#pool.waiting(endpointId) + (this.#remote.get(endpointId)?.waiting ?? 0);
  }

  inFlight(endpointId: string): number {
    return this.#pool.inFlight(endpointId) + (this.#remote.get(endpointId)?.inFlight ?? 0);
  }

  resumeWanted(workerId: string): number {
    return this.#pool.resumeWanted(workerId) + (this.#remoteWorkers.get(workerId)?.resumeWanted ?? 0);
  }

  preferredWaiting(workerId: string): number {
    return this.#pool.preferredWaiting(workerId) + (this.#remoteWorkers.get(workerId)?.preferredWaiting ?? 0);
  }

  workerState(workerId: string): { ready: boolean; outstanding: number; lastActiveAt: number } | null {
    const local = this.#pool.workerState(workerId);
    const remote = this.#remoteWorkers.get(workerId);
    if (!local || !remote) return local;
    return {
      ready: local.ready,
      outstanding: local.outstanding + remote.outstanding,
      lastActiveAt: Math.max(local.lastActiveAt, remote.lastActiveAt),
    };
  }
}
