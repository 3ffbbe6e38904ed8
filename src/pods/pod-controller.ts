/**
 * Drives every pod's instance toward its desired status, and performs the lifecycle actions.
 *
 * - Level-triggered: whatever woke it (create, an action, a runtime change, the periodic sweep),
 *   `reconcile(podId)` reads the stored pod and the runtime's view of its instance and makes one
 *   step. Work on one pod is serialized; different pods proceed concurrently.
 * - A pod holds its inventory reservation (reservation holder id = pod id) only while it is
 *   meant to run. A stopped, exited or failed pod keeps its machine assignment (host, GPU indices,
 *   public ports, CUDA version) in the store but releases the reservation; `start` re-reserves
 *   exactly that allocation or refuses with HOST_FULL.
 * - A new pod's status is written once after its instance launched: RUNNING directly when the
 *   runtime reports it running at once (placeholders, processes without a health probe), else
 *   STARTING; the `pod:status` events still go PROVISIONING → STARTING → RUNNING.
 * - An instance that exits on its own is not restarted: the pod becomes EXITED (ERROR when it
 *   failed) with the runtime's reason, and its desired status becomes EXITED.
 * - The periodic sweep (drift between stored pods and the runtime) runs only on the replica holding
 *   the `pods` lease.
 * - Server restart: `start()` re-reserves the allocation of every pod meant to run and starts its
 *   instance again; pods the user stopped stay stopped.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { ApiError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { decideAction, nextPodState, type PodAction, type PodEvent, type PodStatus } from '../domain/pod-state.js';
import type { EventBus } from '../events.js';
import type { Allocation, Inventory } from '../inventory/inventory.js';
import type { RegistriesService } from '../registries/registries-service.js';
import type { InstanceSpec, InstanceStatus, Runtime, VolumeBinding } from '../runtime/runtime.js';
import type { Db } from '../store/database.js';
import { heldLease, type Lease } from '../store/leases.js';
import { PodStore, type PodChanges, type PodRecord, type PortMapping } from '../store/pod-store.js';
import type { VolumesService } from '../volumes/volumes-service.js';
import { GlobalAddressPool } from './global-network.js';

export interface PodControllerDeps {
  db: Db;
  runtime: Runtime;
  inventory: Inventory;
  volumes: Pick<VolumesService, 'hostPath'>;
  registries: Pick<RegistriesService, 'credentials'>;
  clock: Clock;
  events: EventBus;
  logger: Logger;
  /** Which replica sweeps. @default always held */
  lease?: Lease;
  config: {
    dataDir: string;
    pods: { reconcileIntervalMs: number };
    networking: { globalPool: string };
  };
}

/** The exact resources a pod holds on its host; the same shape placement reserved at create. */
export function allocationOf(pod: Pick<PodRecord, 'hostId' | 'gpuIndices' | 'vcpuCount' | 'memoryGb' | 'disk' | 'mounts' | 'portMappings'>): Allocation {
  return {
    hostId: pod.hostId ?? '',
    gpuIndices: pod.gpuIndices,
    vcpus: pod.vcpuCount,
    memoryGb: pod.memoryGb,
    diskGb: diskOf(pod),
    publicPorts: pod.portMappings.map((m) => m.public),
  };
}

/** Container disk plus the persistent mount: what the host's disk gives the pod. */
export const diskOf = (pod: Pick<PodRecord, 'disk' | 'mounts'>): number => pod.disk + (pod.mounts.persistent?.size ?? 0);

/** Private port and protocol of each `<port>/<protocol>`. */
export const parsePorts = (ports: string[]): Array<{ private: number; type: string }> =>
  ports.map((p) => {
    const [port, type] = p.split('/');
    return { private: Number(port), type: type ?? 'tcp' };
  });

