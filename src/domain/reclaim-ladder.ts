/**
 * The reclaim ladder: what placement may take back when no free capacity fits a request, and in
 * which order (docs/pods.md, "Interruptible pods and the reclaim ladder"). Pure.
 *
 * Capacity is shared by every account, so the ladder is too. Its rungs, taken in this order:
 * 1. `suspended-worker`: what a suspended (idle) serverless worker holds. Nothing is on this rung
 *    yet; FlashBoot's suspended workers will be.
 * 2. `interruptible`: interruptible (spot) pods, the lowest bid per GPU first; of equal bids the
 *    newest hold first (it has run the least).
 * Nothing else is ever taken back: a running on-demand pod or worker keeps its machine.
 */
import type { PlacementRequest, ReclaimableHold, ReclaimRight, ReclaimRung } from './placement-request.js';
import { fitsResources, type FreeResources } from './placement-sieve.js';

/** The rungs in the order placement takes from them. */
const RECLAIM_RUNGS: readonly ReclaimRung[] = ['suspended-worker', 'interruptible'];

/** Whether `right` may take `hold` back. */
export function mayReclaim(right: ReclaimRight, hold: ReclaimableHold): boolean {
  if (hold.rung === 'suspended-worker') return true;
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
 * The order holds are taken in: rung, then bid, then the newest holder first (ids are sortable by
 * creation: a larger id is newer). Negative when `a` goes first.
 */
export function compareReclaimables(a: Reclaimable, b: Reclaimable): number {
  if (a.hold.rung !== b.hold.rung) return RECLAIM_RUNGS.indexOf(a.hold.rung) - RECLAIM_RUNGS.indexOf(b.hold.rung);
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
  const eligible = holds.filter((h) => mayReclaim(right, h.hold)).sort(compareReclaimables);
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
export function compareReclaimPlans(a: readonly Reclaimable[], b: readonly Reclaimable[]): number {
  return compareReclaimables(worstOf(a), worstOf(b)) || a.length - b.length;
}

/** The last hold of a (non-empty) plan in ladder order. */
export const worstOf = (plan: readonly Reclaimable[]): Reclaimable =>
  plan.reduce((w, r) => (compareReclaimables(r, w) > 0 ? r : w));

/** The reason an interrupted holder is given (its `statusReason`, its log line). */
export function interruptionReason(right: ReclaimRight, hold: ReclaimableHold): string {
  const by =
    right.kind === 'on-demand'
      ? 'an on-demand pod'
      : `an interruptible pod bidding $${right.bidPerGpu}/GPU/h (this pod bid $${hold.bidPerGpu})`;
  return `interrupted: its machine was taken back for ${by}; its container disk is gone, its volumes are kept`;
}
