/**
 * The autoscaler loop: every interval, for each queue-based endpoint, it reads the queue and the
 * workers it launched, asks `decideScale` (domain/autoscale.ts) what to do, and does it
 * (`EndpointScaler`, one endpoint's pass) — places and launches workers on the launch path pods
 * take (src/instances/), stops idle ones, and handles workers that end on their own (their jobs
 * go back to the queue; early ends count as crashes, and a crash-looping endpoint is backed off
 * instead of restarted in a hot loop).
 *
 * State kept in memory (one autoscaler drives a deployment: on PostgreSQL the replica holding the
 * `autoscaler` lease; the others' loops idle, and a replica that loses the lease stops the
 * workers it launched, the new holder cleaning up their rows as after a restart): each launched worker's start and last-activity times, each endpoint's crash
 * record, and one `worker`-scoped API key per launched worker (minted at its launch, revoked when
 * it stops; stored hashed only), held by `LaunchedWorkers`, `EndpointScaleStates` and
 * `WorkerKeys`. The `workers` table remains the shared truth: rows of workers
 * it launched carry `host_id` and the allocation they hold there.
 *
 * After a restart (`adopt()` with what the runtime's `attach()` found, then `recover()`): a worker
 * whose row, key and instance all survived is adopted — its allocation reserved again, its key
 * kept, its in-memory entry rebuilt — so a server killed and started again does not throw away
 * warm workers; every other row is marked dead, its instance removed and its jobs requeued.
 *
 * While the runtime is unavailable (its engine unreachable) the autoscaler neither launches nor
 * stops workers (logged once), and a launch that fails because of it is not a crash. In a fleet a
 * host is unavailable, not the runtime: placement skips the host, and a launch that failed because
 * its host went away is not a crash either. A worker on a host that is away:
 * - not heard from yet (INITIALIZING) is stopped at once, not counted as a crash, so its
 *   replacement is placed elsewhere in the same pass rather than after the start timeout (its
 *   `remove` waits in the host's queue, for when the host is back);
 * - heard from goes on while it pings (its container may run on with its agent away), counted
 *   like any; once its pings stop, the registry marks it dead, it no longer counts, and
 *   replacements are placed elsewhere;
 * - on a revoked host its instance ends (the runtime says so): it is stopped (its key revoked,
 *   its jobs back in the queue), not counted as a crash.
 */
import type { Logger } from 'pino';
import type { AutoscalerConfig } from './autoscaler-config.js';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { Catalog } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import { AttachedInstances } from '../instances/attached-instances.js';
import { Instances } from '../instances/instances.js';
import type { Inventory } from '../inventory/inventory.js';
import type { WorkerJobs } from '../jobs/worker-jobs.js';
import type { JobEventPayload } from '../jobs/job-view.js';
import type { AttachedInstance, Runtime } from '../runtime/runtime.js';
import type { AutoscalerStore } from '../store/autoscaler-store.js';
import { heldLease, type Lease } from '../store/leases.js';
import type { EndpointsService } from './endpoints-service.js';
import { EndpointScaler, type ScaleDecisions } from './endpoint-scaler.js';
import { EndpointScaleStates, type EndpointScaleHealth } from './endpoint-scale-states.js';
import { LaunchedWorkers, type WorkerVolumes } from './launched-workers.js';
import { PassLoop } from './pass-loop.js';
import { WorkerSuspension, type SuspensionOutcome } from './worker-suspension.js';
import { WorkerReclaim } from './worker-reclaim.js';
import type { LbPool, LbTraffic } from './lb-pool.js';
import { balancedTraffic } from './lb-replicas.js';
import type { JobFinishedEvents } from './webhook-dispatcher.js';
import type { WorkersRegistry } from './workers-registry.js';
import type { RegistriesService } from '../registries/registries-service.js';
import type { ResourceQuota } from '../quotas/resource-quota.js';

const DEFAULT_AUTOSCALER_CONFIG: AutoscalerConfig = {
  intervalMs: 1_000,
  nudgeGapMs: 100,
  crashWindowMs: 30_000,
  crashThreshold: 3,
  backoffBaseMs: 10_000,
  backoffMaxMs: 300_000,
  startTimeoutMs: 600_000,
};

