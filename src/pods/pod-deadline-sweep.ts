/**
 * Acts on pods' own stop and termination times (`stopAfter`, `terminateAfter`): every
 * `intervalMs`, on the replica holding the `pods` lease, each pod whose time has come (by the
 * injected clock) is stopped, or terminated, as a user's action would; the time is then forgotten,
 * so a pod started again later is not stopped again. The times are stored (`pod_deadlines`), so a
 * server that was down when one came acts on it at its first pass after starting.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { dueAction, type PodDeadline } from '../domain/pod-deadline.js';
import { isApiError } from '../domain/errors.js';
import type { PodAction } from '../domain/pod-state.js';
import type { ResourceQuota } from '../quotas/resource-quota.js';
import type { Lease } from '../store/leases.js';
import type { PodDeadlineStore } from '../store/pod-deadline-store.js';
import type { PodRecord } from '../store/pod-record.js';
import type { PodStore } from '../store/pod-store.js';

export interface PodDeadlineSweepDeps {
  deadlines: Pick<PodDeadlineStore, 'listDue' | 'clearStop' | 'delete'>;
  pods: Pick<PodStore, 'get'>;
  /** The pod controller's action (stop, terminate) under the pod's lock. */
  act: (podId: string, action: PodAction, options: { reason?: string }) => Promise<PodRecord>;
  clock: Clock;
  lease: Lease;
  logger: Logger;
  /** Told that an account gave resources back. @default none */
  quota?: Pick<ResourceQuota, 'released'>;
  /** How often the sweep looks (the pod controller's `pods.reconcileIntervalMs`). */
  intervalMs: number;
}

/** Deadlines acted on per pass: the rest wait for the next one. */
const BATCH = 200;

const iso = (ms: number) => new Date(ms).toISOString();

export class PodDeadlineSweep {
  readonly #d: PodDeadlineSweepDeps;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;

  constructor(deps: PodDeadlineSweepDeps) {
    this.#d = deps;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.sweep(), Math.max(50, this.#d.intervalMs));
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  /** One pass (what the timer runs; tests call it after moving the clock). Passes do not overlap. */
  sweep(): Promise<void> {
    if (!this.#d.lease.isHeld()) return Promise.resolve();
    this.#running ??= this.#pass().finally(() => (this.#running = null));
    return this.#running;
  }

  async #pass(): Promise<void> {
    const now = this.#d.clock.now();
    for (const due of await this.#d.deadlines.listDue(now, BATCH)) {
      try {
        await this.#actOn(due.podId, due, now);
      } catch (err) {
        // The runtime away (503) and the like: the time stays, the next pass tries again.
        this.#d.logger.warn({ err, podId: due.podId }, 'acting on a pod’s stop or termination time failed');
      }
    }
  }

  async #actOn(podId: string, deadline: PodDeadline, now: number): Promise<void> {
    const pod = await this.#d.pods.get(podId);
    if (!pod || pod.status === 'TERMINATED') return this.#d.deadlines.delete(podId);
    const action = dueAction(deadline, now);
    if (action === 'terminate') {
      await this.#act(pod, 'terminate', `terminated at its terminateAfter time ${iso(deadline.terminateAfter!)}`);
      return this.#d.deadlines.delete(podId);
    }
    if (action === 'stop') {
      // A pod already stopped (or not meant to run) has nothing to stop.
      if (pod.desiredStatus === 'RUNNING')
        await this.#act(pod, 'stop', `stopped at its stopAfter time ${iso(deadline.stopAfter!)}`);
      await this.#d.deadlines.clearStop(podId);
    }
  }

  async #act(pod: PodRecord, action: 'stop' | 'terminate', reason: string): Promise<void> {
    try {
      await this.#d.act(pod.id, action, { reason });
      this.#d.quota?.released(pod.accountId);
    } catch (err) {
      // A refusal (a locked pod's stop, a state that allows no stop) is final: the time is
      // forgotten, as a user's refused action is; other errors leave it for the next pass.
      if (!isApiError(err) || err.status >= 500) throw err;
      this.#d.logger.info(
        { podId: pod.id, code: err.code },
        `the pod's ${action} time came and was refused: ${err.detail}`,
      );
    }
  }
}
