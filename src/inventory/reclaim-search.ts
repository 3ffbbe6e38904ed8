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
import type { HostSlot } from './host-slot.js';
import type { ReclaimIndex } from './reclaim-index.js';

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
 * A GPU request reads only the holds of the GPU groups that pass its static filters, merged in
 * ladder order: each host is planned from the first of its holds met, and once the next hold is
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
      (compareReclaimPlans(holds, best.holds) ||
        typeRank - best.typeRank ||
        dcRank - best.dcRank ||
        (slot.hostId < best.slot.hostId ? -1 : 1)) < 0;
    if (better) best = { slot, holds, typeRank, dcRank };
  };
  const worstSoFar = (): Reclaimable | null => (best === null ? null : worstOf(best.holds));
  if (request.kind === 'gpu') {
    const groups = deps.index.reclaimGroups(request);
    const at = new Array<number>(groups.length).fill(0);
    const seen = new Set<HostSlot>();
    for (;;) {
      let g = -1;
      for (let i = 0; i < groups.length; i++) {
        const h = groups[i]!.holds[at[i]!];
        if (h && (g < 0 || compareReclaimables(h.gives, groups[g]!.holds[at[g]!]!.gives) < 0)) g = i;
      }
      if (g < 0) break;
      const next = groups[g]!.holds[at[g]!++]!;
      // in ladder order, nothing after a hold the request may not take may be taken either
      if (!mayReclaim(right, next.gives.hold)) break;
      const worst = worstSoFar();
      if (worst !== null && compareReclaimables(next.gives, worst) > 0) break;
      if (seen.has(next.slot)) continue;
      seen.add(next.slot);
      consider(next.slot, groups[g]!.typeRank, groups[g]!.dcRank);
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
