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
 * - Stop and EXITED keep the instance's storage (`runtime.stop`); terminate deletes all of it (`runtime.remove`).
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
import { decideAction, type PodAction, type PodStatus } from '../domain/pod-state.js';
import type { PodEventSink } from './pod-events.js';
import type { Inventory } from '../inventory/inventory.js';
import type { SystemLogWriter } from '../logs/system-log.js';
import { AttachedInstances } from '../instances/attached-instances.js';
import { Instances } from '../instances/instances.js';
import type { RegistriesService } from '../registries/registries-service.js';
import type { AttachedInstance, InstanceStatus, Runtime } from '../runtime/runtime.js';
import { heldLease, type Lease } from '../store/leases.js';
import type { PodChanges, PodRecord } from '../store/pod-record.js';
import type { PodStore } from '../store/pod-store.js';
import { GlobalAddressPool } from './global-network.js';
import { allocationOf, reallocateOnHost } from './pod-allocation.js';
import { PodLauncher, type PodObservation } from './pod-launcher.js';
import { PodStatusWriter } from './pod-status-writer.js';
import { driftedPods } from './pod-drift.js';
import { applyObserved } from './pod-observation.js';
import { pauseUsage, resumeUsage } from './pod-usage-pauses.js';
import { SerialQueues } from './serial-queues.js';

type ActOptions = { asCluster?: boolean; reason?: string };
/** What an interruption did: the pod as it settled (null: it had before), and why its instance is not stopped yet (null: it is). */
export interface Interruption {
  settled: PodRecord | null;
  failed: Error | null;
}

