import type { Clock } from '../domain/clock.js';
import { isTerminalWorkerStatus, type WorkerStatus } from '../domain/worker-state.js';
import type { WorkerStore } from '../store/worker-store.js';
import { AttachedWorkersCap } from './attached-workers-cap.js';
import { SuspendGate } from './suspend-gate.js';

/** The `workers` part of `/health`. */
export interface WorkerHealthCounts {
  idle: number;
  running: number;
  initializing: number;
  /** Workers up and taking work (idle + running). */
  ready: number;
  throttled: number;
  unhealthy: number;
  /** Suspended by FlashBoot (frozen, resumed on demand): a Gantry extension. */
  suspended: number;
}

export interface WorkersRegistryDeps {
  /** The `workers` table. */
  store: WorkerStore;
  clock: Clock;
  /** How long the row of a dead worker is kept (for `GET /v2/serverless/{id}/workers`) before `prune` deletes it. @default 3600000 */
  deadRetentionMs?: number;
  /**
   * Rows of hand-attached workers (not launched by the platform) one endpoint may hold; a new
   * worker id past it is refused (429) until one is lost, and dead ones make room first. 0: no cap.
   * @default 200
   */
  maxAttachedWorkers?: number;
  /** How long a silent worker takes to be declared lost: the Retry-After of that refusal. @default 30000 */
  heartbeatTimeoutMs?: number;
}

/** The registry's key of a worker: its endpoint and its id (a worker id names a worker only within its endpoint). */
const keyOf = (endpointId: string, workerId: string): string => `${endpointId}\u0000${workerId}`;

/** Longest gap between two prunes run by `expire`. */
const PRUNE_EVERY_MS = 60_000;

interface Entry {
  endpointId: string;
  workerId: string;
  /** The platform launched it (its row carries a host): it counts toward the dynamic rate limit. */
  launched: boolean;
  status: WorkerStatus;
  /** Last sign of life (ms, clock time). */
  lastSeen: number;
  /** A change not yet written. */
  dirty: boolean;
  /** Long-polls (job-take, job-stop) this worker holds open here: a live connection is a sign of life. */
  polls: number;
}

/**
 * Serverless workers as their calls reveal them. A worker is recorded on its first take or ping;
 * later signs of life stay in memory and are written by `flush` (the timekeeper calls it every
 * tick), so frequent pings cost at most one write per worker per tick, all in one transaction.
 * The table is the truth across replicas: heartbeat expiry and `/health` read it.
 *
 * A worker is (endpoint, worker id): the endpoint it was launched for or first called through.
 * A call through another endpoint naming the same id is another worker; it never touches this
 * one's row, jobs, recycle request or liveness (another account may have learned the id from a
 * job's `workerId`).
 */
export class WorkersRegistry {
  readonly #store: WorkerStore;
  readonly #clock: Clock;
  readonly #known = new Map<string, Entry>();
  readonly #recycle = new Set<string>();
  /** Per endpoint, the last sighting being written (they are written in turn). */
  readonly #writing = new Map<string, Promise<void>>();
  /** Live workers per endpoint, as last read from the table (for the dynamic rate limit). */
  #liveCounts = new Map<string, number>();
  readonly #deadRetentionMs: number;
  readonly #cap: AttachedWorkersCap;
  #lastPrune: number | null = null;
  /** Workers being suspended or suspended: their takes answer empty (suspend-gate.ts). */
  readonly gate = new SuspendGate();

