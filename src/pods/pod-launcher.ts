/**
 * A pod's instance on the shared launch path (src/instances/): restored at server start from what
 * the runtime's `attach()` found, or launched when it has none. Each step answers what the pod
 * controller then observes (the pod as it stands and its instance's status), or null when the pod
 * waits for its runtime or was settled in ERROR here.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { AttachedInstances } from '../instances/attached-instances.js';
import { NotCleared, type Instances } from '../instances/instances.js';
import type { Inventory } from '../inventory/inventory.js';
import type { InstanceStatus, Runtime } from '../runtime/runtime.js';
import type { PodRecord } from '../store/pod-record.js';
import type { PodStore } from '../store/pod-store.js';
import { allocationOf } from './pod-allocation.js';
import { podInstanceSpec } from './pod-instance-spec.js';
import type { PodStatusWriter } from './pod-status-writer.js';

export interface PodLauncherDeps {
  store: Pick<PodStore, 'closeUsage'>;
  instances: Instances;
  inventory: Pick<Inventory, 'gpuAllotmentOn' | 'allocationOf' | 'host'>;
  runtime: Pick<Runtime, 'stop' | 'inspect'>;
  status: PodStatusWriter;
  clock: Clock;
  logger: Pick<Logger, 'info'>;
  /** `<pod_id>.<internalDomain>.internal` names a globally networked pod on its account's network. */
  internalDomain: string;
}

/** A pod and its instance's status, for the controller to apply. */
export interface PodObservation {
  pod: PodRecord;
  live: InstanceStatus;
}

export class PodLauncher {
  readonly #deps: PodLauncherDeps;
  /** Pods with an instance started or adopted by this process: runtime events about other ids (serverless workers) are not theirs. */
  readonly #known = new Set<string>();

  constructor(deps: PodLauncherDeps) {
    this.#deps = deps;
  }

  /** Whether this process started or adopted the pod's instance. */
  knows(podId: string): boolean {
    return this.#known.has(podId);
  }

  /** The pod's instance is gone for good (terminated). */
  forget(podId: string): void {
    this.#known.delete(podId);
  }

  /**
   * One pod at server start. A pod meant to run whose instance is live is adopted: its allocation
   * reserved again, its usage interval kept open (answered, to observe). One meant to run without
   * a live instance re-reserves and waits for its launch; one the user stopped stays stopped.
   */
  async restore(pod: PodRecord, attached: AttachedInstances, now: number): Promise<PodObservation | null> {
    const claim = attached.claim(pod.id, { kind: 'pod' });
    const live = claim.ok ? claim.status : null;
    const { instances, status } = this.#deps;
    if (live) this.#known.add(pod.id);
    const meantToRun = pod.desiredStatus === 'RUNNING' && pod.status !== 'EXITED' && pod.status !== 'ERROR';
    if (!meantToRun) {
      // The user stopped it (or it ended) while no server watched: its instance must not run on.
      if (live) await this.#deps.runtime.stop(pod.id);
      if (pod.desiredStatus === 'RUNNING') await status.update(pod, { desiredStatus: 'EXITED' });
      else if (isLive(pod)) await status.settle(pod, 'EXITED', pod.statusReason ?? 'stopped by user');
      return null;
    }
    const reserved = pod.hostId
      ? instances.reserve(pod.id, allocationOf(pod))
      : { ok: false as const, reason: 'it has no machine assignment' };
    if (!reserved.ok) {
      if (live) await this.#deps.runtime.stop(pod.id);
      await status.settle(
        pod,
        'ERROR',
        `Its machine could not be reserved again after a server restart: ${reserved.reason}`,
      );
      return null;
    }
    if (live) {
      // Adopted: it ran on while no server watched, so its usage interval stays open.
      this.#deps.logger.info({ podId: pod.id, state: live.state }, 'adopted the running instance of a pod');
      return { pod, live };
    }
    // The instance did not survive the restart; its usage interval ended with it.
    await this.#deps.store.closeUsage(pod.id, now);
    if (pod.status === 'RUNNING') await status.transition(pod, 'STARTING', { statusReason: null });
    return null;
  }

