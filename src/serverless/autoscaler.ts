/**
 * The autoscaler loop: every interval, for each queue-based endpoint, it reads the queue and the
 * workers it launched, asks `decideScale` (domain/autoscale.ts) what to do, and does it — places
 * and launches workers through the inventory and the runtime like pods, stops idle ones, and
 * handles workers that end on their own (their jobs go back to the queue; early ends count as
 * crashes, and a crash-looping endpoint is backed off instead of restarted in a hot loop).
 *
 * State kept in memory (one autoscaler drives a deployment: on PostgreSQL the replica holding the
 * `autoscaler` lease; the others' loops idle, and a replica that loses the lease stops the
 * workers it launched, the new holder cleaning up their rows as after a restart): each launched worker's start and last-activity times, each endpoint's crash
 * record, and one API key per endpoint for its workers (minted at the first launch, revoked on
 * stop; never stored in plaintext). The `workers` table remains the shared truth: rows of workers
 * it launched carry `host_id`, and after a restart rows whose instance is gone are marked dead and
 * their jobs requeued.
 */
import type { Logger } from 'pino';
import type { AutoscalerConfig } from '../config.js';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { Catalog } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import { decideScale, HEALTHY, isBackedOff, recordWorkerEnd, recordWorkerHealthy, type CrashState, type ScaleQueue, type ScaleWorker } from '../domain/autoscale.js';
import { newId } from '../domain/ids.js';
import type { PlacementRequest } from '../domain/placement.js';
import type { Inventory } from '../inventory/inventory.js';
import type { JobsService } from '../jobs/jobs-service.js';
import type { JobEventPayload } from '../jobs/job-view.js';
import type { InstanceStatus, Runtime, VolumeBinding } from '../runtime/runtime.js';
import type { Db } from '../store/database.js';
import { AutoscalerStore } from '../store/autoscaler-store.js';
import { heldLease, type Lease } from '../store/leases.js';
import type { Template } from '../templates/template.js';
import type { Endpoint } from './endpoint.js';
import type { EndpointsService } from './endpoints-service.js';
import type { JobFinishedEvents } from './webhook-dispatcher.js';
import { workerEnvironment } from './worker-env.js';
import type { WorkersRegistry } from './workers-registry.js';

export const DEFAULT_AUTOSCALER_CONFIG: AutoscalerConfig = {
  intervalMs: 1_000,
  nudgeGapMs: 100,
  crashWindowMs: 30_000,
  crashThreshold: 3,
  backoffBaseMs: 10_000,
  backoffMaxMs: 300_000,
  startTimeoutMs: 600_000,
};

export interface AutoscalerDeps {
  db: Db;
  clock: Clock;
  runtime: Runtime;
  inventory: Pick<Inventory, 'placeAndReserve' | 'release'>;
  jobs: Pick<JobsService, 'workerLost'>;
  workers: Pick<WorkersRegistry, 'markDead' | 'takeRecycleRequest'>;
  endpoints: Pick<EndpointsService, 'get' | 'templateOf'>;
  accounts: Pick<AccountsService, 'createKey' | 'revokeKey'>;
  /** Network volumes: their data center (a placement constraint) and host folder. */
  volumes?: { get(accountId: string, id: string): Promise<{ dataCenterId: string }>; hostPath(id: string): string };
  /** Finished jobs mark their worker active (idle time counts from there). */
  events?: JobFinishedEvents & {
    on(name: 'job:queued', listener: (payload: { endpointId: string; lowPriority: boolean }) => void): () => void;
  };
  logger: Pick<Logger, 'info' | 'warn' | 'error' | 'debug'>;
  /** Which replica scales (its scheduled passes run only while held). @default always held */
  lease?: Lease;
  config: {
    autoscaler?: Partial<AutoscalerConfig>;
    catalog: Pick<Catalog, 'gpuTypes' | 'dataCenters'>;
    /** Base URL workers reach this server at. */
    publicUrl: string;
    /** @default 10000 */
    pingIntervalMs?: number;
  };
}

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

