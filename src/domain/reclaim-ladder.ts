/**
 * The reclaim ladder: what placement may take back when no free capacity fits a request, and in
 * which order (docs/pods.md, "Interruptible pods and the reclaim ladder"). Pure.
 *
 * Capacity is shared by every account, so the ladder is too. Its rungs, taken in this order:
 * 1. `suspended-worker`: what a suspended (idle) serverless worker holds (FlashBoot): the
 *    requester's own account's first, then the one suspended longest. An autoscaler's launch
 *    takes only these, and never its own endpoint's (it resumes those).
 * 2. `interruptible`: interruptible (spot) pods, the lowest bid per GPU first; of equal bids the
 *    newest hold first (it has run the least).
 * Nothing else is ever taken back: a running on-demand pod or a worker that is not suspended
 * keeps its machine.
 */
import type { PlacementRequest, ReclaimableHold, ReclaimRight, ReclaimRung } from './placement-request.js';
import { fitsResources, type FreeResources } from './placement-sieve.js';

/** The hold of a worker suspended at `since` (FlashBoot): the first rung, its account's and endpoint's. */
export const suspendedHold = (endpointId: string, accountId: string, since: number): ReclaimableHold => ({
  rung: 'suspended-worker',
  bidPerGpu: 0,
  accountId,
  endpointId,
  since,
});

/** The rungs in the order placement takes from them. */
const RECLAIM_RUNGS: readonly ReclaimRung[] = ['suspended-worker', 'interruptible'];

/** Whether `right` may take `hold` back. */
export function mayReclaim(right: ReclaimRight, hold: ReclaimableHold): boolean {
  if (hold.rung === 'suspended-worker') return right.kind !== 'worker' || hold.endpointId !== right.endpointId;
  if (right.kind === 'worker') return false;
  return right.kind === 'on-demand' || hold.bidPerGpu < right.bidPerGpu;
}

/** What one holder gives back on its host when it is taken back. */
export interface Reclaimable {
  holderId: string;
  hold: ReclaimableHold;
  gpus: number;
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  ports: number;
}

/**
 * The order holds are taken in: rung; on the suspended-worker rung, `accountId`'s own first (the
 * requester's, when given), then the one suspended longest, then the older holder; on the
 * interruptible rung the lowest bid, then the newest holder (ids are sortable by creation: a
 * larger id is newer). Negative when `a` goes first.
 */
export function compareReclaimables(a: Reclaimable, b: Reclaimable, accountId?: string): number {
  if (a.hold.rung !== b.hold.rung) return RECLAIM_RUNGS.indexOf(a.hold.rung) - RECLAIM_RUNGS.indexOf(b.hold.rung);
  if (a.hold.rung === 'suspended-worker') {
    if (accountId !== undefined) {
      const own = Number(b.hold.accountId === accountId) - Number(a.hold.accountId === accountId);
      if (own !== 0) return own;
    }
    const since = (a.hold.since ?? 0) - (b.hold.since ?? 0);
    if (since !== 0) return since;
    return a.holderId < b.holderId ? -1 : a.holderId > b.holderId ? 1 : 0;
  }
  if (a.hold.bidPerGpu !== b.hold.bidPerGpu) return a.hold.bidPerGpu - b.hold.bidPerGpu;
  return a.holderId > b.holderId ? -1 : a.holderId < b.holderId ? 1 : 0;
}

/** Whether the request fits a host with `free` resources: its GPUs, then what they come with, disk and ports. */
const fits = (request: PlacementRequest, free: FreeResources): boolean =>
  (request.kind !== 'gpu' || free.freeGpus >= request.gpuCount) && fitsResources(request, free);

/** `free` with what `taken` would give back added. */
function freedBy(free: FreeResources, taken: readonly Reclaimable[], skip: number): FreeResources {
  let gpus = 0;
  let vcpus = 0;
  let memoryGb = 0;
  let diskGb = 0;
  let ports = 0;
  taken.forEach((r, i) => {
    if (i === skip) return;
    gpus += r.gpus;
    vcpus += r.vcpus;
    memoryGb += r.memoryGb;
    diskGb += r.diskGb;
    ports += r.ports;
  });
  return {
    hostId: free.hostId,
    terms: free.terms,
    freeGpus: free.freeGpus + gpus,
    freeVcpus: free.freeVcpus + vcpus,
    freeMemoryGb: free.freeMemoryGb + memoryGb,
    freeDiskGb: free.freeDiskGb + diskGb,
    freePorts: free.freePorts + ports,
  };
}

/**
 * The holds to take back on one host so the request fits it, or null when even every hold the
 * request may take would not make room. Takes them in ladder order until the request fits, then
 * gives back any of those (the highest first) it turns out not to need: nobody is interrupted
 * for nothing. `holds` are the host's reclaimable holds, in any order.
 */
export function planReclaim(
  request: PlacementRequest,
  right: ReclaimRight,
  free: FreeResources,
  holds: readonly Reclaimable[],
): Reclaimable[] | null {
  const eligible = holds
    .filter((h) => mayReclaim(right, h.hold))
    .sort((a, b) => compareReclaimables(a, b, right.accountId));
  const taken: Reclaimable[] = [];
  let room = false;
  for (const hold of eligible) {
    taken.push(hold);
    if (fits(request, freedBy(free, taken, -1))) {
      room = true;
      break;
    }
  }
  if (!room) return null;
  for (let i = taken.length - 2; i >= 0; i--) if (fits(request, freedBy(free, taken, i))) taken.splice(i, 1);
  return taken;
}

/**
 * Between two hosts' plans, the one that interrupts less: its last (highest) hold lower on the
 * ladder, then fewer holds. 0 when they are alike (the caller's placement order decides).
 */
export function compareReclaimPlans(a: readonly Reclaimable[], b: readonly Reclaimable[], accountId?: string): number {
  return compareReclaimables(worstOf(a, accountId), worstOf(b, accountId), accountId) || a.length - b.length;
}

/** The last hold of a (non-empty) plan in ladder order (for the requester's `accountId`). */
export const worstOf = (plan: readonly Reclaimable[], accountId?: string): Reclaimable =>
  plan.reduce((w, r) => (compareReclaimables(r, w, accountId) > 0 ? r : w));

/** Who a hold was taken back for, in words. */
function takerOf(right: ReclaimRight, hold: ReclaimableHold): string {
  switch (right.kind) {
    case 'on-demand':
      return 'an on-demand pod';
    case 'worker':
      return `a worker of endpoint ${right.endpointId}`;
    case 'bid':
      return hold.rung === 'interruptible'
        ? `an interruptible pod bidding $${right.bidPerGpu}/GPU/h (this pod bid $${hold.bidPerGpu})`
        : `an interruptible pod bidding $${right.bidPerGpu}/GPU/h`;
  }
}

/** The reason an interrupted holder is given (its `statusReason`, its log line). */
export function interruptionReason(right: ReclaimRight, hold: ReclaimableHold): string {
  if (hold.rung === 'suspended-worker')
    return `its GPUs were taken back for ${takerOf(right, hold)} while it was suspended (FlashBoot); the worker is removed`;
  return `interrupted: its machine was taken back for ${takerOf(right, hold)}; its container disk is gone, its volumes are kept`;
}
