import type { Logger } from 'pino';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { Catalog } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import { newId } from '../domain/ids.js';
import { isLiveInstance, type AttachedInstances } from '../instances/attached-instances.js';
import type { Instances } from '../instances/instances.js';
import type { WorkerJobs } from '../jobs/worker-jobs.js';
import type { InstanceStatus, Runtime } from '../runtime/runtime.js';
import type { AutoscalerStore, LaunchedWorkerRow } from '../store/autoscaler-store.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { Placement, PlacementRequest, ReclaimedHold, ReclaimRight } from '../domain/placement-request.js';
import type { Template } from '../domain/template.js';
import type { EndpointScaleStates } from './endpoint-scale-states.js';
import type { EndpointsService } from './endpoints-service.js';
import { WorkerKeys } from './worker-keys.js';
import type { LbPool } from './lb-pool.js';
import { lbWorkerPorts } from './lb-worker-ports.js';
import { launchedWorkerRecord, workerInstanceSpec, workerPlacementRequests } from './worker-spec.js';
import type { WorkersRegistry } from './workers-registry.js';
import { suspendedHold } from '../domain/reclaim-ladder.js';

/** Network volumes: their data center (a placement constraint). */
export interface WorkerVolumes {
  get(accountId: string, id: string): Promise<{ dataCenterId: string }>;
}

export interface LaunchedWorkersDeps {
  store: Pick<AutoscalerStore, 'insertLaunched'>;
  /** Crash records: early ends and failed launches count as crashes of the endpoint. */
  states: Pick<EndpointScaleStates, 'crashed' | 'healthy'>;
  clock: Clock;
  /** The launch path workers share with pods: placement, start, reaping. */
  instances: Instances;
  /** What an adopted worker's instance is doing now. */
  runtime: Pick<Runtime, 'inspect' | 'resume'>;
  jobs: { worker: Pick<WorkerJobs, 'workerLost'> };
  workers: Pick<WorkersRegistry, 'markDead'>;
  endpoints: Pick<EndpointsService, 'templateOf'>;
  accounts: Pick<AccountsService, 'createKey' | 'revokeKey' | 'revokeWorkerKeysExcept' | 'liveWorkerKeyId'>;
  volumes?: WorkerVolumes | undefined;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  config: {
    catalog: Pick<Catalog, 'gpuTypes' | 'cpuFlavors' | 'dataCenters'>;
    /** Base URL workers reach this server at. */
    publicUrl: string;
    /** @default 10000 */
    pingIntervalMs?: number;
  };
  /** A worker that ended on its own has been cleaned up (the autoscaler wants a pass). */
  onEnded: () => void;
  /** Load-balancing endpoints' workers: told of each one launched and stopped. */
  lb?: Pick<LbPool, 'add' | 'remove' | 'has' | 'announce'> | undefined;
  /** A launch took other endpoints' suspended workers back (worker-reclaim.ts removes them first). @default none */
  onReclaimed?: ((workerId: string, reclaimed: ReclaimedHold[], right: ReclaimRight) => void) | undefined;
}

/** One worker launched here, as the autoscaler tracks it between passes. */
export interface LaunchedWorker {
  endpointId: string;
  /** its endpoint's account ('' for a row whose endpoint is gone) */
  accountId: string;
  /** the host it was placed on */
  hostId: string;
  startedAt: number;
  lastActiveAt: number;
  /** Set once the registry heard from it (it left INITIALIZING). */
  ready: boolean;
  /** Set once it took a job or outlived the crash window. */
  proven: boolean;
  recycle: boolean;
  stopping: boolean;
  /** FlashBoot (worker-suspension.ts): being suspended, suspended, or being resumed; null while it runs. */
  suspension: 'suspending' | 'suspended' | 'resuming' | null;
  /** When it was suspended; null while it is not. */
  suspendedAt: number | null;
}

/**
 * How a launch went: not placed (why: the autoscaler counts the worker as throttled), or launched;
 * `crash` is why a launch that failed counts as a crash of its endpoint (null when it did not
 * fail, or failed because its runtime or host was away: the worker is not to blame).
 */
export type LaunchOutcome = { ok: true; crash: string | null } | { ok: false; reason: string };

/** Longest crash reason kept (it may carry the tail of the worker's output). */
const MAX_REASON = 400;

/**
 * The workers this replica launched, in memory: launching one (placed through the inventory and
 * started through the runtime like a pod, with a key of its own), adopting one a previous server
 * launched whose instance runs on, stopping one (its instance removed: a worker keeps nothing; its
 * jobs go back to the queue), and noticing one that ended on its own (an early end is a crash of
 * its endpoint).
 */
