import type { Logger } from 'pino';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { Catalog } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import { costPerHour, type PricedCompute } from '../domain/cost.js';
import { newId } from '../domain/ids.js';
import type { Inventory } from '../inventory/inventory.js';
import type { SystemLogWriter } from '../logs/system-log.js';
import type { WorkerJobs } from '../jobs/worker-jobs.js';
import type { AttachedInstance, InstanceStatus, Runtime } from '../runtime/runtime.js';
import type { AutoscalerStore, LaunchedWorkerRow } from '../store/autoscaler-store.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { EndpointScaleStates } from './endpoint-scale-states.js';
import type { EndpointsService } from './endpoints-service.js';
import { WorkerKeys } from './worker-keys.js';
import type { RegistriesService } from '../registries/registries-service.js';
import { workerInstanceSpec, workerPlacementRequest } from './worker-spec.js';
import type { WorkersRegistry } from './workers-registry.js';

/** Network volumes: their data center (a placement constraint). */
export interface WorkerVolumes {
  get(accountId: string, id: string): Promise<{ dataCenterId: string }>;
}

export interface LaunchedWorkersDeps {
  store: Pick<AutoscalerStore, 'insertLaunched'>;
  /** Crash records: early ends and failed launches count as crashes of the endpoint. */
  states: Pick<EndpointScaleStates, 'crashed' | 'healthy'>;
  clock: Clock;
  runtime: Pick<Runtime, 'start' | 'remove' | 'inspect' | 'runsAsPlaceholder' | 'unavailable'>;
  inventory: Pick<Inventory, 'placeAndReserve' | 'reserveExact' | 'release'>;
  jobs: { worker: Pick<WorkerJobs, 'workerLost'> };
  workers: Pick<WorkersRegistry, 'markDead'>;
  endpoints: Pick<EndpointsService, 'templateOf'>;
  accounts: Pick<AccountsService, 'createKey' | 'revokeKey' | 'revokeWorkerKeysExcept' | 'liveWorkerKeyId'>;
  volumes?: WorkerVolumes;
  /** Credentials of the template's container registry, handed to the runtime to pull the image. */
  registries?: Pick<RegistriesService, 'credentials'>;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  config: {
    catalog: Pick<Catalog, 'gpuTypes' | 'cpuFlavors' | 'dataCenters'>;
    /** Base URL workers reach this server at. */
    publicUrl: string;
    /** @default 10000 */
    pingIntervalMs?: number;
  };
  /** The workers' `system` log lines (docs/logs.md). @default none written */
  systemLog?: SystemLogWriter;
  /** A worker that ended on its own has been cleaned up (the autoscaler wants a pass). */
  onEnded: () => void;
}