  /**
   * PROVISIONING/STARTING without an instance: its allotment (a GPU pod stored before them), its
   * spec, then its start. A PROVISIONING pod is written once, after the launch, with the state
   * the runtime reports (RUNNING straight away for placeholders and processes without a health
   * probe): the observation answered.
   */
  async launch(pod: PodRecord): Promise<PodObservation | null> {
    const { instances, status } = this.#deps;
    let current = pod;
    if (pod.status === 'RUNNING') {
      // The instance of a RUNNING pod vanished: its usage interval ended with it.
      await this.#deps.store.closeUsage(pod.id, this.#deps.clock.now());
      current = await status.transition(pod, 'STARTING', { statusReason: null });
    }
    if (await this.#waitForRuntime(current)) return null;
    if (current.gpuCount > 0 && current.vcpuCount === 0) {
      const allotted = await this.#allot(current);
      if (allotted === null) return null;
      current = allotted;
    }
    let spec;
    try {
      const registryAuth = await instances.registryAuth(current.accountId, current.registry);
      spec = podInstanceSpec(current, { registryAuth, internalDomain: this.#deps.internalDomain });
    } catch (err) {
      await status.settle(current, 'ERROR', `Preparing the pod failed: ${(err as Error).message}`);
      return null;
    }
    this.#known.add(pod.id);
    try {
      const { status: live } = await instances.launch(spec, current.dataCenterId);
      return { pod: current, live };
    } catch (err) {
      // What the reclaim ladder took back for it is not stopped yet: the pod waits, saying so (the sweep tries again).
      if (err instanceof NotCleared) {
        await status.explain(current, err.message);
        return null;
      }
      if (await this.#waitForRuntime(current)) return null;
      // Another replica launched it while this one prepared (the runtime learned of its instance
      // meanwhile): observed, not started a second time, and not an error of the pod.
      const live = await this.#deps.runtime.inspect(pod.id).catch(() => null);
      if (live && (live.state === 'starting' || live.state === 'running' || live.state === 'suspended'))
        return { pod: current, live };
      await status.settle(current, 'ERROR', (err as Error).message || 'the instance could not be started');
      return null;
    }
  }

  /**
   * A GPU pod stored before allotments holds no vCPUs or memory: its next instance gets its GPU
   * type's allotment on its host, reserved in place of what it held and stored on the pod. When
   * the host cannot give it now, the pod goes to ERROR saying so (null).
   */
  async #allot(pod: PodRecord): Promise<PodRecord | null> {
    const { inventory, instances } = this.#deps;
    const allotment = pod.hostId ? inventory.gpuAllotmentOn(pod.hostId, pod.gpuCount) : null;
    if (allotment === null) return pod;
    const next = { ...pod, vcpuCount: allotment.vcpus, memoryGb: allotment.memoryGb };
    const held = inventory.allocationOf(pod.id);
    instances.release(pod.id);
    const reserved = instances.reserve(pod.id, allocationOf(next));
    if (!reserved.ok) {
      if (held) instances.reserve(pod.id, held);
      await this.#deps.status.settle(
        pod,
        'ERROR',
        `Its host cannot give it the ${allotment.vcpus} vCPUs and ${allotment.memoryGb} GB of memory ${pod.gpuCount === 1 ? 'its GPU comes' : `its ${pod.gpuCount} GPUs come`} with now: ${reserved.reason}`,
      );
      return null;
    }
    return this.#deps.status.update(pod, { vcpuCount: allotment.vcpus, memoryGb: allotment.memoryGb });
  }

  /**
   * While the runtime is unavailable a launch waits: not an error of the pod, which keeps its
   * status with the reason and launches once the runtime is back (the sweep comes again). A pod
   * whose host left the fleet for good does not wait.
   */
  async #waitForRuntime(pod: PodRecord): Promise<boolean> {
    const away = this.#deps.instances.away(pod.hostId ?? undefined);
    if (away === null) return false;
    // A host that left the fleet for good (a revoked fleet host) is not waited for: the start
    // fails, saying why, and the pod ends in ERROR.
    if (pod.hostId !== null && this.#deps.inventory.host(pod.hostId) === undefined) return false;
    await this.#deps.status.explain(pod, `waiting for the runtime: ${away}`);
    return true;
  }
}

const isLive = (pod: PodRecord): boolean =>
  pod.status === 'PROVISIONING' || pod.status === 'STARTING' || pod.status === 'RUNNING';