interface Managed {
  endpointId: string;
  startedAt: number;
  lastActiveAt: number;
  /** Set once the registry heard from it (it left INITIALIZING). */
  ready: boolean;
  /** Set once it took a job or outlived the crash window. */
  proven: boolean;
  recycle: boolean;
  stopping: boolean;
}

interface EndpointState {
  crash: CrashState;
  throttled: number;
  capacityError: string | null;
  heldBack: number;
  counts: { idle: number; running: number; initializing: number };
}

/** Longest crash reason kept (it may carry the tail of the worker's output). */
const MAX_REASON = 400;

export class Autoscaler {
  readonly store: AutoscalerStore;
  readonly config: AutoscalerConfig;
  readonly #deps: AutoscalerDeps;
  readonly #lease: Lease;
  /** The lease term `recover()` last ran in: a new term means another replica may have driven meanwhile. */
  #recoveredTerm = -1;
  readonly #managed = new Map<string, Managed>();
  readonly #state = new Map<string, EndpointState>();
  /** Per endpoint: the workers' key (id to revoke, raw value for the env). */
  readonly #keys = new Map<string, { id: string; key: string }>();
  #unsubscribe: Array<() => void> = [];
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = true;
  #again = false;
  #timerDue = 0;
  #timerDelay = 0;
  #lastPassAt = -Infinity;
  #manual = false;

  constructor(deps: AutoscalerDeps) {
    this.#deps = deps;
    this.#lease = deps.lease ?? heldLease('autoscaler');
    this.store = new AutoscalerStore(deps.db);
    this.config = { ...DEFAULT_AUTOSCALER_CONFIG, ...deps.config.autoscaler };
  }