export class LaunchedWorkers {
  readonly #deps: LaunchedWorkersDeps;
  readonly #workers = new Map<string, LaunchedWorker>();
  /** Placeholder images already warned about (once each). */
  readonly #placeholderImages = new Set<string>();
  readonly #keys: WorkerKeys;
  /** Stops under way: a second stop (a reclaim, the keep time) waits for the first; answers its removal's failure. */
  readonly #stops = new Map<string, Promise<string | null>>();

  constructor(deps: LaunchedWorkersDeps) {
    this.#deps = deps;
    this.#keys = new WorkerKeys(deps.accounts);
  }

  /** How many workers are tracked (stopping ones included). */
  get size(): number {
    return this.#workers.size;
  }

  /** Whether any worker's key is held (it is revoked by `stopAll`). */
  get holdsKeys(): boolean {
    return this.#keys.size > 0;
  }

  has(workerId: string): boolean {
    return this.#workers.has(workerId);
  }

  get(workerId: string): LaunchedWorker | undefined {
    return this.#workers.get(workerId);
  }

  /** Ids of the endpoint's workers, not counting those being stopped. */
  idsOf(endpointId: string): string[] {
    return [...this.#workers].filter(([, m]) => m.endpointId === endpointId && !m.stopping).map(([id]) => id);
  }

  /**
   * A job the worker held finished at `at`: idle time counts from then, and the worker proved
   * itself. Only a job of its own endpoint counts (another endpoint's worker may use the same id).
   */
  finishedJob(endpointId: string, workerId: string, at: number): void {
    const m = this.#workers.get(workerId);
    if (!m || m.endpointId !== endpointId) return;
    m.lastActiveAt = Math.max(m.lastActiveAt, at);
    this.prove(m);
  }

  /** The worker took a job or outlived the crash window: its endpoint's crash count starts over. */
  prove(m: LaunchedWorker): void {
    if (m.proven) return;
    m.proven = true;
    this.#deps.states.healthy(m.endpointId);
  }

  /**
   * One worker, in a straight line: what it runs (its endpoint's template and volume), where
   * (placed and reserved through the shared launch path), recorded (its row, then its key), and
   * started. Answers why not when nothing has room for it.
   */
  async launch(endpoint: Endpoint, now: number): Promise<LaunchOutcome> {
    const { instances, config } = this.#deps;
    const template = await this.#deps.endpoints.templateOf(endpoint);
    if (!template) return { ok: false, reason: `template ${endpoint.templateId} of the endpoint no longer exists` };
    const volume =
      endpoint.networkVolumeId && this.#deps.volumes
        ? await this.#deps.volumes.get(endpoint.accountId, endpoint.networkVolumeId)
        : null;
    const workerId = newId();
    const placed = this.#place(workerId, endpoint, template, volume?.dataCenterId ?? null);
    if (!placed.ok) return placed;
    const { placement, request } = placed;
    this.#workers.set(workerId, tracked(endpoint.id, endpoint.accountId, placement.hostId, now, now));
    try {
      const row = launchedWorkerRecord({ endpoint, template, request, placement, catalog: config.catalog });
      await this.#deps.store.insertLaunched(
        workerId,
        endpoint.id,
        placement.hostId,
        row.allocation,
        now,
        row.usage,
        undefined,
        endpoint.version,
      );
      const apiKey = await this.#keys.mint(endpoint, workerId);
      const registryAuth = await instances.registryAuth(endpoint.accountId, template.containerRegistryAuthId);
      const spec = workerInstanceSpec({
        registryAuth,
        workerId,
        endpoint,
        template,
        placement,
        request,
        apiKey,
        publicUrl: config.publicUrl,
        pingIntervalMs: config.pingIntervalMs ?? 10_000,
      });
      this.#deps.logger.info(
        { endpointId: endpoint.id, workerId, hostId: placement.hostId, image: template.imageName },
        'launching worker',
      );
      const { placeholder } = await instances.launch(spec, placement.dataCenterId);
      await instances.log(workerId, 'started');
      if (endpoint.type === 'LB') {
        this.#deps.lb?.add({
          workerId,
          endpointId: endpoint.id,
          accountId: endpoint.accountId,
          ...lbWorkerPorts(endpoint, template),
        });
        this.#deps.lb?.announce(workerId);
      }
      if (placeholder) this.#warnPlaceholder(endpoint.id, template.imageName);
      return { ok: true, crash: null };
    } catch (err) {
      // Could not launch at all: the same as a worker dying at once, unless the runtime (or, in a
      // fleet, the worker's host) went away: the worker is not to blame; the autoscaler waits.
      const reason = `could not launch: ${(err as Error).message}`;
      this.#deps.logger.warn({ endpointId: endpoint.id, workerId, reason }, 'worker launch failed');
      await instances.log(workerId, `ERROR: ${reason}`);
      await this.stop(workerId, 'launch failed');
      return { ok: true, crash: instances.away(placement.hostId) === null ? reason : null };
    }
  }

  /**
   * The first of the worker's placements (its CPU instances in order; its GPU pools) that has
   * room; else the first that has once other endpoints' suspended workers are taken back (the
   * reclaim ladder's first rung, docs/pods.md); else why the first had none.
   */
  #place(
    workerId: string,
    endpoint: Endpoint,
    template: Template,
    volumeDataCenterId: string | null,
  ): { ok: true; placement: Placement; request: PlacementRequest } | { ok: false; reason: string } {
    const requests = workerPlacementRequests(endpoint, template, volumeDataCenterId, this.#deps.config.catalog);
    let refusal: string | null = null;
    for (const request of requests) {
      const placed = this.#deps.instances.place(workerId, request);
      if (placed.ok) return { ok: true, placement: placed.placement, request };
      refusal ??= placed.reason;
    }
    const right: ReclaimRight = { kind: 'worker', endpointId: endpoint.id, accountId: endpoint.accountId };
    for (const request of this.#deps.onReclaimed ? requests : []) {
      const placed = this.#deps.instances.place(workerId, { ...request, reclaim: right });
      if (!placed.ok) continue;
      if (placed.reclaimed?.length) this.#deps.onReclaimed!(workerId, placed.reclaimed, right);
      return { ok: true, placement: placed.placement, request };
    }
    return { ok: false, reason: refusal ?? 'the endpoint names no GPU pool or CPU instance to run on' };
  }

  /** Nothing runs in a placeholder: its jobs would wait, silently, until their ttl (warned once per image). */
  #warnPlaceholder(endpointId: string, image: string): void {
    if (this.#placeholderImages.has(image)) return;
    this.#placeholderImages.add(image);
    this.#deps.logger.warn(
      { endpointId, image },
      `image "${image}" is not in the config's images map: its workers run as idle placeholders and take no jobs; map it to a command (README, "Serverless endpoints in your dev loop")`,
    );
  }

  /**
   * Takes over a worker a previous server launched whose instance still runs (`attached`: what the
   * runtime's `attach()` found under its id): its allocation is reserved again and its key kept,
   * so it goes on taking jobs. Answers why not when it cannot be (the caller then removes it).
   */
  async adopt(
    row: LaunchedWorkerRow,
    attached: AttachedInstances,
  ): Promise<{ ok: true } | { ok: false; reason: string }> {
    const claim = attached.claim(row.id, { kind: 'worker', endpointId: row.endpointId });
    if (!claim.ok) return claim;
    if (!row.allocation) return { ok: false, reason: 'its row does not say what it holds on its host' };
    // What attach() found may have ended since (a recovery that comes once the lease is won).
    const live = await this.#deps.runtime.inspect(row.id);
    if (!live || !isLiveInstance(live)) return { ok: false, reason: 'its instance no longer runs' };
    // Frozen while its row says it runs (a server killed between the pause and the row's write, or
    // a pause outside Gantry): thawed, so it takes jobs again (FlashBoot suspends it anew when idle).
    if (live.state === 'suspended' && row.status !== 'suspended') {
      const thawed = await this.#deps.runtime.resume?.(row.id).then(
        () => null,
        (err: unknown) => (err as Error).message,
      );
      if (thawed !== null)
        return { ok: false, reason: `it is frozen and could not be resumed: ${thawed ?? 'the runtime cannot resume'}` };
    }
    const keyId = await this.#deps.accounts.liveWorkerKeyId(row.endpointId, row.id);
    if (keyId === null) return { ok: false, reason: 'its key was revoked' };
    const suspendedAt = row.status === 'suspended' ? (row.suspendedAt ?? this.#deps.clock.now()) : null;
    const reserved = this.#deps.instances.reserve(row.id, {
      hostId: row.hostId,
      ...row.allocation,
      publicPorts: row.allocation.publicPorts ?? [],
      // left suspended: its GPUs stay reclaimable (worker-suspension.ts)
      ...(suspendedAt !== null ? { reclaimable: suspendedHold(row.endpointId, row.accountId, suspendedAt) } : {}),
    });
    if (!reserved.ok) return { ok: false, reason: `its allocation could not be reserved again: ${reserved.reason}` };
    this.#keys.adopt(row.id, keyId);
    // startedAt is its launch: the crash window and the start timeout count from there.
    const m = tracked(row.endpointId, row.accountId, row.hostId, row.createdAt, this.#deps.clock.now());
    // Left suspended by the previous server: it stays so, its keep time counting from then.
    if (suspendedAt !== null) Object.assign(m, { suspension: 'suspended', suspendedAt });
    this.#workers.set(row.id, m);
    return { ok: true };
  }

  /**
   * Stops a worker: instance (removed: a worker keeps nothing), reservation, key, row; its jobs (if
   * any) go back to the queue. `endpointId` names the endpoint of a worker not tracked here (a row
   * left by another replica). Answers why its instance could not be removed, or null.
   */
  stop(workerId: string, reason: string, endpointId?: string): Promise<string | null> {
    const under = this.#stops.get(workerId);
    if (under) return under;
    const m = this.#workers.get(workerId);
    if (m?.stopping) return Promise.resolve(null);
    const stopping = this.#stop(workerId, reason, endpointId).finally(() => this.#stops.delete(workerId));
    this.#stops.set(workerId, stopping);
    return stopping;
  }

  async #stop(workerId: string, reason: string, endpointId?: string): Promise<string | null> {
    const m = this.#workers.get(workerId);
    if (m) m.stopping = true;
    const balanced = this.#deps.lb?.has(workerId) === true;
    this.#deps.lb?.remove(workerId);
    const endpoint = m?.endpointId ?? endpointId ?? null;
    this.#deps.logger.info({ workerId, endpointId: endpoint, reason }, 'stopping worker');
    await this.#deps.instances.log(workerId, `stopped: ${reason}`);
    try {
      const failed = await this.#deps.instances.reap(workerId);
      if (failed !== null) this.#deps.logger.warn({ workerId, err: failed }, 'removing the worker instance failed');
      await this.#keys.revoke(workerId);
      if (endpoint !== null) await this.#deps.workers.markDead(endpoint, [workerId], this.#deps.clock.now());
      if (balanced) this.#deps.lb?.announce(workerId);
      await this.#deps.jobs.worker.workerLost(workerId, endpoint);
      return failed;
    } finally {
      this.#workers.delete(workerId);
    }
  }

  /** Revokes the keys of launched workers this replica does not run (see `WorkerKeys.revokeOrphans`). */
  revokeOrphanKeys(): Promise<number> {
    return this.#keys.revokeOrphans();
  }

  /** Stops every worker launched here and revokes their keys. */
  async stopAll(reason: string): Promise<void> {
    await Promise.allSettled([...this.#workers.keys()].map((id) => this.stop(id, reason)));
    await this.#keys.revokeAll();
  }

  /**
   * The runtime says an instance changed: a worker of ours that ended without being asked to is
   * lost. It counts as a crash of its endpoint unless it was proven, or its host is away (a fleet
   * host revoked: its instances end, and not by their own doing).
   */
  onInstanceChange(status: InstanceStatus): void {
    if (status.state !== 'exited' && status.state !== 'failed') return;
    const m = this.#workers.get(status.id);
    if (!m || m.stopping) return;
    const now = this.#deps.clock.now();
    const reason = (status.reason ?? `exited with code ${status.exitCode}`).slice(0, MAX_REASON);
    this.#deps.logger.warn(
      { workerId: status.id, endpointId: m.endpointId, exitCode: status.exitCode },
      'worker ended on its own',
    );
    void this.#deps.instances.log(status.id, `${status.state === 'failed' ? 'ERROR' : 'exited'}: ${reason}`);
    if (!m.proven && this.#deps.instances.away(m.hostId) === null)
      this.#deps.states.crashed(m.endpointId, m.startedAt, now, reason);
    void this.stop(status.id, 'instance ended')
      .catch((err: unknown) =>
        this.#deps.logger.error(
          { workerId: status.id, err: (err as Error).message },
          'cleaning up an ended worker failed',
        ),
      )
      .finally(() => this.#deps.onEnded());
  }
}

/** A worker as tracked from its launch (or adoption): not yet heard from, nor proven. */
const tracked = (
  endpointId: string,
  accountId: string,
  hostId: string,
  startedAt: number,
  lastActiveAt: number,
): LaunchedWorker => ({
  endpointId,
  accountId,
  hostId,
  startedAt,
  lastActiveAt,
  ready: false,
  proven: false,
  recycle: false,
  stopping: false,
  suspension: null,
  suspendedAt: null,
});