export interface AutoscalerDeps {
  store: AutoscalerStore;
  clock: Clock;
  runtime: Runtime;
  inventory: Pick<Inventory, 'placeAndReserve' | 'reserveExact' | 'release' | 'setReclaimable' | 'restore'>;
  jobs: { worker: Pick<WorkerJobs, 'workerLost' | 'workerReleased'> };
  workers: Pick<WorkersRegistry, 'markDead' | 'takeRecycleRequest' | 'gate' | 'suspended' | 'resumed'>;
  endpoints: Pick<EndpointsService, 'get' | 'templateOf'>;
  accounts: Pick<AccountsService, 'createKey' | 'revokeKey' | 'revokeWorkerKeysExcept' | 'liveWorkerKeyId'>;
  /** Network volumes: their data center (a placement constraint). */
  volumes?: WorkerVolumes;
  /** Credentials of templates' container registries, for pulling worker images. */
  registries?: Pick<RegistriesService, 'credentials'>;
  /** Finished jobs mark their worker active (idle time counts from there). */
  events?: JobFinishedEvents & {
    on(name: 'job:queued', listener: (payload: { endpointId: string; lowPriority: boolean }) => void): () => void;
  };
  logger: Pick<Logger, 'info' | 'warn' | 'error' | 'debug'>;
  /** Which replica scales (its scheduled passes run only while held). @default always held */
  lease?: Lease;
  /** The GPU quota: a launch past the account's is throttled, not errored. @default none */
  quota?: Pick<ResourceQuota, 'tryAdmit'>;
  /** Load-balancing endpoints' workers and traffic (lb-pool.ts). @default none: their workers take no requests */
  lb?: LbPool;
  /**
   * Every replica's load-balancing traffic (lb-replicas.ts), read at the start of each pass; the
   * scaler then counts other replicas' waiting and held requests too. @default the pool's only
   */
  traffic?: LbTraffic & { refresh(now: number): Promise<void> };
  /** The workers' `system` log lines (docs/logs.md). @default none written */
  systemLog?: import('../logs/system-log.js').SystemLogWriter;
  config: {
    autoscaler?: Partial<AutoscalerConfig>;
    /** FlashBoot (`serverless.flashboot`). @default keep time 10 min, suspended time free */
    flashboot?: { maxKeepMs: number; suspendedPricePerGpuHour?: number };
    catalog: Pick<Catalog, 'gpuTypes' | 'cpuFlavors' | 'dataCenters'>;
    /** Base URL workers reach this server at. */
    publicUrl: string;
    /** @default 10000 */
    pingIntervalMs?: number;
  };
}

export class Autoscaler {
  readonly store: AutoscalerStore;
  readonly config: AutoscalerConfig;
  readonly #deps: AutoscalerDeps;
  readonly #lease: Lease;
  /** The lease term `recover()` last ran in: a new term means another replica may have driven meanwhile. */
  #recoveredTerm = -1;
  readonly #states: EndpointScaleStates;
  readonly #instances: Instances;
  readonly #workers: LaunchedWorkers;
  readonly #scaler: EndpointScaler;
  readonly #loop: PassLoop;
  #unsubscribe: Array<() => void> = [];
  /** Unsubscribes from the runtime's changes (subscribed by whichever of adopt/start comes first). */
  #runtimeOff: (() => void) | null = null;
  /** What the runtime's `attach()` found, until the first recovery has decided on it. */
  #attached: AttachedInstances | null = null;
  /** The runtime's reason while it is unavailable (logged when it starts and when it ends). */
  #unavailable: string | null = null;
  /** What this process's passes decided since it started (metrics): passes, launches, stops by reason, held back, throttled. */
  readonly decisions: ScaleDecisions = {
    passes: 0,
    starts: 0,
    stops: { idle: 0, 'over-max': 0, recycle: 0, 'start-timeout': 0 },
    heldBack: 0,
    throttled: 0,
    suspends: 0,
    resumes: 0,
  };
  readonly #suspension: WorkerSuspension;
  /** Removes suspended workers the reclaim ladder took back (worker-reclaim.ts; pods call it too). */
  readonly reclaim: WorkerReclaim;