  constructor(deps: WorkersRegistryDeps) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#deadRetentionMs = Math.max(0, deps.deadRetentionMs ?? 3_600_000);
    this.#cap = new AttachedWorkersCap({
      store: deps.store,
      max: deps.maxAttachedWorkers ?? 200,
      heartbeatTimeoutMs: deps.heartbeatTimeoutMs ?? 30_000,
    });
  }

  /**
   * A sign of life from `workerId` serving `endpointId` (a take, a ping, a post). `busy` says
   * whether it holds jobs, when the call tells (a hint for `/health`; jobs move on what a worker
   * reports only in `WorkerJobs`, by stricter rules).
   * The first sighting is written at once (refused with 429 when the endpoint already holds as
   * many hand-attached workers as allowed); later ones at the next `flush`.
   */
  async seen(endpointId: string, workerId: string, busy?: boolean): Promise<void> {
    const now = this.#clock.now();
    const key = keyOf(endpointId, workerId);
    const entry = this.#known.get(key);
    if (!entry || entry.status === 'dead' || entry.status === 'unhealthy') {
      const status: WorkerStatus = busy ? 'running' : 'idle';
      await this.#record(endpointId, workerId, status, now, entry?.polls ?? 0);
      return;
    }
    entry.lastSeen = now;
    entry.dirty = true;
    // A request the worker sent before it was frozen, answered as usual: it stays suspended.
    if (busy !== undefined && entry.status !== 'suspended') entry.status = busy ? 'running' : 'idle';
  }

  /**
   * The worker is frozen (FlashBoot): its row says `suspended` (out of the heartbeat-loss sweep,
   * its key kept), billed from now at `pricePerGpuHour` per GPU. Answers whether its row was still alive.
   */
  async suspended(
    endpointId: string,
    workerId: string,
    now: number = this.#clock.now(),
    pricePerGpuHour = 0,
  ): Promise<boolean> {
    const entry = this.#known.get(keyOf(endpointId, workerId));
    if (entry) {
      entry.status = 'suspended';
      entry.dirty = false;
    }
    return this.#store.markSuspended(endpointId, workerId, now, pricePerGpuHour);
  }

  /** The worker runs again: idle, heard from now, its takes answered again. */
  async resumed(endpointId: string, workerId: string, now: number = this.#clock.now()): Promise<boolean> {
    const entry = this.#known.get(keyOf(endpointId, workerId));
    if (entry) {
      entry.status = 'idle';
      entry.lastSeen = now;
    }
    const ok = await this.#store.markResumed(endpointId, workerId, now);
    this.gate.open(endpointId, workerId);
    return ok;
  }

  /** A long-poll opened; call the answer when it ends. An open poll keeps the worker alive. */
  pollOpened(endpointId: string, workerId: string): () => void {
    const key = keyOf(endpointId, workerId);
    const entry = this.#known.get(key);
    if (entry) entry.polls += 1;
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      const e = this.#known.get(key);
      if (e) {
        e.polls = Math.max(0, e.polls - 1);
        e.lastSeen = this.#clock.now();
        e.dirty = true;
      }
    };
  }

  /** The worker reported itself unhealthy (it exits next). Answers whether that is news (it was not unhealthy already). */
  async unhealthy(endpointId: string, workerId: string): Promise<boolean> {
    const entry = this.#known.get(keyOf(endpointId, workerId));
    if (entry?.status === 'unhealthy') return false;
    await this.#record(endpointId, workerId, 'unhealthy', this.#clock.now(), entry?.polls ?? 0);
    return true;
  }

  /** The worker asked (`stopPod`) to be recycled after its job; the autoscaler reads this. */
  requestRecycle(endpointId: string, workerId: string): void {
    this.#recycle.add(keyOf(endpointId, workerId));
  }

  /** Whether the worker asked to be recycled; answers it once. */
  takeRecycleRequest(endpointId: string, workerId: string): boolean {
    return this.#recycle.delete(keyOf(endpointId, workerId));
  }

  /** Writes the signs of life gathered since the last flush, in one transaction. Answers how many rows. */
  async flush(now: number = this.#clock.now()): Promise<number> {
    const due: Entry[] = [];
    for (const entry of this.#known.values()) {
      if (entry.polls > 0 && entry.status !== 'dead') {
        entry.lastSeen = now;
        entry.dirty = true;
      }
      if (entry.dirty) due.push(entry);
    }
    if (due.length === 0) return 0;
    for (const entry of due) entry.dirty = false;
    await this.#store.writeSightings(due, now);
    return due.length;
  }

  /**
   * Live or unhealthy workers not heard from since `cutoff` (by the table, after a flush), minus
   * those holding a long-poll open here. Marks them dead and answers them. Being the registry's
   * sweep (the timekeeper runs it every tick), it also prunes dead rows, at most once a minute.
   */
  async expire(cutoff: number, now: number = this.#clock.now()): Promise<Array<{ id: string; endpointId: string }>> {
    if (this.#lastPrune === null || now - this.#lastPrune >= Math.min(PRUNE_EVERY_MS, this.#deadRetentionMs))
      await this.prune(now);
    const rows = await this.#store.silentSince(cutoff);
    const lost = rows.filter((r) => (this.#known.get(keyOf(r.endpoint_id, r.id))?.polls ?? 0) === 0);
    if (lost.length === 0) return [];
    const byEndpoint = new Map<string, string[]>();
    for (const r of lost) byEndpoint.set(r.endpoint_id, [...(byEndpoint.get(r.endpoint_id) ?? []), r.id]);
    for (const [endpointId, ids] of byEndpoint) await this.markDead(endpointId, ids, now);
    return lost.map((r) => ({ id: r.id, endpointId: r.endpoint_id }));
  }

  /**
   * Deletes the rows of workers dead for longer than the retention, and forgets them here unless
   * they hold a long-poll open. Answers how many rows went.
   */
  async prune(now: number = this.#clock.now()): Promise<number> {
    this.#lastPrune = now;
    const cutoff = now - this.#deadRetentionMs;
    const deleted = await this.#store.deleteTerminalBefore(cutoff);
    for (const [key, entry] of this.#known)
      if (isTerminalWorkerStatus(entry.status) && entry.polls === 0) this.#known.delete(key);
    return deleted;
  }

  /** Marks workers of the endpoint dead (lost, or stopped by the autoscaler). */
  async markDead(endpointId: string, ids: readonly string[], now: number = this.#clock.now()): Promise<void> {
    if (ids.length === 0) return;
    await this.#store.markDead(endpointId, ids, now);
    this.#cap.roomMade(endpointId);
    for (const id of ids) {
      const key = keyOf(endpointId, id);
      const entry = this.#known.get(key);
      if (entry && entry.polls === 0) this.#known.delete(key);
      else if (entry) entry.status = 'dead';
      this.#recycle.delete(key);
      this.gate.open(endpointId, id);
    }
  }

  /**
   * Re-reads the number of live launched workers per endpoint (for the dynamic rate limit). Only
   * workers the platform launched count: a ping with a made-up id must not raise any limit.
   */
  async refreshLiveCounts(): Promise<void> {
    this.#liveCounts = await this.#store.liveLaunchedCounts();
  }

  /**
   * Live workers the platform launched for the endpoint, as of the last refresh (or as seen here,
   * whichever is more): what the dynamic rate limits multiply.
   */
  liveWorkers(endpointId: string): number {
    let local = 0;
    for (const e of this.#known.values())
      if (e.launched && e.endpointId === endpointId && (e.status === 'idle' || e.status === 'running')) local++;
    return Math.max(local, this.#liveCounts.get(endpointId) ?? 0);
  }

  /** The worker counts of `/health`: running = live workers holding a job in progress. */
  async healthCounts(endpointId: string): Promise<WorkerHealthCounts> {
    const by = await this.#store.countByStatus(endpointId);
    const live = (by.get('idle') ?? 0) + (by.get('running') ?? 0);
    const running = Math.min(live, await this.#store.liveWorkersWithJobs(endpointId));
    return {
      idle: live - running,
      running,
      initializing: by.get('initializing') ?? 0,
      ready: live,
      throttled: by.get('throttled') ?? 0,
      unhealthy: by.get('unhealthy') ?? 0,
      suspended: by.get('suspended') ?? 0,
    };
  }

  /**
   * Writes a (new or returning) sighting at once; a new hand-attached worker must fit under the
   * cap. An endpoint's sightings are written one after another, so concurrent fresh ids cannot
   * all pass the same count (across replicas the cap may be passed by one row per replica).
   */
  async #record(endpointId: string, workerId: string, status: WorkerStatus, now: number, polls: number): Promise<void> {
    const write = async (): Promise<void> => {
      await this.#cap.admit(endpointId, workerId, now);
      const row = await this.#store.upsertSighting(endpointId, workerId, status, now);
      this.#known.set(keyOf(endpointId, workerId), {
        endpointId,
        workerId,
        launched: row?.hostId != null,
        status,
        lastSeen: now,
        dirty: false,
        polls,
      });
    };
    const turn = (this.#writing.get(endpointId) ?? Promise.resolve()).then(write, write);
    this.#writing.set(endpointId, turn);
    try {
      await turn;
    } finally {
      if (this.#writing.get(endpointId) === turn) this.#writing.delete(endpointId);
    }
  }
}