/** One worker launched here, as the autoscaler tracks it between passes. */
export interface LaunchedWorker {
  endpointId: string;
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
}

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

  /** Places, records and starts one worker. Answers false (with why) when nothing has room for it. */
  async launch(endpoint: Endpoint, now: number): Promise<{ ok: true } | { ok: false; reason: string }> {
    const template = await this.#deps.endpoints.templateOf(endpoint);
    if (!template) return { ok: false, reason: `template ${endpoint.templateId} of the endpoint no longer exists` };
    const volume =
      endpoint.networkVolumeId && this.#deps.volumes
        ? await this.#deps.volumes.get(endpoint.accountId, endpoint.networkVolumeId)
        : null;
    const request = workerPlacementRequest(endpoint, template, volume?.dataCenterId ?? null, this.#deps.config.catalog);
    const workerId = newId();
    const placed = this.#deps.inventory.placeAndReserve(workerId, request);
    if (!placed.ok) return { ok: false, reason: placed.reason };
    const { placement } = placed;
    this.#workers.set(workerId, {
      endpointId: endpoint.id,
      hostId: placement.hostId,
      startedAt: now,
      lastActiveAt: now,
      ready: false,
      proven: false,
      recycle: false,
      stopping: false,
    });
    try {
      const allocation = {
        gpuIndices: placement.gpuIndices,
        vcpus: placement.vcpus,
        memoryGb: placement.memoryGb,
        diskGb: request.diskGb,
        gpuTypeId: placement.gpuTypeId,
        dataCenterId: placement.dataCenterId,
        image: template.imageName,
      };
      const compute: PricedCompute =
        request.kind === 'gpu' && placement.gpuTypeId !== null
          ? { kind: 'gpu', gpuTypeId: placement.gpuTypeId, gpuCount: request.gpuCount, cloud: placement.cloud }
          : {
              kind: 'cpu',
              cpuFlavorId: request.cpuFlavorId ?? '',
              vcpuCount: request.vcpuCount,
              cloud: placement.cloud,
            };
      await this.#deps.store.insertLaunched(
        workerId,
        endpoint.id,
        placement.hostId,
        allocation,
        now,
        {
          accountId: endpoint.accountId,
          kind: compute.kind,
          costPerHr: costPerHour(compute, this.#deps.config.catalog),
        },
        undefined,
        endpoint.version,
      );
      const apiKey = await this.#keys.mint(endpoint, workerId);
      const registryAuth =
        template.containerRegistryAuthId && this.#deps.registries
          ? await this.#deps.registries.credentials(endpoint.accountId, template.containerRegistryAuthId)
          : null;
      const spec = workerInstanceSpec({
        registryAuth,
        workerId,
        endpoint,
        template,
        placement,
        request,
        apiKey,
        publicUrl: this.#deps.config.publicUrl,
        pingIntervalMs: this.#deps.config.pingIntervalMs ?? 10_000,
      });
      this.#deps.logger.info(
        { endpointId: endpoint.id, workerId, hostId: placement.hostId, image: template.imageName },
        'launching worker',
      );
      await this.#log(
        workerId,
        `placed on host ${placement.hostId} (${placement.dataCenterId}); pulling (if needed) and starting image ${template.imageName}`,
      );
      await this.#deps.runtime.start(spec);
      await this.#log(workerId, 'started');
      const image = template.imageName;
      if (this.#deps.runtime.runsAsPlaceholder?.(image) && !this.#placeholderImages.has(image)) {
        // nothing runs in a placeholder: its jobs would wait, silently, until their ttl
        this.#placeholderImages.add(image);
        this.#deps.logger.warn(
          { endpointId: endpoint.id, image },
          `image "${image}" is not in the config's images map: its workers run as idle placeholders and take no jobs; map it to a command (README, "Serverless endpoints in your dev loop")`,
        );
      }
      return { ok: true };
    } catch (err) {
      // Could not launch at all: the same as a worker dying at once, unless the runtime (or, in a
      // fleet, the worker's host) went away: the worker is not to blame; the autoscaler waits.
      const reason = `could not launch: ${(err as Error).message}`;
      this.#deps.logger.warn({ endpointId: endpoint.id, workerId, reason }, 'worker launch failed');
      await this.#log(workerId, `ERROR: ${reason}`);
      await this.stop(workerId, 'launch failed');
      if ((this.#deps.runtime.unavailable?.(placement.hostId) ?? null) === null)
        this.#deps.states.crashed(endpoint.id, now, this.#deps.clock.now(), reason);
      return { ok: true };
    }
  }

  /**
   * Takes over a worker a previous server launched whose instance still runs (`attached`: what the
   * runtime's `attach()` found under its id): its allocation is reserved again and its key kept,
   * so it goes on taking jobs. Answers why not when it cannot be (the caller then removes it).
   */
  async adopt(
    row: LaunchedWorkerRow,
    attached: AttachedInstance | undefined,
  ): Promise<{ ok: true } | { ok: false; reason: string }> {
    if (!attached) return { ok: false, reason: 'the runtime found no instance of it' };
    if (
      attached.owner &&
      (attached.owner.kind !== 'worker' ||
        (attached.owner.endpointId !== undefined && attached.owner.endpointId !== row.endpointId))
    )
      return { ok: false, reason: 'its instance belongs to something else' };
    if (!row.allocation) return { ok: false, reason: 'its row does not say what it holds on its host' };
    const live = await this.#deps.runtime.inspect(row.id);
    if (!live || (live.state !== 'starting' && live.state !== 'running' && live.state !== 'unknown'))
      return { ok: false, reason: 'its instance no longer runs' };
    const keyId = await this.#deps.accounts.liveWorkerKeyId(row.endpointId, row.id);
    if (keyId === null) return { ok: false, reason: 'its key was revoked' };
    const reserved = this.#deps.inventory.reserveExact(row.id, {
      hostId: row.hostId,
      ...row.allocation,
      publicPorts: [],
    });
    if (!reserved.ok) return { ok: false, reason: `its allocation could not be reserved again: ${reserved.reason}` };
    const now = this.#deps.clock.now();
    this.#keys.adopt(row.id, keyId);
    // startedAt is its launch: the crash window and the start timeout count from there.
    this.#workers.set(row.id, {
      endpointId: row.endpointId,
      hostId: row.hostId,
      startedAt: row.createdAt,
      lastActiveAt: now,
      ready: false,
      proven: false,
      recycle: false,
      stopping: false,
    });
    return { ok: true };
  }

  /**
   * Stops a worker: instance (removed: a worker keeps nothing), reservation, key, row; its jobs (if
   * any) go back to the queue. `endpointId` names the endpoint of a worker not tracked here (a row
   * left by another replica).
   */
  async stop(workerId: string, reason: string, endpointId?: string): Promise<void> {
    const m = this.#workers.get(workerId);
    if (m?.stopping) return;
    if (m) m.stopping = true;
    const endpoint = m?.endpointId ?? endpointId ?? null;
    this.#deps.logger.info({ workerId, endpointId: endpoint, reason }, 'stopping worker');
    await this.#log(workerId, `stopped: ${reason}`);
    try {
      await this.#deps.runtime
        .remove(workerId)
        .catch((err: unknown) =>
          this.#deps.logger.warn({ workerId, err: (err as Error).message }, 'removing the worker instance failed'),
        );
      this.#deps.inventory.release(workerId);
      await this.#keys.revoke(workerId);
      if (endpoint !== null) await this.#deps.workers.markDead(endpoint, [workerId], this.#deps.clock.now());
      await this.#deps.jobs.worker.workerLost(workerId, endpoint);
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

  #log(workerId: string, line: string): Promise<void> {
    return this.#deps.systemLog?.write(workerId, line) ?? Promise.resolve();
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
    void this.#log(status.id, `${status.state === 'failed' ? 'ERROR' : 'exited'}: ${reason}`);
    if (!m.proven && (this.#deps.runtime.unavailable?.(m.hostId) ?? null) === null)
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
