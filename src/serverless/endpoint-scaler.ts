import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { decideScale, type ScaleConfig, type ScaleQueue, type ScaleWorker } from '../domain/autoscale.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { Instances } from '../instances/instances.js';
import type { ResourceQuota } from '../quotas/resource-quota.js';
import type { AutoscalerStore, LaunchedWorkerRow } from '../store/autoscaler-store.js';
import type { EndpointScaleStates } from './endpoint-scale-states.js';
import type { EndpointsService } from './endpoints-service.js';
import type { LaunchedWorkers, LaunchOutcome } from './launched-workers.js';
import type { WorkersRegistry } from './workers-registry.js';
import type { LbPool, LbTraffic } from './lb-pool.js';
import { lbWorkerPorts } from './lb-worker-ports.js';
import type { WorkerSuspension } from './worker-suspension.js';

/** `serverless.flashboot.maxKeepMs` when none is given. */
const FLASHBOOT_MAX_KEEP_MS = 600_000;

/** What the autoscaler's passes decided, since it started (metrics). */
export interface ScaleDecisions {
  passes: number;
  starts: number;
  stops: { idle: number; 'over-max': number; recycle: number; 'start-timeout': number };
  heldBack: number;
  throttled: number;
  /** FlashBoot: idle workers suspended instead of stopped, and suspended workers resumed for demand. */
  suspends: number;
  resumes: number;
}

export interface EndpointScalerDeps {
  store: Pick<AutoscalerStore, 'urgentQueued' | 'anyQueued' | 'oldestUrgentQueuedAt' | 'busyWorkers'>;
  clock: Clock;
  states: EndpointScaleStates;
  workers: LaunchedWorkers;
  instances: Pick<Instances, 'away'>;
  endpoints: Pick<EndpointsService, 'get' | 'templateOf'>;
  registry: Pick<WorkersRegistry, 'takeRecycleRequest'>;
  quota?: Pick<ResourceQuota, 'tryAdmit'> | undefined;
  logger: Pick<Logger, 'info'>;
  config: ScaleConfig;
  /** Counted into as passes decide. */
  decisions: ScaleDecisions;
  /** FlashBoot: suspending and resuming workers (worker-suspension.ts). */
  suspension: Pick<WorkerSuspension, 'suspend' | 'resume'>;
  /** FlashBoot's `serverless.flashboot.maxKeepMs`. @default 600000 */
  flashbootMaxKeepMs?: number | undefined;
  /** Load-balancing endpoints' traffic: their requests are their queue, their health their readiness. */
  lb?: (LbTraffic & Pick<LbPool, 'add' | 'has'>) | undefined;
}

/**
 * One endpoint's pass of the autoscaler: its queue and its launched workers as `decideScale`
 * (domain/autoscale.ts) sees them, then what it decided — workers stopped, workers launched
 * within the account's GPU quota, the rest counted as throttled with the reason — and, while the
 * runtime is unavailable, only the counts.
 */
export class EndpointScaler {
  readonly #deps: EndpointScalerDeps;

  constructor(deps: EndpointScalerDeps) {
    this.#deps = deps;
  }

