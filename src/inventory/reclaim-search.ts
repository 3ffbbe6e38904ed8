import type { PlacementRequest, ReclaimRight } from '../domain/placement-request.js';
import {
  compareReclaimables,
  compareReclaimPlans,
  mayReclaim,
  planReclaim,
  worstOf,
  type Reclaimable,
} from '../domain/reclaim-ladder.js';
import type { FleetIndex } from './fleet-index.js';
import type { GpuGroup } from './gpu-group.js';
import type { HostSlot } from './host-slot.js';
import { sortHolds, type ReclaimIndex } from './reclaim-index.js';

/** A group's place in the merge: the index of its next hold. */
interface Cursor {
  readonly group: GpuGroup;
  at: number;
}

const before = (a: Cursor, b: Cursor): boolean =>
  compareReclaimables(a.group.holds[a.at]!.gives, b.group.holds[b.at]!.gives) < 0;

function siftDown(heap: Cursor[], i: number): void {
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
    if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
    if (m === i) return;
    [heap[i], heap[m]] = [heap[m]!, heap[i]!];
    i = m;
  }
}

/**
 * Whether a hold met in the merge (ladder order without the requester's account) comes after the
 * worst hold of the best plan so far, for every requester: on the suspended-worker rung the
 * requester's account reorders the holds, so the merge reads that rung to its end.
 */
const pastWorst = (next: Reclaimable, worst: Reclaimable): boolean =>
  !(next.hold.rung === 'suspended-worker' && worst.hold.rung === 'suspended-worker') &&
  compareReclaimables(next, worst) > 0;

/** What the search reads of the Inventory: its reclaimable holds, its index, its hosts and those out of placement. */
interface ReclaimSearchDeps {
  reclaims: ReclaimIndex;
  index: FleetIndex;
  slots: ReadonlyMap<string, HostSlot>;
  unavailable: ReadonlySet<string>;
}

/**
 * The reclaim ladder over the available hosts with reclaimable holds (domain/reclaim-ladder.ts):
 * on each host that passes the request's static filters, the holds to take back for it to fit; the
 * plan that interrupts least wins, then the request's type and data center preference, then the
 * host id. Null when taking back what the request may take makes room nowhere.
 *
 * A GPU request reads only the holds of the GPU groups that pass its static filters (the ones
 * `findGpuHost` met on its way to finding nothing), merged in ladder order: each host is planned from the first of its holds met, and once the next hold is
 * past the worst hold of the best plan so far, no host left can do better. A CPU request (rare:
 * CPU hosts are few) reads every host with holds.
 */
export function findReclaimPlan(
  deps: ReclaimSearchDeps,
  request: PlacementRequest,
  right: ReclaimRight,
): { slot: HostSlot; holds: Reclaimable[] } | null {
  let best: { slot: HostSlot; holds: Reclaimable[]; typeRank: number; dcRank: number } | null = null;
  const consider = (slot: HostSlot, typeRank: number, dcRank: number): void => {
    const held = deps.reclaims.on(slot.hostId);
    if (!held) return;
    const holds = planReclaim(
      request,
      right,
      slot,
      [...held.values()].map((h) => h.gives),
    );
    if (holds === null) return;
    const better =
      best === null ||
      (compareReclaimPlans(holds, best.holds, right.accountId) ||
        typeRank - best.typeRank ||
        dcRank - best.dcRank ||
        (slot.hostId < best.slot.hostId ? -1 : 1)) < 0;
    if (better) best = { slot, holds, typeRank, dcRank };
  };
  const worstSoFar = (): Reclaimable | null => (best === null ? null : worstOf(best.holds, right.accountId));
  if (request.kind === 'gpu') {
    // A heap of the groups' cursors, by the hold each points at: the holds of every group met in
    // ladder order, at log(groups) a step.
    // a group none of whose hosts has as many GPUs free or reclaimable as asked cannot make room
    const need = request.gpuCount;
    const heap: Cursor[] = [];
    for (const group of deps.index.reclaimGroups(request)) {
      if (group.maxPotential < need) continue;
      sortHolds(group);
      heap.push({ group, at: 0 });
    }
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftDown(heap, i);
    const seen = new Set<HostSlot>();
    while (heap.length > 0) {
      const top = heap[0]!;
      const next = top.group.holds[top.at]!;
      if (++top.at < top.group.holds.length) siftDown(heap, 0);
      else {
        const last = heap.pop()!;
        if (heap.length > 0) {
          heap[0] = last;
          siftDown(heap, 0);
        }
      }
      // in ladder order, nothing after a hold the request may not take may be taken either (but a
      // suspended worker of the launching endpoint's own is only skipped)
      if (!mayReclaim(right, next.gives.hold)) {
        if (next.gives.hold.rung === 'suspended-worker') continue;
        break;
      }
      const worst = worstSoFar();
      if (worst !== null && pastWorst(next.gives, worst)) break;
      if (seen.has(next.slot)) continue;
      seen.add(next.slot);
      if (next.slot.freeGpus + next.slot.reclaimGpus >= need) consider(next.slot, top.group.typeRank, top.group.dcRank);
    }
  } else {
    for (const [hostId] of deps.reclaims.hosts()) {
      const slot = deps.slots.get(hostId);
      const rank = slot && !deps.unavailable.has(hostId) ? deps.index.rankOf(slot, request) : null;
      if (slot && rank) consider(slot, rank.typeRank, rank.dcRank);
    }
  }
  return best;
}
