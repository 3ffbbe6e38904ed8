import type { Clock } from '../domain/clock.js';
import { newSortableId } from '../domain/ids.js';
import type { PodStatus } from '../domain/pod-state.js';
import type { PodEventSink } from './pod-events.js';
import type { SystemLogWriter } from '../logs/system-log.js';
import type { Inventory } from '../inventory/inventory.js';
import type { PodChanges, PodRecord } from '../store/pod-record.js';
import type { PodStore } from '../store/pod-store.js';

export interface PodStatusWriterDeps {
  store: PodStore;
  inventory: Pick<Inventory, 'release'>;
  clock: Clock;
  events: PodEventSink;
  /** The pod's `system` log lines (docs/logs.md). @default none written */
  systemLog?: SystemLogWriter | undefined;
}

/**
 * Writes a pod's status: each change is stored with its time (`statusChangedAt` when it differs) and, when the status differs from
 * the one read, announced as a `pod:status` event. Each answers the pod as it stands afterwards.
 * Usage intervals follow the status: RUNNING opens one, EXITED and ERROR close it.
 */
export class PodStatusWriter {
  readonly #deps: PodStatusWriterDeps;

  constructor(deps: PodStatusWriterDeps) {
    this.#deps = deps;
  }

  /** Into RUNNING: opens the next usage interval (every way into STARTING closed the previous one). */
  async running(pod: PodRecord): Promise<void> {
    const now = this.#deps.clock.now();
    await this.#deps.store.markRunning(
      pod.id,
      { status: 'RUNNING', statusReason: null, startedAt: now, updatedAt: now, statusChangedAt: now },
      { id: newSortableId(), podId: pod.id, accountId: pod.accountId, costPerHr: pod.costPerHr, startedAt: now },
    );
    await this.log(pod.id, pod.status === 'STARTING' ? 'ready: its health check passed' : 'started');
    // An instance that was running as soon as it launched passed through STARTING unrecorded.
    if (pod.status === 'PROVISIONING') this.emit(pod, 'STARTING', now);
    this.emit(pod.status === 'PROVISIONING' ? { ...pod, status: 'STARTING' } : pod, 'RUNNING', now);
  }

  /** Into EXITED or ERROR: the reservation is released, usage ends, the pod stays stopped. */
  async settle(pod: PodRecord, status: 'EXITED' | 'ERROR', reason: string | null): Promise<PodRecord> {
    const { store } = this.#deps;
    const now = this.#deps.clock.now();
    const changes: PodChanges = {
      status,
      desiredStatus: 'EXITED',
      statusReason: reason,
      updatedAt: now,
      ...(pod.status !== status ? { statusChangedAt: now } : {}),
    };
    await this.log(
      pod.id,
      status === 'ERROR'
        ? `ERROR: ${reason ?? 'the instance failed'}`
        : reason === 'stopped by user' || reason?.startsWith('interrupted: ')
          ? reason
          : `exited: ${reason ?? 'it ended'}`,
    );
    await store.withTransaction(async (tx) => {
      await store.update(pod.id, changes, tx);
      await store.closeUsage(pod.id, now, tx);
    });
    this.#deps.inventory.release(pod.id);
    if (pod.status !== status) this.emit(pod, status, now);
    return { ...pod, ...changes };
  }

  /** Into TERMINATED, for good: usage ends; `released` gives back what it held, before it is announced. */
  async terminated(pod: PodRecord, released: () => void): Promise<PodRecord> {
    const { store } = this.#deps;
    const now = this.#deps.clock.now();
    const changes: PodChanges = {
      status: 'TERMINATED',
      desiredStatus: 'TERMINATED',
      terminatedAt: now,
      updatedAt: now,
      statusChangedAt: now,
    };
    await store.withTransaction(async (tx) => {
      await store.update(pod.id, changes, tx);
      await store.closeUsage(pod.id, now, tx);
    });
    released();
    this.emit(pod, 'TERMINATED', now);
    await this.log(pod.id, 'terminated');
    return { ...pod, ...changes };
  }

  async transition(pod: PodRecord, status: PodStatus, extra: PodChanges = {}): Promise<PodRecord> {
    const now = this.#deps.clock.now();
    const changes: PodChanges = {
      ...extra,
      status,
      updatedAt: now,
      ...(pod.status !== status ? { statusChangedAt: now } : {}),
    };
    if (status === 'STARTING' && pod.status !== 'STARTING')
      await this.log(pod.id, pod.status === 'PROVISIONING' ? 'started; waiting until it is ready' : 'restarting');
    await this.#deps.store.update(pod.id, changes);
    if (pod.status !== status) this.emit(pod, status, now);
    return { ...pod, ...changes };
  }

  /**
   * The pod keeps its status; `reason` says why its instance cannot be seen or started for now
   * (null: it is seen again, and live pods carry no other reason).
   */
  async explain(pod: PodRecord, reason: string | null): Promise<void> {
    if (pod.statusReason !== reason) await this.update(pod, { statusReason: reason });
  }

  /** Changes other than the status. */
  async update(pod: PodRecord, changes: PodChanges): Promise<PodRecord> {
    const all = { ...changes, updatedAt: this.#deps.clock.now() };
    await this.#deps.store.update(pod.id, all);
    return { ...pod, ...all };
  }

  /** A `system` line of the pod's log. */
  async log(podId: string, line: string): Promise<void> {
    await this.#deps.systemLog?.write(podId, line);
  }

  emit(pod: PodRecord, to: PodStatus, at: number): void {
    this.#deps.events.emit('pod:status', {
      podId: pod.id,
      accountId: pod.accountId,
      gpuTypeId: pod.gpuTypeId,
      from: pod.status,
      to,
      at,
    });
  }
}