  /**
   * One pass over the endpoint at `now`: its launched workers' rows (`rows`), and `unavailable`,
   * the runtime's reason while it cannot launch or remove anything (the pass then only counts).
   */
  async scale(
    accountId: string,
    endpointId: string,
    rows: LaunchedWorkerRow[],
    now: number,
    unavailable: string | null = null,
  ): Promise<void> {
    const state = this.#deps.states.of(endpointId);
    const endpoint = await this.#deps.endpoints.get(accountId, endpointId);
    // Counting past workersMax × scalerValue queued jobs cannot change the decision: the pass
    // stays cheap however long the queue is.
    const cap = Math.min(1_000_000, Math.max(1, endpoint.workersMax) * Math.max(1, endpoint.scalerValue) + 1);
    const lb = endpoint.type === 'LB' ? (this.#deps.lb ?? null) : null;
    if (lb) await this.#balanced(endpoint, rows, lb);
    const [urgent, anyQueued, oldestUrgentQueuedAt, busy] = await Promise.all([
      this.#deps.store.urgentQueued(endpointId, cap),
      this.#deps.store.anyQueued(endpointId),
      this.#deps.store.oldestUrgentQueuedAt(endpointId),
      this.#deps.store.busyWorkers(endpointId),
    ]);
    let inProgress = 0;
    for (const n of busy.values()) inProgress += n;
    // Only "low-priority jobs wait" matters beyond the urgent count (it keeps idle workers up).
    const lowOnly = anyQueued && urgent === 0 ? 1 : 0;
    // A load-balancing endpoint's queue: the requests waiting for a ready worker, and those held.
    const queue: ScaleQueue = lb
      ? {
          inQueue: lb.waiting(endpointId),
          inQueueLowPriority: 0,
          inProgress: lb.inFlight(endpointId),
          oldestUrgentQueuedAt: null,
        }
      : { inQueue: urgent + lowOnly, inQueueLowPriority: lowOnly, inProgress, oldestUrgentQueuedAt };
    const workers: ScaleWorker[] = [];
    const counts = { idle: 0, running: 0, initializing: 0 };
    /** FlashBoot: the endpoint's suspended workers (and those being suspended or resumed). */
    const suspended: Array<{ id: string; at: number; settled: boolean }> = [];
    for (const row of rows) {
      const m = this.#deps.workers.get(row.id);
      if (!m) {
        // A row of ours with no instance (e.g. written by another replica that died): lost.
        if (unavailable === null) await this.#deps.workers.stop(row.id, 'no instance', row.endpointId);
        continue;
      }
      if (m.stopping) continue;
      if (m.suspension !== null) {
        // Frozen on a host that is away (a fleet host unreachable or revoked): nothing can resume
        // it there, and it pings nobody; it is lost, as a worker whose pings stopped.
        const away =
          m.suspension === 'suspended' && unavailable === null ? this.#deps.instances.away(row.hostId) : null;
        if (away !== null) {
          await this.#deps.workers.stop(row.id, `its host is away while it is suspended: ${away}`);
          continue;
        }
        suspended.push({ id: row.id, at: m.suspendedAt ?? now, settled: m.suspension === 'suspended' });
        continue;
      }
      if (row.status === 'dead' || row.status === 'unhealthy') continue;
      if (this.#deps.registry.takeRecycleRequest(endpointId, row.id)) m.recycle = true;
      // a balanced worker: ready once its health path says so; busy while it holds requests
      const balanced = lb?.workerState(row.id) ?? null;
      if (balanced) m.lastActiveAt = Math.max(m.lastActiveAt, balanced.lastActiveAt);
      const holds = balanced ? balanced.outstanding : (busy.get(row.id) ?? 0);
      const initializing = balanced ? !balanced.ready && !m.ready : row.status === 'initializing' && holds === 0;
      if (initializing && unavailable === null) {
        // Not up yet on a host that is away: it would hold its place until the start timeout.
        const away = this.#deps.instances.away(row.hostId);
        if (away !== null) {
          await this.#deps.workers.stop(row.id, `its host is away before it started: ${away}`);
          continue;
        }
      }
      if (holds > 0) {
        m.lastActiveAt = now;
        this.#deps.workers.prove(m);
      } else if (!initializing && !m.ready && !balanced) {
        // First heard of: idle time counts from when it became ready (a balanced worker's
        // readiness is timed by the balancer, which saw it first).
        m.lastActiveAt = now;
      }
      if (!initializing) m.ready = true;
      if (!m.proven && now - m.startedAt > this.#deps.config.crashWindowMs && !initializing)
        this.#deps.workers.prove(m);
      const w: ScaleWorker = {
        id: row.id,
        state: initializing ? 'initializing' : holds > 0 ? 'running' : 'idle',
        startedAt: m.startedAt,
        lastActiveAt: m.lastActiveAt,
        recycle: m.recycle,
      };
      counts[w.state]++;
      workers.push(w);
    }
    state.counts = counts;
    state.suspended = suspended.length;
    if (unavailable === null) await this.#expireSuspended(endpoint, suspended, workers.length, now);
    const decision = decideScale(
      {
        workersMin: endpoint.workersMin,
        workersMax: endpoint.workersMax,
        scalerType: endpoint.scalerType,
        scalerValue: endpoint.scalerValue,
        idleTimeout: endpoint.idleTimeout,
      },
      queue,
      workers,
      state.crash,
      now,
      this.#deps.config,
    );
    state.heldBack = decision.heldBack;
    this.#deps.decisions.passes++;
    this.#deps.decisions.heldBack += decision.heldBack;
    if (unavailable !== null) {
      // Nothing can be launched or removed: the wanted workers wait, as if throttled.
      state.throttled = decision.start;
      state.capacityError = decision.start > 0 ? `the runtime is unavailable: ${unavailable}` : null;
      return;
    }
    if (decision.start > 0 || decision.stop.length > 0)
      this.#deps.logger.info(
        { endpointId, start: decision.start, stop: decision.stop, reasons: decision.reasons },
        'scaling',
      );
    for (const { id, reason } of decision.stop) {
      if (reason === 'idle' && endpoint.flashboot) {
        // FlashBoot: frozen, kept for the next job or request; a runtime that cannot stops it as without.
        const r = await this.#deps.suspension.suspend(id, `idle for ${endpoint.idleTimeout} s (FlashBoot)`);
        if (r.ok) {
          this.#deps.decisions.suspends++;
          continue;
        }
        // a load-balancing worker that took a request since: not idle, neither suspended nor stopped
        if (r.busy === true) continue;
        this.#deps.logger.info(
          { endpointId, workerId: id, reason: r.reason },
          'not suspending the worker; stopping it',
        );
      }
      this.#deps.decisions.stops[reason]++;
      const m = this.#deps.workers.get(id);
      await this.#deps.workers.stop(id, reason);
      if (reason === 'start-timeout' && m)
        this.#deps.states.crashed(
          endpointId,
          m.startedAt,
          now,
          `did not become ready within ${this.#deps.config.startTimeoutMs} ms`,
        );
    }
    // Demand resumes suspended workers before launching: first those requests wait for by name
    // (`strict-resume`), then those waiting requests name softly, then the most recently suspended.
    let resumed = 0;
    const wanted = (id: string): boolean => (lb?.resumeWanted(id) ?? 0) > 0;
    const preferred = (id: string): boolean => (lb?.preferredWaiting(id) ?? 0) > 0;
    const ready = suspended
      .filter((s) => s.settled)
      .sort(
        (a, b) =>
          Number(wanted(b.id)) - Number(wanted(a.id)) ||
          Number(preferred(b.id)) - Number(preferred(a.id)) ||
          b.at - a.at,
      );
    for (const s of ready) {
      if (resumed >= decision.start && !wanted(s.id)) break;
      const r = await this.#deps.suspension.resume(s.id);
      if (r.ok) {
        resumed++;
        this.#deps.decisions.resumes++;
      } else await this.#deps.workers.stop(s.id, r.reason);
    }
    this.#deps.decisions.starts += Math.max(0, decision.start - resumed);
    let throttled = 0;
    for (let i = resumed; i < decision.start; i++) {
      const placed = await this.#launchWithinQuota(endpoint, now);
      if (!placed.ok) {
        throttled = decision.start - i;
        state.capacityError = placed.reason;
        break;
      }
      if (placed.crash !== null) this.#deps.states.crashed(endpointId, now, this.#deps.clock.now(), placed.crash);
    }
    state.throttled = throttled;
    this.#deps.decisions.throttled += throttled;
    if (throttled === 0) state.capacityError = null;
  }

