/**
 * FlashBoot's suspended workers on the reclaim ladder (docs/pods.md, docs/serverless.md
 * "FlashBoot"): a suspended worker's hold is reclaimable on the `suspended-worker` rung from its
 * suspension to its resumption (worker-suspension.ts marks it, in the inventory's own step, so a
 * resume and a placement that takes it never both win). What placement took back is removed here:
 * the worker is stopped as the keep time's end stops it (instance removed, key revoked, row dead,
 * its usage closed), its log saying `reclaimed: …`.
 */
import type { ReclaimedHold, ReclaimRight } from '../domain/placement-request.js';
import type { Logger } from 'pino';
import type { Instances } from '../instances/instances.js';
import type { Inventory } from '../inventory/inventory.js';
import { Reclaims, type SuspendedWorkerReclaimer, type WorkerReclaimOutcome } from '../pods/pod-interruptions.js';
import type { LaunchedWorkers } from './launched-workers.js';

export interface WorkerReclaimDeps {
  workers: Pick<LaunchedWorkers, 'get' | 'stop'>;
  instances: Pick<Instances, 'reap' | 'log' | 'startAfter'>;
  inventory: Pick<Inventory, 'restore'>;
  logger: Pick<Logger, 'error'>;
}

export class WorkerReclaim implements SuspendedWorkerReclaimer {
  readonly #deps: WorkerReclaimDeps;

  constructor(deps: WorkerReclaimDeps) {
    this.#deps = deps;
  }

  /**
   * Removes a suspended worker placement took back (its reservation is the new holder's already).
   * Called again while its instance could not be removed (the new instance's launch waits): it
   * tries the removal again. A worker stopped meanwhile (its keep time ended) is only made sure of.
   */
  async reclaim(workerId: string, reason: string): Promise<WorkerReclaimOutcome> {
    const m = this.#deps.workers.get(workerId);
    if (m && !m.stopping) await this.#deps.instances.log(workerId, `reclaimed: ${reason}`);
    const failed = m
      ? await this.#deps.workers.stop(workerId, 'reclaimed for another placement')
      : await this.#deps.instances.reap(workerId);
    return {
      accountId: m?.accountId ?? null,
      failed: failed === null ? null : new Error(`removing worker ${workerId} failed: ${failed}`),
    };
  }

  /**
   * A worker's launch took other endpoints' suspended workers back (launched-workers.ts
   * `onReclaimed`): they are removed, and the new worker starts once they are gone.
   */
  removeFor(workerId: string, reclaimed: ReclaimedHold[], right: ReclaimRight): void {
    const reclaims = new Reclaims();
    reclaims.add(reclaimed, right);
    const { instances, inventory, logger } = this.#deps;
    reclaims.interrupt(
      {
        suspendedWorkers: this,
        instances,
        inventory,
        onError: (err, holderId) => logger.error({ err, holderId }, 'removing a reclaimed worker failed'),
      },
      [workerId],
    );
  }
}

/** The reclaimer as pods call it: wired once the autoscaler that owns the workers exists (compose). */
export class LateWorkerReclaim implements SuspendedWorkerReclaimer {
  target: SuspendedWorkerReclaimer | null = null;

  reclaim(workerId: string, reason: string): Promise<WorkerReclaimOutcome> {
    if (!this.target) return Promise.reject(new Error(`no reclaimer takes back suspended worker "${workerId}"`));
    return this.target.reclaim(workerId, reason);
  }
}