  constructor(deps: AutoscalerDeps) {
    this.#deps = deps;
    this.#lease = deps.lease ?? heldLease('autoscaler');
    this.store = deps.store;
    this.config = { ...DEFAULT_AUTOSCALER_CONFIG, ...deps.config.autoscaler };
    this.#states = new EndpointScaleStates({ config: this.config, logger: deps.logger });
    this.#instances = new Instances(deps);
    this.#workers = new LaunchedWorkers({
      ...deps,
      instances: this.#instances,
      store: this.store,
      states: this.#states,
      onEnded: () => this.nudge(),
      onReclaimed: (id, reclaimed, right) => this.reclaim.removeFor(id, reclaimed, right),
    });
    this.reclaim = new WorkerReclaim({ ...deps, workers: this.#workers, instances: this.#instances });
    this.#suspension = new WorkerSuspension({
      ...deps,
      workers: this.#workers,
      registry: deps.workers,
      instances: this.#instances,
      suspendedPricePerGpuHour: deps.config.flashboot?.suspendedPricePerGpuHour,
    });
    const { lb, traffic } = deps;
    this.#scaler = new EndpointScaler({
      ...deps,
      lb: lb && traffic ? balancedTraffic(lb, traffic) : lb,
      store: this.store,
      states: this.#states,
      workers: this.#workers,
      instances: this.#instances,
      registry: deps.workers,
      config: this.config,
      suspension: this.#suspension,
      flashbootMaxKeepMs: deps.config.flashboot?.maxKeepMs,
      decisions: this.decisions,
    });
    this.#loop = new PassLoop({
      clock: deps.clock,
      config: this.config,
      pass: () => this.#pass(),
      onError: (err) => this.#deps.logger.error({ err: (err as Error).message }, 'autoscaler pass failed'),
    });
  }

  /**
   * Cleans up after a previous server, subscribes to instance and job events, and starts the loop
   * (unless `loop: false`: tests drive `tick()` themselves).
   */
  async start(options: { loop?: boolean } = {}): Promise<void> {
    if (!this.#loop.stopped) return;
    this.#loop.open();
    if (this.#lease.isHeld() && this.#recoveredTerm !== this.#lease.term) {
      this.#recoveredTerm = this.#lease.term;
      await this.recover();
    }
    this.#watchRuntime();
    if (this.#deps.events) {
      const active = (p: JobEventPayload): void => {
        if (p.job.workerId) this.#workers.finishedJob(p.endpointId, p.job.workerId, p.at);
      };
      for (const name of ['job:completed', 'job:failed', 'job:timed_out'] as const)
        this.#unsubscribe.push(this.#deps.events.on(name, active));
      // A queued job may need a worker now (cold start), not at the next interval.
      this.#unsubscribe.push(this.#deps.events.on('job:queued', (q) => void (q.lowPriority || this.nudge())));
    }
    this.#loop.begin({ manual: options.loop === false });
  }

  /** Stops the loop and every worker it launched (their jobs go back to the queue), and revokes the workers' keys. */
  async stop(): Promise<void> {
    for (const off of this.#unsubscribe) off();
    this.#unsubscribe = [];
    this.#runtimeOff?.();
    this.#runtimeOff = null;
    await this.#loop.stop();
    await this.#workers.stopAll('server shutdown');
  }

  #watchRuntime(): void {
    this.#runtimeOff ??= this.#deps.runtime.onChange((status) => this.#workers.onInstanceChange(status));
  }

  /** A scheduled pass: scales only while this replica holds the lease. */
  async #pass(): Promise<void> {
    if (!this.#lease.isHeld()) {
      // Another replica drives now: the workers launched here are no longer accounted for by anyone.
      if (this.#workers.size > 0 || this.#workers.holdsKeys) {
        this.#deps.logger.warn(
          { workers: this.#workers.size },
          'autoscaler lease lost; stopping the workers launched here',
        );
        await this.#workers.stopAll('autoscaler lease lost');
        this.#states.clear();
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
    this.#loop.nudge();
  }

  /**
   * Server start, before the server listens (so no new pod or worker takes what the adopted ones
   * hold): takes what the runtime's `attach()` found, and, when this replica drives the
   * autoscaler, recovers at once, adopting the workers that survived. Otherwise the first
   * recovery after the lease is won decides.
   */
  async adopt(attached: readonly AttachedInstance[]): Promise<{ adopted: string[]; cleaned: string[] }> {
    this.#attached = new AttachedInstances(attached);
    // An adopted worker that ends before the loop starts is noticed too.
    this.#watchRuntime();
    if (!this.#lease.isHeld()) return { adopted: [], cleaned: [] };
    this.#recoveredTerm = this.#lease.term;
    return this.recover();
  }

  /**
   * After a restart or a lease change: a launched worker's row whose instance the runtime found
   * still running (at server start) is adopted when its key and allocation are still good; every
   * other row not tracked here is marked dead, its instance removed and its jobs requeued; every
   * launched worker's key not held here is revoked.
   */
  async recover(): Promise<{ adopted: string[]; cleaned: string[] }> {
    const adopted: string[] = [];
    const cleaned: string[] = [];
    const attached = this.#attached;
    // Found once, at start: a later recovery (a lease won back) adopts nothing from it.
    this.#attached = null;
    for (const row of await this.store.launchedWorkers()) {
      if (this.#workers.has(row.id)) continue;
      if (attached) {
        const adoption = await this.#workers.adopt(row, attached);
        if (adoption.ok) {
          adopted.push(row.id);
          this.#deps.logger.info(
            { workerId: row.id, endpointId: row.endpointId },
            'adopted a worker left running by a previous server',
          );
          continue;
        }
        if (attached.has(row.id))
          this.#deps.logger.info(
            { workerId: row.id, endpointId: row.endpointId, reason: adoption.reason },
            'not adopting a worker left by a previous server',
          );
      }
      await this.#instances.reap(row.id);
      await this.#deps.workers.markDead(row.endpointId, [row.id], this.#deps.clock.now());
      const moved = await this.#deps.jobs.worker.workerLost(row.id, row.endpointId);
      cleaned.push(row.id);
      this.#deps.logger.info(
        { workerId: row.id, endpointId: row.endpointId, ...moved },
        'cleaned up a worker left by a previous server',
      );
    }
    // Keys of workers launched before (a crash skips their revocation): none of them runs now.
    const revoked = await this.#workers.revokeOrphanKeys();
    if (revoked > 0) this.#deps.logger.info({ revoked }, 'revoked the keys of workers left by a previous server');
    return { adopted, cleaned };
  }

  /** One pass over every endpoint at `now`. Tests call it directly on a fake clock. */
  async tick(now: number = this.#deps.clock.now()): Promise<void> {
    const unavailable = this.#runtimeUnavailable();
    if (this.#deps.traffic)
      await this.#deps.traffic.refresh(now).catch((err: unknown) => {
        this.#deps.logger.warn(
          { err: (err as Error).message },
          "reading the other replicas' load-balancing demand failed; this pass counts this replica's only",
        );
      });
    const rows = await this.store.launchedWorkers();
    const byEndpoint = new Map<string, typeof rows>();
    for (const r of rows) byEndpoint.set(r.endpointId, [...(byEndpoint.get(r.endpointId) ?? []), r]);
    const ids = await this.store.endpointIds();
    const known = new Set(ids.map((e) => e.id));
    for (const { id, accountId, workersMax } of ids) {
      const workerRows = byEndpoint.get(id) ?? [];
      if (workersMax <= 0 && workerRows.length === 0 && !this.#states.has(id)) continue;
      try {
        await this.#scaler.scale(accountId, id, workerRows, now, unavailable);
      } catch (err) {
        this.#deps.logger.error({ endpointId: id, err: (err as Error).message }, 'autoscaler pass failed for endpoint');
      }
    }
    // Workers of endpoints that no longer exist (once the runtime can remove them).
    if (unavailable !== null) return;
    for (const [endpointId, workerRows] of byEndpoint) {
      if (known.has(endpointId)) continue;
      for (const r of workerRows) await this.#workers.stop(r.id, 'endpoint deleted', r.endpointId);
      this.#states.delete(endpointId);
    }
  }

  /** Launched workers by state over every endpoint, as of each one's last pass (metrics). */
  workerTotals(): ReturnType<EndpointScaleStates['totals']> {
    return this.#states.totals(this.#deps.clock.now());
  }

  /** Worker counts by state of an endpoint, as of the last pass. */
  health(endpointId: string): EndpointScaleHealth {
    return this.#states.health(endpointId, this.#deps.clock.now());
  }

  /** FlashBoot (worker-suspension.ts): suspend one launched worker (no job frozen inside), resume it. */
  suspendWorker(workerId: string): Promise<SuspensionOutcome> {
    return this.#suspension.suspend(workerId, 'asked');
  }

  resumeWorker(workerId: string): Promise<SuspensionOutcome> {
    return this.#suspension.resume(workerId, 'asked');
  }

  /** Whether this autoscaler launched (or adopted) the worker and runs it now. */
  launched(workerId: string): boolean {
    return this.#workers.has(workerId);
  }

  /** Ids of the workers this autoscaler runs for the endpoint. */
  workerIds(endpointId: string): string[] {
    return this.#workers.idsOf(endpointId);
  }

  /** The runtime's reason while it cannot start instances, logged once when it goes and once when it is back. */
  #runtimeUnavailable(): string | null {
    const reason = this.#instances.away();
    if (reason !== null && this.#unavailable === null)
      this.#deps.logger.warn(
        { reason },
        'the runtime is unavailable: no worker is launched or stopped until it is back',
      );
    if (reason === null && this.#unavailable !== null)
      this.#deps.logger.info('the runtime is available again; scaling resumes');
    this.#unavailable = reason;
    return reason;
  }
}
