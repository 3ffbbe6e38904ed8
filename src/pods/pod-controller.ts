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
 *   the `pods` lease. An instance the runtime reports `unknown` (its engine is unreachable) is not
 *   drift: the pod keeps its status, with the runtime's reason as `statusReason` until it is seen
 *   again; nothing is restarted meanwhile. While the runtime is unavailable, a pod to launch waits
 *   (its status kept, the reason shown) and the sweep tries again.
 * - Stop and EXITED keep the instance's storage (`runtime.stop`); terminate deletes it
 *   (`runtime.remove`: the kept container and the persistent volume).
 * - Server restart: `start(attached)` takes what the runtime's `attach()` answered. A pod meant to
 *   run whose instance is live is adopted, not restarted: its allocation is reserved again, its
 *   usage interval stays open, and it is reconciled from the instance's state. A pod meant to run
 *   without a live instance re-reserves its allocation and starts again; a pod the user stopped
 *   stays stopped, and a live instance of it is stopped.
 * - A GPU pod stored before allotments (vCPUs 0: no limits, nothing reserved for its CPUs and
 *   memory) runs on as it is, adopted instances included; its next instance (a start, a restart,
 *   a change that restarts it, or a server restart that finds it gone) gets its GPU type's
 *   allotment on its host, stored on the pod from then on, or ERROR when the host cannot give it.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { ApiError } from '../domain/errors.js';
import { newSortableId } from '../domain/ids.js';
import { decideAction, nextPodState, type PodAction, type PodEvent, type PodStatus } from '../domain/pod-state.js';
import type { EventBus } from '../events.js';
import type { Inventory } from '../inventory/inventory.js';
import type { SystemLogWriter } from '../logs/system-log.js';
import type { RegistriesService } from '../registries/registries-service.js';
import type { AttachedInstance, InstanceSpec, InstanceStatus, Runtime } from '../runtime/runtime.js';
import { heldLease, type Lease } from '../store/leases.js';
import type { PodChanges, PodRecord } from '../store/pod-record.js';
import type { PodStore } from '../store/pod-store.js';
import { GlobalAddressPool } from './global-network.js';
import { allocationOf, reallocateOnHost } from './pod-allocation.js';
import { podInstanceSpec } from './pod-instance-spec.js';
import { PodStatusWriter } from './pod-status-writer.js';
import { SerialQueues } from './serial-queues.js';

export interface PodControllerDeps {
  store: PodStore;
  runtime: Runtime;
  inventory: Inventory;
  registries: Pick<RegistriesService, 'credentials'>;
  clock: Clock;
  events: EventBus;
  logger: Logger;
  /** Which replica sweeps. @default always held */
  lease?: Lease;
  /** The pods' `system` log lines (docs/logs.md). @default none written */
  systemLog?: SystemLogWriter;
  config: {
    pods: { reconcileIntervalMs: number };
    networking: { globalPool: string; internalDomain: string };
  };
}

export class PodController {
  readonly store: PodStore;
  /** Global networking addresses; the pods service allocates from it at create. */
  readonly addresses: GlobalAddressPool;
  readonly #deps: PodControllerDeps;
  readonly #lease: Lease;
  readonly #queues = new SerialQueues();
  readonly #status: PodStatusWriter;
  #timer: NodeJS.Timeout | null = null;
  #sweeping = false;
  #stopped = false;
  readonly #unsubscribe: () => void;
  /** Pods with an instance started or adopted by this process: runtime events about other ids (serverless workers) are ignored. */
  readonly #known = new Set<string>();
  // The instance state last applied to each pod (`unknown` with its reason): a runtime event
  // reporting that same state (typically the launch this controller is applying itself) needs no
  // second reconcile.
  readonly #applied = new Map<string, string>();