  /**
   * FlashBoot's keep time: a worker suspended that long is removed, as is one no longer wanted
   * (its endpoint turned FlashBoot off; `workersMax` lowered under the workers up and suspended:
   * the longest suspended go first). The removed ones leave `suspended`. A load-balancing worker a
   * `strict-resume` request waits for outlives its keep time: this pass resumes it.
   */
  async #expireSuspended(
    endpoint: Endpoint,
    suspended: Array<{ id: string; at: number; settled: boolean }>,
    up: number,
    now: number,
  ): Promise<void> {
    // The endpoint's own keep time, clamped here (not when stored): an operator lowering the
    // maximum shortens the stored endpoints' keep times at once.
    const keepMs = Math.min(
      endpoint.flashBootKeepSeconds * 1000,
      this.#deps.flashbootMaxKeepMs ?? FLASHBOOT_MAX_KEEP_MS,
    );
    suspended.sort((a, b) => a.at - b.at);
    let excess = suspended.filter((s) => s.settled).length - Math.max(0, endpoint.workersMax - up);
    for (const s of [...suspended]) {
      if (!s.settled) continue;
      const why =
        now - s.at >= keepMs && !((this.#deps.lb?.resumeWanted(s.id) ?? 0) > 0)
          ? `FlashBoot keep time over (suspended ${now - s.at} ms, keep ${keepMs} ms)`
          : !endpoint.flashboot
            ? 'FlashBoot turned off'
            : excess > 0
              ? `over workersMax ${endpoint.workersMax} with suspended workers`
              : null;
      if (why === null) continue;
      excess--;
      suspended.splice(suspended.indexOf(s), 1);
      await this.#deps.workers.stop(s.id, why);
    }
  }

  /** Workers of a load-balancing endpoint the balancer does not know (adopted after a restart) are told to it. */
  async #balanced(endpoint: Endpoint, rows: LaunchedWorkerRow[], lb: Pick<LbPool, 'add' | 'has'>): Promise<void> {
    const missing = rows.filter((r) => !lb.has(r.id) && this.#deps.workers.get(r.id)?.stopping === false);
    if (missing.length === 0) return;
    const ports = lbWorkerPorts(endpoint, await this.#deps.endpoints.templateOf(endpoint));
    // one adopted suspended (FlashBoot) is neither checked nor sent requests until resumed
    for (const r of missing)
      lb.add(
        { workerId: r.id, endpointId: endpoint.id, accountId: endpoint.accountId, ...ports },
        this.#deps.workers.get(r.id)?.suspension === 'suspended',
      );
  }

  /** A launch, when the endpoint's account has room for the worker's GPUs under its quota; else why not. */
  async #launchWithinQuota(endpoint: Endpoint, now: number): Promise<LaunchOutcome> {
    const launch = () => this.#deps.workers.launch(endpoint, now);
    const quota = this.#deps.quota;
    if (!quota) return launch();
    const gpus = endpoint.instanceIds.length > 0 ? 0 : endpoint.gpuCount; // a CPU endpoint's workers hold none
    const r = await quota.tryAdmit(endpoint.accountId, { pods: 0, gpus }, launch);
    return r.ok ? r.value : r;
  }
}