  /**
   * Cleans up after a previous server, subscribes to instance and job events, and starts the loop
   * (unless `loop: false`: tests drive `tick()` themselves).
   */
  async start(options: { loop?: boolean } = {}): Promise<void> {
    if (!this.#stopped) return;
    this.#stopped = false;
    if (this.#lease.isHeld()) {
      this.#recoveredTerm = this.#lease.term;
      await this.recover();
    }
    this.#unsubscribe.push(this.#deps.runtime.onChange((status) => this.#onInstanceChange(status)));
    if (this.#deps.events) {
      const active = (p: JobEventPayload): void => {
        const m = p.job.workerId ? this.#managed.get(p.job.workerId) : undefined;
        if (!m) return;
        m.lastActiveAt = Math.max(m.lastActiveAt, p.at);
        this.#prove(m);
      };
      for (const name of ['job:completed', 'job:failed', 'job:timed_out'] as const) this.#unsubscribe.push(this.#deps.events.on(name, active));
      // A queued job may need a worker now (cold start), not at the next interval.
      this.#unsubscribe.push(this.#deps.events.on('job:queued', (q) => void (q.lowPriority || this.nudge())));
    }
    if (options.loop === false) this.#manual = true;
    else this.#schedule(0);
  }

  /** Stops the loop and every worker it launched (their jobs go back to the queue), and revokes the workers' keys. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const off of this.#unsubscribe) off();
    this.#unsubscribe = [];
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running?.catch(() => undefined);
    await this.#stopAll('server shutdown');
  }

  /** Stops every worker launched here and revokes their keys. */
  async #stopAll(reason: string): Promise<void> {
    await Promise.allSettled([...this.#managed.keys()].map((id) => this.#stopWorker(id, reason)));
    for (const { id } of this.#keys.values()) await this.#deps.accounts.revokeKey(id).catch(() => undefined);
    this.#keys.clear();
  }

  /** A scheduled pass: scales only while this replica holds the lease. */
  async #pass(): Promise<void> {
    if (!this.#lease.isHeld()) {
      // Another replica drives now: the workers launched here are no longer accounted for by anyone.
      if (this.#managed.size > 0 || this.#keys.size > 0) {
        this.#deps.logger.warn({ workers: this.#managed.size }, 'autoscaler lease lost; stopping the workers launched here');
        await this.#stopAll('autoscaler lease lost');
        this.#state.clear();
      }
      return;
    }
    if (this.#recoveredTerm !== this.#lease.term) {
      this.#recoveredTerm = this.#lease.term;
      await this.recover();
    }
    await this.tick();
  }

  /** Asks for a pass soon (a job was submitted); passes never overlap. */
  nudge(): void {
    if (this.#stopped || this.#manual) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#schedule(this.#nudgeDelay());
  }

  /** How long until a woken pass may run: at once after a quiet spell, else the rest of the gap. */
  #nudgeDelay(): number {
    return Math.max(0, this.#lastPassAt + this.config.nudgeGapMs - this.#deps.clock.now());
  }

  /**
   * After a restart: launched workers' rows whose instance no longer runs here are marked dead and
   * their jobs requeued; an instance that still runs but is not ours to account for is stopped.
   */
  async recover(): Promise<{ cleaned: string[] }> {
    const cleaned: string[] = [];
    for (const row of await this.store.launchedWorkers()) {
      if (this.#managed.has(row.id)) continue;
      await this.#deps.runtime.stop(row.id).catch(() => undefined);
      this.#deps.inventory.release(row.id);
      await this.#deps.workers.markDead([row.id], this.#deps.clock.now());
      const moved = await this.#deps.jobs.workerLost(row.id);
      cleaned.push(row.id);
      this.#deps.logger.info({ workerId: row.id, endpointId: row.endpointId, ...moved }, 'cleaned up a worker left by a previous server');
    }
    return { cleaned };
  }

  /** One pass over every endpoint at `now`. Tests call it directly on a fake clock. */
  async tick(now: number = this.#deps.clock.now()): Promise<void> {
    const rows = await this.store.launchedWorkers();
    const byEndpoint = new Map<string, typeof rows>();
    for (const r of rows) byEndpoint.set(r.endpointId, [...(byEndpoint.get(r.endpointId) ?? []), r]);
    const ids = await this.store.endpointIds();
    const known = new Set(ids.map((e) => e.id));
    for (const { id, accountId, workersMax } of ids) {
      const workerRows = byEndpoint.get(id) ?? [];
      if (workersMax <= 0 && workerRows.length === 0 && !this.#state.has(id)) continue;
      try {
        await this.#scaleEndpoint(accountId, id, workerRows, now);
      } catch (err) {
        this.#deps.logger.error({ endpointId: id, err: (err as Error).message }, 'autoscaler pass failed for endpoint');
      }
    }
    // Workers of endpoints that no longer exist.
    for (const [endpointId, workerRows] of byEndpoint) {
      if (known.has(endpointId)) continue;
      for (const r of workerRows) await this.#stopWorker(r.id, 'endpoint deleted');
      this.#state.delete(endpointId);
    }
  }

  /** Worker counts by state of an endpoint, as of the last pass. */
  health(endpointId: string): EndpointScaleHealth {
    const s = this.#state.get(endpointId);
    const now = this.#deps.clock.now();
    if (!s) return { idle: 0, running: 0, initializing: 0, throttled: 0, unhealthy: 0, capacityError: null, crashes: 0, backoffUntil: null, lastCrash: null };
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

  /** Ids of the workers this autoscaler runs for the endpoint. */
  workerIds(endpointId: string): string[] {
    return [...this.#managed].filter(([, m]) => m.endpointId === endpointId && !m.stopping).map(([id]) => id);
  }

  // ── one endpoint ──────────────────────────────────────────────────────────────────────────

  async #scaleEndpoint(accountId: string, endpointId: string, rows: Awaited<ReturnType<AutoscalerStore['launchedWorkers']>>, now: number): Promise<void> {
    const state = this.#stateOf(endpointId);
    const endpoint = await this.#deps.endpoints.get(accountId, endpointId);
    // Counting past workersMax × scalerValue queued jobs cannot change the decision: the pass
    // stays cheap however long the queue is.
    const cap = Math.min(1_000_000, Math.max(1, endpoint.workersMax) * Math.max(1, endpoint.scalerValue) + 1);
    const [urgent, anyQueued, oldestUrgentQueuedAt, busy] = await Promise.all([
      this.store.urgentQueued(endpointId, cap),
      this.store.anyQueued(endpointId),
      this.store.oldestUrgentQueuedAt(endpointId),
      this.store.busyWorkers(endpointId),
    ]);
    let inProgress = 0;
    for (const n of busy.values()) inProgress += n;
    // Only "low-priority jobs wait" matters beyond the urgent count (it keeps idle workers up).
    const lowOnly = anyQueued && urgent === 0 ? 1 : 0;
    const queue: ScaleQueue = { inQueue: urgent + lowOnly, inQueueLowPriority: lowOnly, inProgress, oldestUrgentQueuedAt };
    const workers: ScaleWorker[] = [];
    const counts = { idle: 0, running: 0, initializing: 0 };
    for (const row of rows) {
      const m = this.#managed.get(row.id);
      if (!m) {
        // A row of ours with no instance (e.g. written by another replica that died): lost.
        await this.#stopWorker(row.id, 'no instance');
        continue;
      }
      if (m.stopping) continue;
      if (row.status === 'dead' || row.status === 'unhealthy') continue;
      if (this.#deps.workers.takeRecycleRequest(row.id)) m.recycle = true;
      const holds = busy.get(row.id) ?? 0;
      const initializing = row.status === 'initializing' && holds === 0;
      if (holds > 0) {
        m.lastActiveAt = now;
        this.#prove(m);
      } else if (!initializing && !m.ready) {
        // First heard of: idle time counts from when it became ready.
        m.lastActiveAt = now;
      }
      if (!initializing) m.ready = true;
      if (!m.proven && now - m.startedAt > this.config.crashWindowMs && !initializing) this.#prove(m);
      const w: ScaleWorker = { id: row.id, state: initializing ? 'initializing' : holds > 0 ? 'running' : 'idle', startedAt: m.startedAt, lastActiveAt: m.lastActiveAt, recycle: m.recycle };
      counts[w.state]++;
      workers.push(w);
    }
    state.counts = counts;
    const decision = decideScale(
      { workersMin: endpoint.workersMin, workersMax: endpoint.workersMax, scalerType: endpoint.scalerType, scalerValue: endpoint.scalerValue, idleTimeout: endpoint.idleTimeout },
      queue,
      workers,
      state.crash,
      now,
      this.config,
    );
    state.heldBack = decision.heldBack;
    if (decision.start > 0 || decision.stop.length > 0) this.#deps.logger.info({ endpointId, start: decision.start, stop: decision.stop, reasons: decision.reasons }, 'scaling');
    for (const { id, reason } of decision.stop) {
      const m = this.#managed.get(id);
      await this.#stopWorker(id, reason);
      if (reason === 'start-timeout' && m) this.#crashed(endpointId, m.startedAt, now, `did not become ready within ${this.config.startTimeoutMs} ms`);
    }
    let throttled = 0;
    for (let i = 0; i < decision.start; i++) {
      const placed = await this.#launch(endpoint, now);
      if (!placed.ok) {
        throttled = decision.start - i;
        state.capacityError = placed.reason;
        break;
      }
    }
    state.throttled = throttled;
    if (throttled === 0) state.capacityError = null;
  }

  /** Places, records and starts one worker. Answers false (with why) when nothing has room for it. */
  async #launch(endpoint: Endpoint, now: number): Promise<{ ok: true } | { ok: false; reason: string }> {
    const template = await this.#deps.endpoints.templateOf(endpoint);
    if (!template) return { ok: false, reason: `template ${endpoint.templateId} of the endpoint no longer exists` };
    const volume = endpoint.networkVolumeId && this.#deps.volumes ? await this.#deps.volumes.get(endpoint.accountId, endpoint.networkVolumeId) : null;
    const request = this.#placementRequest(endpoint, template, volume?.dataCenterId ?? null);
    const workerId = newId();
    const placed = this.#deps.inventory.placeAndReserve(workerId, request);
    if (!placed.ok) return { ok: false, reason: placed.reason };
    const { placement } = placed;
    this.#managed.set(workerId, { endpointId: endpoint.id, startedAt: now, lastActiveAt: now, ready: false, proven: false, recycle: false, stopping: false });
    try {
      await this.store.insertLaunched(workerId, endpoint.id, placement.hostId, now);
      const key = await this.#keyFor(endpoint);
      const volumes: VolumeBinding[] = [];
      if (endpoint.networkVolumeId && this.#deps.volumes) volumes.push({ hostPath: this.#deps.volumes.hostPath(endpoint.networkVolumeId), path: '/runpod-volume', kind: 'network' });
      const env = {
        ...template.env,
        ...endpoint.env,
        ...workerEnvironment({
          publicUrl: this.#deps.config.publicUrl,
          endpointId: endpoint.id,
          workerId,
          apiKey: key,
          gpuType: placement.gpuTypeId ?? 'CPU',
          pingIntervalMs: this.#deps.config.pingIntervalMs ?? 10_000,
        }),
        RUNPOD_DC_ID: placement.dataCenterId,
        RUNPOD_GPU_COUNT: String(placement.gpuIndices.length),
        RUNPOD_CPU_COUNT: String(request.vcpuCount),
      };
      this.#deps.logger.info({ endpointId: endpoint.id, workerId, hostId: placement.hostId, image: template.imageName }, 'launching worker');
      await this.#deps.runtime.start({
        id: workerId,
        image: template.imageName,
        args: template.args,
        env,
        hostId: placement.hostId,
        gpuIndices: placement.gpuIndices,
        vcpus: request.vcpuCount,
        memoryGb: request.memoryGb,
        ports: [],
        volumes,
      });
      return { ok: true };
    } catch (err) {
      // Could not launch at all: the same as a worker dying at once.
      const reason = `could not launch: ${(err as Error).message}`;
      this.#deps.logger.warn({ endpointId: endpoint.id, workerId, reason }, 'worker launch failed');
      await this.#stopWorker(workerId, 'launch failed');
      this.#crashed(endpoint.id, now, this.#deps.clock.now(), reason);
      return { ok: true };
    }
  }

  #placementRequest(endpoint: Endpoint, template: Template, volumeDataCenterId: string | null): PlacementRequest {
    const { catalog } = this.#deps.config;
    const gpuTypeIds = endpoint.gpuIds.flatMap((pool) => catalog.gpuTypes.filter((g) => g.pool === pool).map((g) => g.id));
    const countries = new Set(endpoint.locations.map((c) => c.toUpperCase()));
    const dataCenterIds = countries.size === 0 ? [] : catalog.dataCenters.filter((d) => countries.has(d.country.toUpperCase())).map((d) => d.id);
    return {
      kind: 'gpu',
      gpuTypeIds,
      gpuCount: endpoint.gpuCount,
      cpuFlavorId: null,
      vcpuCount: 0,
      memoryGb: 0,
      diskGb: template.containerDiskInGb,
      cloud: 'ALL',
      dataCenterIds,
      volumeDataCenterId,
      allowedCudaVersions: endpoint.allowedCudaVersions,
      minCudaVersion: null,
      portCount: 0,
      globalNetworking: false,
    };
  }

  async #keyFor(endpoint: Endpoint): Promise<string> {
    const held = this.#keys.get(endpoint.id);
    if (held) return held.key;
    const created = await this.#deps.accounts.createKey(endpoint.accountId, { scope: 'write', name: `workers of endpoint ${endpoint.id} (autoscaler)`, rateLimitExempt: true });
    this.#keys.set(endpoint.id, { id: created.record.id, key: created.key });
    return created.key;
  }

  // ── workers ending ────────────────────────────────────────────────────────────────────────

  /** Stops a worker: instance, reservation, row; its jobs (if any) go back to the queue. */
  async #stopWorker(workerId: string, reason: string): Promise<void> {
    const m = this.#managed.get(workerId);
    if (m?.stopping) return;
    if (m) m.stopping = true;
    this.#deps.logger.info({ workerId, endpointId: m?.endpointId, reason }, 'stopping worker');
    try {
      await this.#deps.runtime.stop(workerId).catch((err: unknown) => this.#deps.logger.warn({ workerId, err: (err as Error).message }, 'stopping the worker instance failed'));
      this.#deps.inventory.release(workerId);
      await this.#deps.workers.markDead([workerId], this.#deps.clock.now());
      await this.#deps.jobs.workerLost(workerId);
    } finally {
      this.#managed.delete(workerId);
    }
  }

  /** The runtime says an instance changed: a worker of ours that ended without being asked to is lost. */
  #onInstanceChange(status: InstanceStatus): void {
    if (status.state !== 'exited' && status.state !== 'failed') return;
    const m = this.#managed.get(status.id);
    if (!m || m.stopping) return;
    const now = this.#deps.clock.now();
    const reason = (status.reason ?? `exited with code ${status.exitCode}`).slice(0, MAX_REASON);
    this.#deps.logger.warn({ workerId: status.id, endpointId: m.endpointId, exitCode: status.exitCode }, 'worker ended on its own');
    if (!m.proven) this.#crashed(m.endpointId, m.startedAt, now, reason);
    void this.#stopWorker(status.id, 'instance ended')
      .catch((err: unknown) => this.#deps.logger.error({ workerId: status.id, err: (err as Error).message }, 'cleaning up an ended worker failed'))
      .finally(() => this.nudge());
  }

  #crashed(endpointId: string, startedAt: number, endedAt: number, reason: string): void {
    const state = this.#stateOf(endpointId);
    const before = state.crash;
    state.crash = recordWorkerEnd(before, { startedAt, endedAt, reason }, this.config);
    if (state.crash.backoffUntil !== before.backoffUntil && state.crash.backoffUntil !== null)
      this.#deps.logger.warn(
        { endpointId, crashes: state.crash.consecutive, backoffUntil: new Date(state.crash.backoffUntil).toISOString() },
        'endpoint workers are crash-looping; backing off',
      );
  }