  constructor(deps: PodControllerDeps) {
    this.#deps = deps;
    this.#lease = deps.lease ?? heldLease('pods');
    this.store = deps.store;
    this.#status = new PodStatusWriter({
      store: this.store,
      inventory: deps.inventory,
      clock: deps.clock,
      events: deps.events,
      systemLog: deps.systemLog,
    });
    this.addresses = new GlobalAddressPool(deps.config.networking.globalPool, () => this.store.listGlobalIps());
    // Runtime changes only wake the pod up; reconcile re-reads the instance, so a late event
    // about an instance that was since replaced does no harm.
    this.#unsubscribe = deps.runtime.onChange((status) => {
      if (this.#known.has(status.id)) this.#wake(status.id, appliedKey(status));
    });
  }

  /**
   * Server start: adopts the live instances of pods meant to run (`attached`: what the runtime's
   * `attach()` answered), re-reserves and restarts the others meant to run, stops live instances
   * of stopped pods; then reconciles periodically.
   */
  async start(attached: readonly AttachedInstance[] = []): Promise<void> {
    this.#stopped = false;
    const now = this.#deps.clock.now();
    const live = new Map<string, InstanceStatus>();
    for (const a of attached) if (a.status && isLiveInstance(a.status)) live.set(a.id, a.status);
    for (const pod of await this.store.listActive()) {
      await this.#queues
        .run(pod.id, () => this.#restore(pod, live.get(pod.id) ?? null, now))
        .catch((err: unknown) =>
          this.#deps.logger.error({ err, podId: pod.id }, 'restoring the pod at server start failed'),
        );
      this.kick(pod.id);
    }
    this.#timer = setInterval(() => void this.#sweep(), Math.max(50, this.#deps.config.pods.reconcileIntervalMs));
    this.#timer.unref();
  }

  /** One pod at server start; `live`: its instance's status when the runtime still runs it. */
  async #restore(pod: PodRecord, live: InstanceStatus | null, now: number): Promise<void> {
    if (live) this.#known.add(pod.id);
    const meantToRun = pod.desiredStatus === 'RUNNING' && pod.status !== 'EXITED' && pod.status !== 'ERROR';
    if (!meantToRun) {
      // The user stopped it (or it ended) while no server watched: its instance must not run on.
      if (live) await this.#deps.runtime.stop(pod.id);
      if (pod.desiredStatus === 'RUNNING') await this.#status.update(pod, { desiredStatus: 'EXITED' });
      else if (isLive(pod.status)) await this.#status.settle(pod, 'EXITED', pod.statusReason ?? 'stopped by user');
      return;
    }
    const reserved = pod.hostId
      ? this.#deps.inventory.reserveExact(pod.id, allocationOf(pod))
      : { ok: false as const, reason: 'it has no machine assignment' };
    if (!reserved.ok) {
      if (live) await this.#deps.runtime.stop(pod.id);
      await this.#status.settle(
        pod,
        'ERROR',
        `Its machine could not be reserved again after a server restart: ${reserved.reason}`,
      );
      return;
    }
    if (live) {
      // Adopted: it ran on while no server watched, so its usage interval stays open.
      this.#deps.logger.info({ podId: pod.id, state: live.state }, 'adopted the running instance of a pod');
      await this.#observe(pod, live);
      return;
    }
    // The instance did not survive the restart; its usage interval ended with it.
    await this.store.closeUsage(pod.id, now);
    if (pod.status === 'RUNNING') await this.#status.transition(pod, 'STARTING', { statusReason: null });
  }

  /** Stops the loops and waits for in-flight steps. The runtime's close() detaches from the instances. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#unsubscribe();
    await this.#queues.drain();
  }

  /**
   * Schedules a reconcile of the pod soon (not awaited by the caller). `fresh` is the record the
   * caller has just written, when it is certainly current (create), to save a read.
   */
  kick(podId: string, fresh?: PodRecord): void {
    if (this.#stopped) return;
    void this.#queues
      .run(podId, () => this.#reconcile(podId, fresh))
      .catch((err: unknown) => this.#deps.logger.error({ err, podId }, 'pod reconcile failed'));
  }

  /** A runtime event: reconcile unless, by the time the pod's turn comes, that state was applied. */
  #wake(podId: string, state: string): void {
    if (this.#stopped) return;
    void this.#queues
      .run(podId, () => (this.#applied.get(podId) === state ? Promise.resolve() : this.#reconcile(podId)))
      .catch((err: unknown) => this.#deps.logger.error({ err, podId }, 'pod reconcile failed'));
  }

  /** Waits until every queued step of the pod has run (tests, shutdown). */
  async idle(podId: string): Promise<void> {
    await this.#queues.idle(podId);
  }

  /**
   * Performs a user action on the pod (already known to belong to the caller), under the pod's
   * lock, and answers the pod as it stands afterwards. Refusals are ApiErrors (409 / 400 HOST_FULL).
   * A cluster's member is refused (409) unless the cluster itself acts (`asCluster`).
   */
  async act(podId: string, action: PodAction, options: { asCluster?: boolean } = {}): Promise<PodRecord> {
    const updated = await this.#queues.run(podId, async () => {
      const pod = await this.store.get(podId);
      if (!pod) throw new ApiError('NOT_FOUND', `No pod with id "${podId}" exists for this account.`);
      if (pod.cluster !== null && !options.asCluster)
        throw new ApiError(
          'INVALID_STATE',
          `Pod "${pod.id}" belongs to cluster "${pod.cluster}"; manage it through /v2/clusters/${pod.cluster}.`,
        );
      const decision = decideAction(pod.status, pod.locked, action);
      if (!decision.ok) throw new ApiError(decision.code, decision.reason);
      switch (action) {
        case 'start':
          return this.#startAction(pod);
        case 'stop':
          await this.#deps.runtime.stop(pod.id);
          return this.#status.settle(pod, 'EXITED', 'stopped by user');
        case 'restart':
          await this.#deps.runtime.stop(pod.id);
          await this.store.closeUsage(pod.id, this.#deps.clock.now());
          return this.#status.transition(pod, 'STARTING', { desiredStatus: 'RUNNING', statusReason: null });
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
  async reconfigure(
    podId: string,
    build: (pod: PodRecord) => { changes: PodChanges; restart: boolean; reallocate: boolean },
  ): Promise<PodRecord> {
    const updated = await this.#queues.run(podId, async () => {
      const pod = await this.store.get(podId);
      if (!pod) throw new ApiError('NOT_FOUND', `No pod with id "${podId}" exists for this account.`);
      if (pod.cluster !== null)
        throw new ApiError(
          'INVALID_STATE',
          `Pod "${pod.id}" belongs to cluster "${pod.cluster}"; manage it through /v2/clusters/${pod.cluster}.`,
        );
      if (pod.status === 'TERMINATED') throw new ApiError('INVALID_STATE', 'A TERMINATED pod cannot be changed.');
      const { changes, restart, reallocate } = build(pod);
      const next: PodRecord = { ...pod, ...changes };
      if (reallocate) next.portMappings = reallocateOnHost(this.#deps.inventory, pod, next);
      const running = isLive(pod.status) && pod.desiredStatus === 'RUNNING';
      if (restart && running) {
        await this.#deps.runtime.stop(pod.id);
        await this.store.closeUsage(pod.id, this.#deps.clock.now());
        return this.#status.transition(pod, 'STARTING', {
          ...changes,
          portMappings: next.portMappings,
          statusReason: null,
        });
      }
      return this.#status.update(pod, { ...changes, portMappings: next.portMappings });
    });
    if (updated.desiredStatus === 'RUNNING') this.kick(podId);
    return updated;
  }

  /** One step toward the desired status. */
  async #reconcile(podId: string, fresh?: PodRecord): Promise<void> {
    if (this.#stopped) return;
    const pod = fresh ?? (await this.store.get(podId));
    if (!pod) return;
    if (pod.desiredStatus !== 'RUNNING') {
      if ((await this.#deps.runtime.inspect(pod.id)) !== null) await this.#deps.runtime.stop(pod.id);
      if (isLive(pod.status)) await this.#status.settle(pod, 'EXITED', pod.statusReason ?? 'stopped by user');
      return;
    }
    if (pod.status === 'EXITED' || pod.status === 'ERROR' || pod.status === 'TERMINATED') return;
    // A pod this process has just created has no instance yet (its create saves the look). Any
    // other may: one this process started or adopted (a start again, a launch whose status write
    // did not happen), or one another replica is launching right now, which a sweep here must
    // observe rather than start a second time.
    const live =
      pod.status === 'PROVISIONING' && fresh !== undefined && !this.#known.has(pod.id)
        ? null
        : await this.#deps.runtime.inspect(pod.id);
    if (live === null) return this.#launch(pod);
    await this.#observe(pod, live);
  }

  /** Applies what the runtime says about a pod that should be running. */
  async #observe(pod: PodRecord, live: InstanceStatus): Promise<void> {
    await this.#observeState(pod, live);
    this.#applied.set(pod.id, appliedKey(live));
  }

  async #observeState(pod: PodRecord, live: InstanceStatus): Promise<void> {
    switch (live.state) {
      case 'starting':
        if (pod.status === 'PROVISIONING') await this.#apply(pod, { type: 'prepared' });
        else await this.#seen(pod);
        return;
      case 'running':
        if (pod.status !== 'RUNNING') await this.#apply(pod, { type: 'ready' });
        else await this.#seen(pod);
        return;
      case 'unknown':
        // Its engine is away: the pod keeps its status and says why it cannot be seen.
        await this.#unseen(pod, live.reason ?? 'the runtime cannot see the instance right now');
        return;
      case 'exited':
        await this.#apply(pod, {
          type: 'exited',
          reason: live.reason ?? `the process exited with code ${live.exitCode ?? 'unknown'}`,
        });
        return;
      case 'failed':
        await this.#apply(pod, { type: 'failed', reason: live.reason ?? 'the instance failed' });
        return;
      default:
        live.state satisfies never;
    }
  }

  /** The instance is seen again: the reason it could not be is cleared. Live pods carry no other reason. */
  async #seen(pod: PodRecord): Promise<void> {
    if (pod.statusReason !== null) await this.#status.update(pod, { statusReason: null });
  }

  /** The pod's instance cannot be seen or started for now: its status stays, `reason` says why. */
  async #unseen(pod: PodRecord, reason: string): Promise<void> {
    if (pod.statusReason !== reason) await this.#status.update(pod, { statusReason: reason });
  }

  async #apply(pod: PodRecord, event: PodEvent): Promise<void> {
    const t = nextPodState(pod.status, event);
    if (!t.ok) return;
    if (t.status === 'RUNNING') {
      await this.#status.running(pod);
      return;
    }
    if (t.status === 'EXITED' || t.status === 'ERROR') {
      await this.#status.settle(pod, t.status, t.reason ?? null);
      // The instance is gone; let the runtime forget it.
      await this.#deps.runtime.stop(pod.id);
      return;
    }
    await this.#status.transition(pod, t.status, { statusReason: null });
  }

  /** PROVISIONING/STARTING without an instance: prepare storage, then start the instance. */
  async #launch(pod: PodRecord): Promise<void> {
    let current = pod;
    if (pod.status === 'RUNNING') {
      // The instance of a RUNNING pod vanished: its usage interval ended with it.
      await this.store.closeUsage(pod.id, this.#deps.clock.now());
      current = await this.#status.transition(pod, 'STARTING', { statusReason: null });
    }
    if (await this.#waitForRuntime(current)) return;
    if (current.gpuCount > 0 && current.vcpuCount === 0) {
      const allotted = await this.#allot(current);
      if (allotted === null) return;
      current = allotted;
    }
    let spec: InstanceSpec;
    try {
      spec = await podInstanceSpec(current, {
        registries: this.#deps.registries,
        internalDomain: this.#deps.config.networking.internalDomain,
      });
    } catch (err) {
      await this.#status.settle(current, 'ERROR', `Preparing the pod failed: ${(err as Error).message}`);
      return;
    }
    // A PROVISIONING pod is written once, after the launch, with the state the runtime reports
    // (RUNNING straight away for placeholders and processes without a health probe).
    this.#known.add(pod.id);
    await this.#status.log(
      pod.id,
      `placed on host ${current.hostId ?? '?'} (${current.dataCenterId ?? 'no data center'}); pulling (if needed) and starting image ${current.image}`,
    );
    let status: InstanceStatus;
    try {
      status = await this.#deps.runtime.start(spec);
    } catch (err) {
      if (await this.#waitForRuntime(current)) return;
      await this.#status.settle(current, 'ERROR', (err as Error).message || 'the instance could not be started');
      return;
    }
    await this.#observe(current, status);
  }

  /**
   * A GPU pod stored before allotments holds no vCPUs or memory: its next instance gets its GPU
   * type's allotment on its host, reserved in place of what it held and stored on the pod. When
   * the host cannot give it now, the pod goes to ERROR saying so (null).
   */
  async #allot(pod: PodRecord): Promise<PodRecord | null> {
    const inventory = this.#deps.inventory;
    const allotment = pod.hostId ? inventory.gpuAllotmentOn(pod.hostId, pod.gpuCount) : null;
    if (allotment === null) return pod;
    const next = { ...pod, vcpuCount: allotment.vcpus, memoryGb: allotment.memoryGb };
    const held = inventory.allocationOf(pod.id);
    inventory.release(pod.id);
    const reserved = inventory.reserveExact(pod.id, allocationOf(next));
    if (!reserved.ok) {
      if (held) inventory.reserveExact(pod.id, held);
      await this.#status.settle(
        pod,
        'ERROR',
        `Its host cannot give it the ${allotment.vcpus} vCPUs and ${allotment.memoryGb} GB of memory ${pod.gpuCount === 1 ? 'its GPU comes' : `its ${pod.gpuCount} GPUs come`} with now: ${reserved.reason}`,
      );
      return null;
    }
    return this.#status.update(pod, { vcpuCount: allotment.vcpus, memoryGb: allotment.memoryGb });
  }

  /**
   * While the runtime is unavailable a launch waits: not an error of the pod, which keeps its
   * status with the reason and launches once the runtime is back (the sweep comes again). A pod
   * whose host left the fleet for good does not wait.
   */
  async #waitForRuntime(pod: PodRecord): Promise<boolean> {
    const unavailable = this.#deps.runtime.unavailable?.(pod.hostId ?? undefined) ?? null;
    if (unavailable === null) return false;
    // A host that left the fleet for good (a revoked fleet host) is not waited for: the start
    // fails, saying why, and the pod ends in ERROR.
    if (pod.hostId !== null && this.#deps.inventory.host(pod.hostId) === undefined) return false;
    await this.#unseen(pod, `waiting for the runtime: ${unavailable}`);
    return true;
  }

  async #startAction(pod: PodRecord): Promise<PodRecord> {
    const reserved = this.#deps.inventory.reserveExact(pod.id, allocationOf(pod));
    if (!reserved.ok)
      throw new ApiError(
        'HOST_FULL',
        `Pod "${pod.id}" cannot start on its host "${pod.hostId}" again: ${reserved.reason}. Terminate it and create a new pod to run elsewhere.`,
      );
    try {
      return await this.#status.transition(pod, 'PROVISIONING', { desiredStatus: 'RUNNING', statusReason: null });
    } catch (err) {
      this.#deps.inventory.release(pod.id);
      throw err;
    }
  }

  async #terminate(pod: PodRecord): Promise<PodRecord> {
    // Everything the instance had goes: a kept container, the persistent volume.
    await this.#deps.runtime.remove(pod.id);
    const now = this.#deps.clock.now();
    const changes: PodChanges = {
      status: 'TERMINATED',
      desiredStatus: 'TERMINATED',
      terminatedAt: now,
      updatedAt: now,
      statusChangedAt: now,
    };
    await this.store.withTransaction(async (tx) => {
      await this.store.update(pod.id, changes, tx);
      await this.store.closeUsage(pod.id, now, tx);
    });
    this.#deps.inventory.release(pod.id);
    this.addresses.release(pod.globalIp);
    this.#known.delete(pod.id);
    this.#applied.delete(pod.id);
    this.#status.emit(pod, 'TERMINATED', now);
    await this.#status.log(pod.id, 'terminated');
    return { ...pod, ...changes };
  }

  /**
   * The host of these pods is lost (the fleet runtime's lost grace, src/fleet/fleet-runtime.ts):
   * the open usage interval of each RUNNING pod on `hostId` ends at `at` (not before it began), so
   * cost stops accruing while the pod cannot be seen. Its status is left as it is.
   */
  async pauseUsage(hostId: string, at: number): Promise<void> {
    const pods = (await this.store.listActive()).filter((p) => p.hostId === hostId && p.status === 'RUNNING');
    await Promise.all(
      pods.map((p) => this.#queues.run(p.id, () => this.store.closeUsage(p.id, Math.max(at, p.startedAt ?? at)))),
    );
  }

  /**
   * The host of these pods is back and shows their instances running: each pod still RUNNING and
   * meant to run that has no open usage interval (paused by `pauseUsage`) gets one from `at`.
   */
  async resumeUsage(podIds: readonly string[], at: number): Promise<void> {
    await Promise.all(
      podIds.map((id) =>
        this.#queues.run(id, async () => {
          const pod = await this.store.get(id);
          if (!pod || pod.status !== 'RUNNING' || pod.desiredStatus !== 'RUNNING') return;
          if ((await this.store.listUsage(id)).some((u) => u.endedAt === null)) return;
          await this.store.openUsage({
            id: newSortableId(),
            podId: id,
            accountId: pod.accountId,
            costPerHr: pod.costPerHr,
            startedAt: at,
          });
        }),
      ),
    );
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
        // An instance its engine cannot see right now is left alone: it may be running fine.
        if (instance?.state === 'unknown') continue;
        const drifted =
          pod.desiredStatus === 'RUNNING'
            ? pod.status === 'PROVISIONING' ||
              ((pod.status === 'RUNNING' || pod.status === 'STARTING') &&
                (!instance ||
                  instance.state === 'exited' ||
                  instance.state === 'failed' ||
                  (instance.state === 'running') !== (pod.status === 'RUNNING')))
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

/** What `#applied` compares: the state, and for `unknown` the reason shown (it may change while unseen). */
const appliedKey = (s: InstanceStatus): string => (s.state === 'unknown' ? `unknown:${s.reason ?? ''}` : s.state);
const isLive = (s: PodStatus): boolean => s === 'PROVISIONING' || s === 'STARTING' || s === 'RUNNING';
/** An instance that runs, or may (its engine cannot see it right now): adopted, not restarted. */
const isLiveInstance = (s: InstanceStatus): boolean =>
  s.state === 'starting' || s.state === 'running' || s.state === 'unknown';
