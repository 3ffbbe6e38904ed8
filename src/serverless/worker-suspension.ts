import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { Instances } from '../instances/instances.js';
import type { Inventory } from '../inventory/inventory.js';
import type { WorkerJobs } from '../jobs/worker-jobs.js';
import type { Runtime } from '../runtime/runtime.js';
import type { LaunchedWorkers } from './launched-workers.js';
import type { LbPool } from './lb-pool.js';
import type { WorkersRegistry } from './workers-registry.js';
import { suspendedHold } from '../domain/reclaim-ladder.js';

export interface WorkerSuspensionDeps {
  clock: Clock;
  runtime: Pick<Runtime, 'suspend' | 'resume' | 'canSuspend'>;
  workers: Pick<LaunchedWorkers, 'get'>;
  registry: Pick<WorkersRegistry, 'gate' | 'suspended' | 'resumed'>;
  jobs: { worker: Pick<WorkerJobs, 'workerReleased'> };
  instances: Pick<Instances, 'log'>;
  /** Where a suspended worker's hold is reclaimable (worker-reclaim.ts). */
  inventory: Pick<Inventory, 'setReclaimable'>;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** `serverless.flashboot.suspendedPricePerGpuHour`: what suspended time is billed at. @default 0 */
  suspendedPricePerGpuHour?: number | undefined;
  /** Load-balancing endpoints' workers: a suspended one leaves the balancer's ready set. @default none */
  lb?: Pick<LbPool, 'freeze' | 'thaw'> | undefined;
}

/**
 * How a suspension or a resumption went: done, or refused / failed with why; `busy`: refused
 * because the worker is not idle after all (a load-balancing worker holding or awaited by a request).
 */
export type SuspensionOutcome = { ok: true } | { ok: false; reason: string; busy?: boolean };

/**
 * Suspending and resuming a launched worker (FlashBoot, issue 30), in the order that freezes no
 * job inside it:
 * - suspend: the worker's takes are gated (they answer empty at once, nothing is handed to it),
 *   the take it holds open is ended, then the runtime freezes its instance; its row then says
 *   `suspended` (exempt from the heartbeat-loss rule; its key is kept). A job handed to it in
 *   that window goes back to the queue.
 * - resume: the runtime continues its instance, its row says `idle` and its takes are answered
 *   again; what its SDK sent before it was frozen is answered as usual.
 * While it is suspended its hold is reclaimable (worker-reclaim.ts): a resume that finds it taken
 * back is refused, saying so (the worker is being removed).
 * A load-balancing endpoint's worker first leaves the balancer's ready set, only while it holds no
 * request and none waits for it (lb-pool.ts `freeze`; so no request is frozen inside it); resumed,
 * it takes requests again once its health path answers 200.
 * A runtime (or fleet host) that cannot suspend: refused, saying so (the autoscaler then stops
 * the worker as without FlashBoot); a runtime that fails either step: the caller removes it.
 */
export class WorkerSuspension {
  readonly #deps: WorkerSuspensionDeps;

  constructor(deps: WorkerSuspensionDeps) {
    this.#deps = deps;
  }

  /** Whether the runtime can suspend a worker on `hostId`; else why not. */
  refusal(hostId: string): string | null {
    const { runtime } = this.#deps;
    if (!runtime.suspend || !runtime.resume) return 'the runtime cannot suspend instances';
    if (runtime.canSuspend && !runtime.canSuspend(hostId)) return `host ${hostId} cannot suspend instances`;
    return null;
  }

  async suspend(workerId: string, why = 'idle'): Promise<SuspensionOutcome> {
    const { registry, runtime, clock, logger } = this.#deps;
    const m = this.#deps.workers.get(workerId);
    if (!m || m.stopping) return { ok: false, reason: `worker ${workerId} is not running here` };
    if (m.suspension === 'suspended') return { ok: true };
    if (m.suspension !== null) return { ok: false, reason: `worker ${workerId} is already ${m.suspension}` };
    const refused = this.refusal(m.hostId);
    if (refused !== null) return { ok: false, reason: refused };
    const lb = this.#deps.lb;
    if (lb?.freeze(workerId, `suspended: ${why}`) === 'busy')
      return { ok: false, busy: true, reason: `worker ${workerId} holds a request, or one waits for it` };
    m.suspension = 'suspending';
    registry.gate.close(m.endpointId, workerId);
    try {
      // the other replicas' gates close before it freezes: none hands it a job meanwhile
      await registry.gate.sent();
      await runtime.suspend!(workerId);
    } catch (err) {
      registry.gate.open(m.endpointId, workerId);
      lb?.thaw(workerId, 'its suspension failed');
      m.suspension = null;
      return { ok: false, reason: `suspending failed: ${(err as Error).message}` };
    }
    const now = clock.now();
    await registry.suspended(m.endpointId, workerId, now, this.#deps.suspendedPricePerGpuHour ?? 0);
    m.suspension = 'suspended';
    m.suspendedAt = now;
    this.#deps.inventory.setReclaimable(workerId, suspendedHold(m.endpointId, m.accountId, now));
    // A job handed to it just before its takes were gated would wait, frozen, until it resumes.
    const moved = await this.#deps.jobs.worker.workerReleased(workerId, m.endpointId);
    logger.info({ workerId, endpointId: m.endpointId, why, ...moved }, 'suspended worker');
    await this.#deps.instances.log(workerId, `suspended: ${why}`);
    return { ok: true };
  }

  async resume(workerId: string, why = 'demand'): Promise<SuspensionOutcome> {
    const { registry, runtime, clock, logger } = this.#deps;
    const m = this.#deps.workers.get(workerId);
    if (!m || m.stopping) return { ok: false, reason: `worker ${workerId} is not running here` };
    if (m.suspension !== 'suspended') return { ok: false, reason: `worker ${workerId} is not suspended` };
    if (!runtime.resume) return { ok: false, reason: 'the runtime cannot resume instances' };
    // Off the ladder first, in the inventory's own step: placement took it back, or it is ours.
    if (!this.#deps.inventory.setReclaimable(workerId, null))
      return { ok: false, reason: `worker ${workerId} was reclaimed: its GPUs were taken back for another placement` };
    m.suspension = 'resuming';
    try {
      await runtime.resume(workerId);
    } catch (err) {
      m.suspension = 'suspended';
      this.#deps.inventory.setReclaimable(workerId, suspendedHold(m.endpointId, m.accountId, m.suspendedAt ?? 0));
      return { ok: false, reason: `resuming failed: ${(err as Error).message}` };
    }
    const now = clock.now();
    await registry.resumed(m.endpointId, workerId, now);
    m.suspension = null;
    m.suspendedAt = null;
    // Its idle time counts from its resumption.
    m.lastActiveAt = Math.max(m.lastActiveAt, now);
    this.#deps.lb?.thaw(workerId, `resumed: ${why}`);
    logger.info({ workerId, endpointId: m.endpointId, why }, 'resumed worker');
    await this.#deps.instances.log(workerId, `resumed: ${why}`);
    return { ok: true };
  }
}