export interface PodControllerDeps {
  store: PodStore;
  runtime: Runtime;
  inventory: Inventory;
  registries: Pick<RegistriesService, 'credentials'>;
  clock: Clock;
  events: PodEventSink;
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
  /** The launch path pods share with workers (src/instances/); the pods service places new pods through it. */
  readonly instances: Instances;
  readonly #deps: PodControllerDeps;
  readonly #lease: Lease;
  readonly #queues = new SerialQueues();
  readonly #status: PodStatusWriter;
  readonly #launcher: PodLauncher;
  #timer: NodeJS.Timeout | null = null;
  #sweeping = false;
  #stopped = false;
  readonly #unsubscribe: () => void;
  // The instance state last applied to each pod (`unknown` with its reason): a runtime event
  // reporting that same state (typically the launch this controller is applying itself) needs no
  // second reconcile.
  readonly #applied = new Map<string, string>();
  // Interrupted pods whose instance the runtime could not stop yet: their next stop discards it.
  readonly #undiscarded = new Set<string>();

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
    this.instances = new Instances({
      runtime: deps.runtime,
      inventory: deps.inventory,
      registries: deps.registries,
      systemLog: deps.systemLog,
    });
    this.#launcher = new PodLauncher({
      store: this.store,
      instances: this.instances,
      inventory: deps.inventory,
      runtime: deps.runtime,
      status: this.#status,
      clock: deps.clock,
      logger: deps.logger,
      internalDomain: deps.config.networking.internalDomain,
    });
    // Runtime changes only wake the pod up; reconcile re-reads the instance, so a late event
    // about an instance that was since replaced does no harm.
    this.#unsubscribe = deps.runtime.onChange((status) => {
      if (this.#launcher.knows(status.id)) this.#wake(status.id, appliedKey(status));
    });
  }

  /**
   * Server start: adopts the live instances of pods meant to run (`attached`: what the runtime's
   * `attach()` answered), re-reserves and restarts the others, stops stopped pods' instances; then reconciles.
   */
  async start(attached: readonly AttachedInstance[] = []): Promise<void> {
    this.#stopped = false;
    const now = this.#deps.clock.now();
    const found = new AttachedInstances(attached);
    for (const pod of await this.store.listActive()) {
      await this.#queues
        .run(pod.id, async () => this.#observed(await this.#launcher.restore(pod, found, now)))
        .catch((err: unknown) =>
          this.#deps.logger.error({ err, podId: pod.id }, 'restoring the pod at server start failed'),
        );
      this.kick(pod.id);
    }
    this.#timer = setInterval(() => void this.#sweep(), Math.max(50, this.#deps.config.pods.reconcileIntervalMs));
    this.#timer.unref();
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
  idle = (podId: string): Promise<void> => this.#queues.idle(podId);

  /**
   * Performs a user action on the pod (already known to belong to the caller), under the pod's
   * lock, and answers the pod as it stands afterwards. Refusals are ApiErrors (409 / 400 HOST_FULL).
   * A cluster's member is refused (409) unless the cluster itself acts (`asCluster`); `reason`: a stop's.
   */
  async act(podId: string, action: PodAction, options: ActOptions = {}): Promise<PodRecord> {
    const updated = await this.#queues.run(podId, async () => {
      const pod = await this.#owned(podId, options.asCluster);
      const decision = decideAction(pod.status, pod.locked, action);
      if (!decision.ok) throw new ApiError(decision.code, decision.reason);
      switch (action) {
        case 'start':
          return this.#startAction(pod);
        case 'stop':
          await this.#deps.runtime.stop(pod.id);
          return this.#status.settle(pod, 'EXITED', options.reason ?? 'stopped by user');
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
   * Applies a configuration change under the pod's lock. `reallocate` re-reserves public ports and
   * disk on the pod's host when ports or disk change; `restart` restarts a RUNNING instance so it
   * sees the change. A cluster's member is refused (409) unless `asCluster` (GraphQL podEditJob).
   */
  async reconfigure(
    podId: string,
    options: { asCluster?: boolean },
    build: (pod: PodRecord) => { changes: PodChanges; restart: boolean; reallocate: boolean },
  ): Promise<PodRecord> {
    const updated = await this.#queues.run(podId, async () => {
      const pod = await this.#owned(podId, options.asCluster);
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

  /** The pod a user acts on; a cluster's member only when the cluster acts (`asCluster`). */
  async #owned(podId: string, asCluster: boolean | undefined): Promise<PodRecord> {
    const pod = await this.store.get(podId);
    if (!pod) throw new ApiError('NOT_FOUND', `No pod with id "${podId}" exists for this account.`);
    if (pod.cluster === null || asCluster) return pod;
    const where = `belongs to cluster "${pod.cluster}"; manage it through /v2/clusters/${pod.cluster}`;
    throw new ApiError('INVALID_STATE', `Pod "${pod.id}" ${where}.`);
  }

  /** One step toward the desired status. */
  async #reconcile(podId: string, fresh?: PodRecord): Promise<void> {
    if (this.#stopped) return;
    const pod = fresh ?? (await this.store.get(podId));
    if (!pod) return;
    if (pod.desiredStatus !== 'RUNNING') {
      if ((await this.#deps.runtime.inspect(pod.id)) !== null) await this.#stopInstance(pod.id);
      if (isLive(pod.status)) await this.#status.settle(pod, 'EXITED', pod.statusReason ?? 'stopped by user');
      return;
    }
    if (pod.status === 'EXITED' || pod.status === 'ERROR' || pod.status === 'TERMINATED') return;
    // A pod this process has just created has no instance yet (its create saves the look). Any
    // other may: one this process started or adopted (a start again, a launch whose status write
    // did not happen), or one another replica is launching right now, which a sweep here must
    // observe rather than start a second time.
    const live =
      pod.status === 'PROVISIONING' && fresh !== undefined && !this.#launcher.knows(pod.id)
        ? null
        : await this.#deps.runtime.inspect(pod.id);
    if (live === null) return this.#observed(await this.#launcher.launch(pod));
    await this.#observe(pod, live);
  }

  /** Applies what a launch or a restore answered (nothing when the pod waits or was settled). */
  async #observed(observation: PodObservation | null): Promise<void> {
    if (observation) await this.#observe(observation.pod, observation.live);
  }

  /** Applies what the runtime says about a pod that should be running. */
  async #observe(pod: PodRecord, live: InstanceStatus): Promise<void> {
    await applyObserved({ status: this.#status, runtime: this.#deps.runtime }, pod, live);
    this.#applied.set(pod.id, appliedKey(live));
  }

  async #startAction(pod: PodRecord): Promise<PodRecord> {
    // An interrupted instance that could not be stopped then is stopped (its container removed) first.
    if (this.#undiscarded.has(pod.id))
      await this.#stopInstance(pod.id).catch((err: unknown) => {
        throw new ApiError(
          'INVALID_STATE',
          `Pod "${pod.id}" was interrupted and its instance cannot be stopped yet: ${(err as Error).message}`,
        );
      });
    const reserved = this.instances.reserve(pod.id, allocationOf(pod));
    if (!reserved.ok)
      throw new ApiError(
        'HOST_FULL',
        `Pod "${pod.id}" cannot start on its host "${pod.hostId}" again: ${reserved.reason}. Terminate it and create a new pod to run elsewhere.`,
      );
    try {
      return await this.#status.transition(pod, 'PROVISIONING', { desiredStatus: 'RUNNING', statusReason: null });
    } catch (err) {
      this.instances.release(pod.id);
      throw err;
    }
  }

  async #terminate(pod: PodRecord): Promise<PodRecord> {
    // Everything the instance had goes: a kept container, the persistent volume.
    await this.#deps.runtime.remove(pod.id);
    this.#undiscarded.delete(pod.id);
    return this.#status.terminated(pod, () => {
      this.instances.release(pod.id);
      this.addresses.release(pod.globalIp);
      this.#launcher.forget(pod.id);
      this.#applied.delete(pod.id);
    });
  }

  /**
   * The reclaim ladder took the pod's machine for another (./pod-interruptions.ts; its reservation
   * is the other's already): a pod still meant to run loses its instance, container disk and all
   * (its volumes stay), and settles EXITED with `reason` even when its runtime cannot stop the
   * instance now; that stop is retried by the next call (and by the sweep) until it is done.
   * Null when there was nothing left to do.
   */
  async interrupt(podId: string, reason: string): Promise<Interruption | null> {
    return this.#queues.run(podId, async () => {
      const pod = await this.store.get(podId);
      const running = pod !== null && pod.desiredStatus === 'RUNNING' && isLive(pod.status);
      if (!pod || (!running && !this.#undiscarded.has(podId))) return null;
      const failed = await this.#stopInstance(podId, true).then(
        () => null,
        (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
      );
      return { settled: running ? await this.#status.settle(pod, 'EXITED', reason) : null, failed };
    });
  }

  /** Stops the instance; an interrupted pod's (or `discard`) loses its container as well. */
  async #stopInstance(podId: string, discard = false): Promise<void> {
    if (discard) this.#undiscarded.add(podId);
    await this.#deps.runtime.stop(podId, this.#undiscarded.has(podId) ? { discard: true } : {});
    this.#undiscarded.delete(podId);
  }

  /**
   * The host of these pods is lost (the fleet runtime's lost grace, src/fleet/fleet-runtime.ts):
   * their usage stops accruing while they cannot be seen (./pod-usage-pauses.ts).
   */
  async pauseUsage(hostId: string, at: number): Promise<void> {
    await pauseUsage(this.store, this.#queues, hostId, at);
  }

  /** The host of these pods is back and shows their instances running: their usage resumes from `at`. */
  async resumeUsage(podIds: readonly string[], at: number): Promise<void> {
    await resumeUsage(this.store, this.#queues, podIds, at);
  }

  /** Periodic drift repair: instances that vanished or stopped, and instances that should not run. */
  async #sweep(): Promise<void> {
    if (this.#sweeping || this.#stopped || !this.#lease.isHeld()) return;
    this.#sweeping = true;
    try {
      const [pods, instances] = await Promise.all([this.store.listActiveStates(), this.#deps.runtime.list()]);
      for (const id of driftedPods(pods, instances)) if (!this.#queues.has(id)) this.kick(id);
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
