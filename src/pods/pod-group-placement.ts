import { ApiError } from '../domain/errors.js';
import type { Placement, PlacementRequest } from '../domain/placement-request.js';
import type { Instances } from '../instances/instances.js';
import type { Inventory } from '../inventory/inventory.js';
import type { Reclaims } from './pod-interruptions.js';

/**
 * Reserves one allocation per id, all in one data center (the request's, else each one the
 * fleet has, in order), or none: synchronous, so no other create interleaves. What the reclaim
 * ladder takes back for the members goes into `reclaims`; a data center where they do not all fit
 * gives it back before the next is tried.
 */
export function placeTogether(
  instances: Pick<Instances, 'place' | 'release'>,
  inventory: Pick<Inventory, 'availableHosts' | 'restore'>,
  ids: readonly string[],
  request: PlacementRequest,
  reclaims: Reclaims,
): Placement[] {
  const centers = request.volumeDataCenterId
    ? [request.volumeDataCenterId]
    : request.dataCenterIds.length > 0
      ? request.dataCenterIds
      : [...new Set(inventory.availableHosts().map((h) => h.dataCenterId))];
  let reason = 'no host is available';
  for (const dataCenterId of centers) {
    const placements: Placement[] = [];
    for (const id of ids) {
      const placed = instances.place(id, { ...request, dataCenterIds: [dataCenterId] });
      if (!placed.ok) {
        reason = `${dataCenterId}: ${placed.reason}`;
        break;
      }
      reclaims.add(placed.reclaimed, request.reclaim);
      placements.push(placed.placement);
    }
    if (placements.length === ids.length) return placements;
    for (const id of ids) instances.release(id);
    reclaims.giveBack({ inventory });
  }
  throw new ApiError(
    'NO_CAPACITY',
    `The ${ids.length} pods do not fit together in one data center, so none was created (${reason}).`,
  );
}