export class PodController {
  readonly store: PodStore;
  /** Global networking addresses; the pods service allocates from it at create. */
  readonly addresses: GlobalAddressPool;
  readonly #deps: PodControllerDeps;
  readonly #lease: Lease;
  readonly #queues = new Map<string, Promise<unknown>>();
  #timer: NodeJS.Timeout | null = null;
  #sweeping = false;
  #stopped = false;
  readonly #unsubscribe: () => void;
  /** Pods with an instance started by this process: runtime events about other ids (serverless workers) are ignored. */
  readonly #known = new Set<string>();
  // The instance state last applied to each pod: a runtime event reporting that same state
  // (typically the launch this controller is applying itself) needs no second reconcile.
  readonly #applied = new Map<string, InstanceStatus['state']>();

  constructor(deps: PodControllerDeps) {
    this.#deps = deps;
    this.#lease = deps.lease ?? heldLease('pods');
    this.store = new PodStore(deps.db);
    this.addresses = new GlobalAddressPool(deps.config.networking.globalPool, () => this.store.listGlobalIps());
    // Runtime changes only wake the pod up; reconcile re-reads the instance, so a late event
    // about an instance that was since replaced does no harm.
    this.#unsubscribe = deps.runtime.onChange((status) => {
      if (this.#known.has(status.id)) this.#wake(status.id, status.state);
    });
  }

  /** Server start: re-reserves and restarts the pods meant to run, then reconciles periodically. */
  async start(): Promise<void> {
    this.#stopped = false;
    const now = this.#deps.clock.now();
    for (const pod of await this.store.listActive()) {
      await this.#serialize(pod.id, async () => {
        if (pod.desiredStatus !== 'RUNNING') {
          if (isLive(pod.status)) await this.#settle(pod, 'EXITED', pod.statusReason ?? 'stopped by user');
          return;
        }
        if (pod.status === 'EXITED' || pod.status === 'ERROR') {
          await this.#update(pod, { desiredStatus: 'EXITED' });
          return;
        }
        const reserved = pod.hostId ? this.#deps.inventory.reserveExact(pod.id, allocationOf(pod)) : { ok: false as const, reason: 'it has no machine assignment' };
        if (!reserved.ok) {
          await this.#settle(pod, 'ERROR', `Its machine could not be reserved again after a server restart: ${reserved.reason}`);
          return;
        }
        // The instance did not survive the restart; its usage interval ended with it.
        await this.store.closeUsage(pod.id, now);
        if (pod.status === 'RUNNING') await this.#transition(pod, 'STARTING', { statusReason: null });
      });
      this.kick(pod.id);
    }
    this.#timer = setInterval(() => void this.#sweep(), Math.max(50, this.#deps.config.pods.reconcileIntervalMs));
    this.#timer.unref();
  }

  /** Stops the loops and waits for in-flight steps. The runtime's close() stops the instances. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#unsubscribe();
    while (this.#queues.size > 0) await Promise.allSettled([...this.#queues.values()]);
  }

  /**
   * Schedules a reconcile of the pod soon (not awaited by the caller). `fresh` is the record the
   * caller has just written, when it is certainly current (create), to save a read.
   */
  kick(podId: string, fresh?: PodRecord): void {
    if (this.#stopped) return;
    void this.#serialize(podId, () => this.#reconcile(podId, fresh)).catch((err: unknown) =>
      this.#deps.logger.error({ err, podId }, 'pod reconcile failed'),
    );
  }

  /** A runtime event: reconcile unless, by the time the pod's turn comes, that state was applied. */
  #wake(podId: string, state: InstanceStatus['state']): void {
    if (this.#stopped) return;
    void this.#serialize(podId, () => (this.#applied.get(podId) === state ? Promise.resolve() : this.#reconcile(podId))).catch((err: unknown) =>
      this.#deps.logger.error({ err, podId }, 'pod reconcile failed'),
    );
  }

  /** Waits until every queued step of the pod has run (tests, shutdown). */
  async idle(podId: string): Promise<void> {
    while (this.#queues.has(podId)) await this.#queues.get(podId)!.catch(() => undefined);
  }

  /**
   * Performs a user action on the pod (already known to belong to the caller), under the pod's
   * lock, and answers the pod as it stands afterwards. Refusals are ApiErrors (409 / 400 HOST_FULL).
   */
  async act(podId: string, action: PodAction): Promise<PodRecord> {
    const updated = await this.#serialize(podId, async () => {
      const pod = await this.store.get(podId);
      if (!pod) throw new ApiError('NOT_FOUND', `No pod with id "${podId}" exists for this account.`);
      if (pod.cluster !== null)
        throw new ApiError('INVALID_STATE', `Pod "${pod.id}" belongs to cluster "${pod.cluster}"; manage it through /v2/clusters/${pod.cluster}.`);
      const decision = decideAction(pod.status, pod.locked, action);
      if (!decision.ok) throw new ApiError(decision.code, decision.reason);
      switch (action) {
        case 'start':
          return this.#startAction(pod);
        case 'stop':
          await this.#deps.runtime.stop(pod.id);
          return this.#settle(pod, 'EXITED', 'stopped by user');
        case 'restart':
          await this.#deps.runtime.stop(pod.id);
          await this.store.closeUsage(pod.id, this.#deps.clock.now());
          return this.#transition(pod, 'STARTING', { desiredStatus: 'RUNNING', statusReason: null });
        case 'terminate':
          return this.#terminate(pod);
      }
    });
    if (updated.desiredStatus === 'RUNNING') this.kick(podId);
    return updated;
  }

  /**
   * Applies a configuration change under the pod's lock. `reallocate` re-reserves public ports
   * and disk on the pod's host when ports or disk change; `restart` restarts a RUNNING instance
   * so it sees the change.
   */
  async reconfigure(podId: string, build: (pod: PodRecord) => { changes: PodChanges; restart: boolean; reallocate: boolean }): Promise<PodRecord> {
    const updated = await this.#serialize(podId, async () => {
      const pod = await this.store.get(podId);
      if (!pod) throw new ApiError('NOT_FOUND', `No pod with id "${podId}" exists for this account.`);
      if (pod.cluster !== null)
        throw new ApiError('INVALID_STATE', `Pod "${pod.id}" belongs to cluster "${pod.cluster}"; manage it through /v2/clusters/${pod.cluster}.`);
      if (pod.status === 'TERMINATED') throw new ApiError('INVALID_STATE', 'A TERMINATED pod cannot be changed.');
      const { changes, restart, reallocate } = build(pod);
      const next: PodRecord = { ...pod, ...changes };
      if (reallocate) next.portMappings = this.#reallocate(pod, next);
      const running = isLive(pod.status) && pod.desiredStatus === 'RUNNING';
      if (restart && running) {
        await this.#deps.runtime.stop(pod.id);
        await this.store.closeUsage(pod.id, this.#deps.clock.now());
        return this.#transition(pod, 'STARTING', { ...changes, portMappings: next.portMappings, statusReason: null });
      }
      return this.#update(pod, { ...changes, portMappings: next.portMappings });
    });
    if (updated.desiredStatus === 'RUNNING') this.kick(podId);
    return updated;
  }

  // ---------------------------------------------------------------------------------------------

  #serialize<T>(podId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(podId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(fn);
    const tail = run.catch(() => undefined);
    this.#queues.set(podId, tail);
    void tail.then(() => {
      if (this.#queues.get(podId) === tail) this.#queues.delete(podId);
    });
    return run;
  }

  /** One step toward the desired status. */
  async #reconcile(podId: string, fresh?: PodRecord): Promise<void> {
    if (this.#stopped) return;
    const pod = fresh ?? (await this.store.get(podId));
    if (!pod) return;
    if (pod.desiredStatus !== 'RUNNING') {
      if ((await this.#deps.runtime.inspect(pod.id)) !== null) await this.#deps.runtime.stop(pod.id);
      if (isLive(pod.status)) await this.#settle(pod, 'EXITED', pod.statusReason ?? 'stopped by user');
      return;
    }
    if (pod.status === 'EXITED' || pod.status === 'ERROR' || pod.status === 'TERMINATED') return;
    const live = pod.status === 'PROVISIONING' ? null : await this.#deps.runtime.inspect(pod.id);
    if (live === null) return this.#launch(pod);
    await this.#observe(pod, live);
  }

  /** Applies what the runtime says about a pod that should be running. */
  async #observe(pod: PodRecord, live: InstanceStatus): Promise<void> {
    await this.#observeState(pod, live);
    this.#applied.set(pod.id, live.state);
  }

  async #observeState(pod: PodRecord, live: InstanceStatus): Promise<void> {
    switch (live.state) {
      case 'starting':
        if (pod.status === 'PROVISIONING') await this.#apply(pod, { type: 'prepared' });
        return;
      case 'running':
        if (pod.status !== 'RUNNING') await this.#apply(pod, { type: 'ready' });
        return;
      case 'exited':
        await this.#apply(pod, { type: 'exited', reason: live.reason ?? `the process exited with code ${live.exitCode ?? 'unknown'}` });
        return;
      case 'failed':
        await this.#apply(pod, { type: 'failed', reason: live.reason ?? 'the instance failed' });
        return;
    }
  }

  async #apply(pod: PodRecord, event: PodEvent): Promise<void> {
    const t = nextPodState(pod.status, event);
    if (!t.ok) return;
    if (t.status === 'RUNNING') {
      // Every way into STARTING closed the previous usage interval; RUNNING opens the next one.
      const now = this.#deps.clock.now();
      await this.store.markRunning(
        pod.id,
        { status: 'RUNNING', statusReason: null, startedAt: now, updatedAt: now },
        { id: newId(), podId: pod.id, accountId: pod.accountId, costPerHr: pod.costPerHr, startedAt: now },
      );
      // An instance that was running as soon as it launched passed through STARTING unrecorded.
      if (pod.status === 'PROVISIONING') this.#emit(pod, 'STARTING', now);
      this.#emit(pod.status === 'PROVISIONING' ? { ...pod, status: 'STARTING' } : pod, 'RUNNING', now);
      return;
    }
    if (t.status === 'EXITED' || t.status === 'ERROR') {
      await this.#settle(pod, t.status, t.reason ?? null);
      // The instance is gone; let the runtime forget it.
      await this.#deps.runtime.stop(pod.id);
      return;
    }
    await this.#transition(pod, t.status, { statusReason: null });
  }

  /** PROVISIONING/STARTING without an instance: prepare storage, then start the instance. */
  async #launch(pod: PodRecord): Promise<void> {
    let spec: InstanceSpec;
    try {
      spec = await this.#instanceSpec(pod);
    } catch (err) {
      await this.#settle(pod, 'ERROR', `Preparing the pod failed: ${(err as Error).message}`);
      return;
    }
    let current = pod;
    if (pod.status === 'RUNNING') {
      // The instance of a RUNNING pod vanished: its usage interval ended with it.
      await this.store.closeUsage(pod.id, this.#deps.clock.now());
      current = await this.#transition(pod, 'STARTING', { statusReason: null });
    }
    // A PROVISIONING pod is written once, after the launch, with the state the runtime reports
    // (RUNNING straight away for placeholders and processes without a health probe).
    this.#known.add(pod.id);
    let status: InstanceStatus;
    try {
      status = await this.#deps.runtime.start(spec);
    } catch (err) {
      await this.#settle(current, 'ERROR', (err as Error).message || 'the instance could not be started');
      return;
    }
    await this.#observe(current, status);
  }

  async #instanceSpec(pod: PodRecord): Promise<InstanceSpec> {
    const { dataDir } = this.#deps.config;
    const volumes: VolumeBinding[] = [];
    if (pod.mounts.persistent) {
      const hostPath = join(dataDir, 'pods', pod.id, 'persistent');
      await mkdir(hostPath, { recursive: true });
      volumes.push({ hostPath, path: pod.mounts.persistent.path, kind: 'persistent' });
    }
    for (const m of pod.mounts.network ?? []) {
      const hostPath = this.#deps.volumes.hostPath(m.volumeId);
      await mkdir(hostPath, { recursive: true });
      volumes.push({ hostPath, path: m.path, kind: 'network' });
    }
    const registryAuth = pod.registry ? await this.#deps.registries.credentials(pod.accountId, pod.registry) : null;
    return {
      id: pod.id,
      image: pod.image,
      args: pod.args,
      env: {
        RUNPOD_POD_ID: pod.id,
        RUNPOD_DC_ID: pod.dataCenterId ?? '',
        RUNPOD_GPU_COUNT: String(pod.gpuIndices.length),
        RUNPOD_CPU_COUNT: String(pod.vcpuCount),
        ...pod.env,
        ...pod.hiddenEnv,
      },
      hostId: pod.hostId ?? '',
      gpuIndices: pod.gpuIndices,
      vcpus: pod.vcpuCount,
      memoryGb: pod.memoryGb,
      ports: pod.portMappings.map((m) => ({ private: m.private, public: m.public, protocol: m.type })),
      volumes,
      registryAuth,
    };
  }

  async #startAction(pod: PodRecord): Promise<PodRecord> {
    const reserved = this.#deps.inventory.reserveExact(pod.id, allocationOf(pod));
    if (!reserved.ok)
      throw new ApiError('HOST_FULL', `Pod "${pod.id}" cannot start on its host "${pod.hostId}" again: ${reserved.reason}. Terminate it and create a new pod to run elsewhere.`);
    try {
      return await this.#transition(pod, 'PROVISIONING', { desiredStatus: 'RUNNING', statusReason: null });
    } catch (err) {
      this.#deps.inventory.release(pod.id);
      throw err;
    }
  }

  async #terminate(pod: PodRecord): Promise<PodRecord> {
    await this.#deps.runtime.stop(pod.id);
    const now = this.#deps.clock.now();
    const changes: PodChanges = { status: 'TERMINATED', desiredStatus: 'TERMINATED', terminatedAt: now, updatedAt: now };
    await this.store.withTransaction(async (tx) => {
      await this.store.update(pod.id, changes, tx);
      await this.store.closeUsage(pod.id, now, tx);
    });
    this.#deps.inventory.release(pod.id);
    this.addresses.release(pod.globalIp);
    this.#known.delete(pod.id);
    this.#applied.delete(pod.id);
    this.#emit(pod, 'TERMINATED', now);
    return { ...pod, ...changes };
  }

  /** Into EXITED or ERROR: the reservation is released, usage ends, the pod stays stopped. */
  async #settle(pod: PodRecord, status: 'EXITED' | 'ERROR', reason: string | null): Promise<PodRecord> {
    const now = this.#deps.clock.now();
    const changes: PodChanges = { status, desiredStatus: 'EXITED', statusReason: reason, updatedAt: now };
    await this.store.withTransaction(async (tx) => {
      await this.store.update(pod.id, changes, tx);
      await this.store.closeUsage(pod.id, now, tx);
    });
    this.#deps.inventory.release(pod.id);
    if (pod.status !== status) this.#emit(pod, status, now);
    return { ...pod, ...changes };
  }

  async #transition(pod: PodRecord, status: PodStatus, extra: PodChanges = {}): Promise<PodRecord> {
    const now = this.#deps.clock.now();
    const changes: PodChanges = { ...extra, status, updatedAt: now };
    await this.store.update(pod.id, changes);
    if (pod.status !== status) this.#emit(pod, status, now);
    return { ...pod, ...changes };
  }

  async #update(pod: PodRecord, changes: PodChanges): Promise<PodRecord> {
    const all = { ...changes, updatedAt: this.#deps.clock.now() };
    await this.store.update(pod.id, all);
    return { ...pod, ...all };
  }

  #emit(pod: PodRecord, to: PodStatus, at: number): void {
    this.#deps.events.emit('pod:status', { podId: pod.id, accountId: pod.accountId, from: pod.status, to, at });
  }

  /**
   * New public ports (and disk) for a pod whose ports or disk changed, on the same host. Ports that
   * stay keep their public port; new ones take the lowest free ports of the host's range. A pod
   * meant to run keeps the new reservation; a stopped one only records the mapping (start
   * reserves it). Synchronous: nothing else can touch the inventory between the steps.
   */
  #reallocate(pod: PodRecord, next: PodRecord): PortMapping[] {
    const { inventory } = this.#deps;
    const host = pod.hostId ? inventory.host(pod.hostId) : undefined;
    if (!host) throw new ApiError('HOST_FULL', `Pod "${pod.id}" has no host to change its ports or disk on.`);
    const holding = inventory.allocationOf(pod.id) !== undefined;
    const previous = allocationOf(pod);
    const kept = new Map(pod.portMappings.map((m) => [`${m.private}/${m.type}`, m.public]));
    const wanted = parsePorts(next.ports);
    const mappings: Array<{ private: number; type: string; public: number | null }> = wanted.map((w) => ({
      ...w,
      public: kept.get(`${w.private}/${w.type}`) ?? null,
    }));
    const taken = new Set(mappings.map((m) => m.public).filter((p): p is number => p !== null));
    const attempt = (ports: number[]): boolean => {
      inventory.release(pod.id);
      return inventory.reserveExact(pod.id, { ...allocationOf(next), publicPorts: ports }).ok;
    };
    const restore = (): void => {
      inventory.release(pod.id);
      if (holding) inventory.reserveExact(pod.id, previous);
    };
    const chosen = (): number[] => mappings.map((m) => m.public).filter((p): p is number => p !== null);
    if (!attempt(chosen())) {
      restore();
      throw new ApiError('HOST_FULL', `Host "${host.id}" of pod "${pod.id}" lacks the resources for the change (disk ${diskOf(next)} GB or its ports).`);
    }
    for (const m of mappings) {
      if (m.public !== null) continue;
      for (let port = host.portRange[0]; port <= host.portRange[1]; port++) {
        if (taken.has(port)) continue;
        if (attempt([...chosen(), port])) {
          m.public = port;
          taken.add(port);
          break;
        }
      }
      if (m.public === null) {
        restore();
        throw new ApiError('HOST_FULL', `Host "${host.id}" of pod "${pod.id}" has no free public port for ${m.private}/${m.type}.`);
      }
    }
    if (!holding) inventory.release(pod.id);
    return mappings as PortMapping[];
  }

  /** Periodic drift repair: instances that vanished or stopped, and instances that should not run. */
  async #sweep(): Promise<void> {
    if (this.#sweeping || this.#stopped || !this.#lease.isHeld()) return;
    this.#sweeping = true;
    try {
      const [pods, instances] = await Promise.all([this.store.listActiveStates(), this.#deps.runtime.list()]);
      const live = new Map(instances.map((i) => [i.id, i]));
      for (const pod of pods) {
        if (this.#queues.has(pod.id)) continue;
        const instance = live.get(pod.id);
        const drifted =
          pod.desiredStatus === 'RUNNING'
            ? pod.status === 'PROVISIONING' || ((pod.status === 'RUNNING' || pod.status === 'STARTING') && (!instance || instance.state === 'exited' || instance.state === 'failed' || (instance.state === 'running') !== (pod.status === 'RUNNING')))
            : instance !== undefined;
        if (drifted) this.kick(pod.id);
      }
    } catch (err) {
      this.#deps.logger.error({ err }, 'pod sweep failed');
    } finally {
      this.#sweeping = false;
    }
  }
}

const isLive = (s: PodStatus): boolean => s === 'PROVISIONING' || s === 'STARTING' || s === 'RUNNING';