  #prove(m: Managed): void {
    if (m.proven) return;
    m.proven = true;
    const state = this.#stateOf(m.endpointId);
    state.crash = recordWorkerHealthy(state.crash);
  }

  #stateOf(endpointId: string): EndpointState {
    let s = this.#state.get(endpointId);
    if (!s) {
      s = { crash: HEALTHY, throttled: 0, capacityError: null, heldBack: 0, counts: { idle: 0, running: 0, initializing: 0 } };
      this.#state.set(endpointId, s);
    }
    return s;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    const due = this.#deps.clock.now() + delayMs;
    if (this.#timer) {
      // A pass is already due no later; but a pass due now does not sit behind a timer's wait.
      if (this.#timerDue <= due && (delayMs > 0 || this.#timerDelay === 0)) return;
      clearTimeout(this.#timer);
    }
    this.#timerDue = due;
    this.#timerDelay = delayMs;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#lastPassAt = this.#deps.clock.now();
      this.#running = this.#pass()
        .catch((err: unknown) => this.#deps.logger.error({ err: (err as Error).message }, 'autoscaler pass failed'))
        .finally(() => {
          this.#running = null;
          const again = this.#again;
          this.#again = false;
          this.#schedule(again ? this.#nudgeDelay() : this.config.intervalMs);
        });
    }, delayMs);
    this.#timer.unref?.();
  }
}
