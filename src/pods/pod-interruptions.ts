/**
 * What becomes of the holds the reclaim ladder took back for a new placement (docs/pods.md,
 * "Interruptible pods and the reclaim ladder"): each interrupted pod, whoever owns it, is stopped
 * with its container discarded and settles EXITED saying why; its billing stops with it. The new
 * instance's launch waits until they are stopped, since they still use its GPUs and ports until then
 * (an instance its engine would not stop is retried at each launch; ../instances/instances.ts NotCleared).
 * A suspended serverless worker taken back (FlashBoot) is removed by its reclaimer
 * (../serverless/worker-reclaim.ts). The new holder may itself be a pod or a worker.
 */
import type { ReclaimedHold, ReclaimRight } from '../domain/placement-request.js';
import { interruptionReason } from '../domain/reclaim-ladder.js';
import type { Instances } from '../instances/instances.js';
import type { Inventory } from '../inventory/inventory.js';
import type { ResourceQuota } from '../quotas/resource-quota.js';

import type { PodController } from './pod-controller.js';

/** How a suspended worker's removal went: its account (null when it was gone already), and the removal's failure. */
export interface WorkerReclaimOutcome {
  accountId: string | null;
  failed: Error | null;
}

/** Removes a suspended serverless worker placement took back (../serverless/worker-reclaim.ts). */
export interface SuspendedWorkerReclaimer {
  reclaim(workerId: string, reason: string): Promise<WorkerReclaimOutcome>;
}

export interface PodInterruptionsDeps {
  /** Interrupts pods taken back. @default none (a worker's launch takes no pod) */
  controller?: Pick<PodController, 'interrupt'> | undefined;
  /** Removes suspended workers taken back. @default none */
  suspendedWorkers?: SuspendedWorkerReclaimer | undefined;
  instances: Pick<Instances, 'startAfter'>;
  inventory: Pick<Inventory, 'restore'>;
  /** Told of each interrupted pod's account, so its quota shows the room at once. @default none */
  quota?: Pick<ResourceQuota, 'released'> | undefined;
  /** Where an interruption that failed is reported. */
  onError: (err: unknown, holderId: string) => void;
}

/** The holds one placement (or one cluster's placements) took back, until they are interrupted or given back. */
export class Reclaims {
  readonly #taken: Array<{ holds: ReclaimedHold[]; right: ReclaimRight }> = [];

  /** Adds what a placement answered (nothing when it took none). */
  add(reclaimed: readonly ReclaimedHold[] | undefined, right: ReclaimRight | undefined): void {
    if (reclaimed?.length && right) this.#taken.push({ holds: [...reclaimed], right });
  }

  get empty(): boolean {
    return this.#taken.length === 0;
  }

  /** The placements were rolled back (released by the caller first): the holds are reserved again as they were. */
  giveBack(deps: Pick<PodInterruptionsDeps, 'inventory'>): void {
    for (const { holds } of this.#taken.reverse()) deps.inventory.restore(holds);
    this.#taken.length = 0;
  }

  /**
   * The placements stand: each hold's holder is interrupted, and `launched` (the new instances)
   * start once all of them stopped. A holder whose instance could not be stopped (its engine
   * refused, or was away) is settled all the same; each launch of the new instances tries its
   * stop again first and, while it still cannot be stopped, does not start (the new pod waits,
   * saying why, and the sweep tries again): their GPUs are not free.
   */
  interrupt(deps: PodInterruptionsDeps, launched: readonly string[]): void {
    if (this.empty) return;
    const pending = this.#taken.flatMap(({ holds, right }) =>
      holds.map(({ holderId, hold }) => ({ holderId, hold, reason: interruptionReason(right, hold) })),
    );
    this.#taken.length = 0;
    const attempt = async ({ holderId, hold, reason }: (typeof pending)[number]): Promise<boolean> => {
      try {
        switch (hold.rung) {
          case 'interruptible': {
            if (!deps.controller) throw new Error(`no reclaimer takes back interruptible pod "${holderId}"`);
            const done = await deps.controller.interrupt(holderId, reason);
            if (done?.settled) deps.quota?.released(done.settled.accountId);
            if (!done?.failed) return true;
            deps.onError(done.failed, holderId);
            return false;
          }
          case 'suspended-worker': {
            if (!deps.suspendedWorkers) throw new Error(`no reclaimer takes back suspended worker "${holderId}"`);
            const done = await deps.suspendedWorkers.reclaim(holderId, reason);
            if (done.accountId !== null) deps.quota?.released(done.accountId);
            if (!done.failed) return true;
            deps.onError(done.failed, holderId);
            return false;
          }
          default:
            return hold.rung satisfies never;
        }
      } catch (err) {
        deps.onError(err, holderId);
        return false;
      }
    };
    const drop = (p: (typeof pending)[number]): void => {
      const at = pending.indexOf(p);
      if (at >= 0) pending.splice(at, 1);
    };
    const tryAll = async (): Promise<void> => {
      for (const p of [...pending]) if (await attempt(p)) drop(p);
    };
    let first: Promise<void> | null = Promise.all(pending.map(async (p) => (await attempt(p)) && drop(p))).then(
      () => undefined,
    );
    const cleared = async (): Promise<void> => {
      if (first) await first;
      else await tryAll();
      first = null;
      if (pending.length)
        throw new Error(
          `its GPUs are still held by interrupted ${pending.some((p) => p.hold.rung === 'interruptible') ? 'pods' : 'workers'} whose instances could not be stopped: ${pending.map((p) => p.holderId).join(', ')}`,
        );
    };
    for (const id of launched) deps.instances.startAfter(id, cleared);
  }
}
