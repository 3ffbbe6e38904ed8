/**
 * An interruptible (spot) pod's bid (docs/pods.md, "Interruptible pods"): GPU pods only, at least
 * the floor of its GPU type in its cloud (the type's spot price), billed per GPU at the bid.
 */
import type { Catalog, Cloud } from '../domain/catalog.js';
import { spotFloorPerGpu } from '../domain/cost.js';
import { ApiError } from '../domain/errors.js';

/** @default 1000 USD per GPU per hour: the most a bid may be (a typo, not a price) */
const MAX_BID_PER_GPU = 1000;

/** How a create asks for an interruptible pod. */
export interface BidInput {
  /** An interruptible pod; without `bidPerGpu` it bids the floor. @default false */
  interruptible?: boolean;
  /** USD per GPU per hour; implies `interruptible`. */
  bidPerGpu?: number;
}

/** The floor of a GPU type in a cloud; 400 for a type not in the catalog. */
function bidFloor(gpuTypeId: string, cloud: Cloud, catalog: Pick<Catalog, 'gpuTypes'>): number {
  const type = catalog.gpuTypes.find((t) => t.id === gpuTypeId);
  if (!type) throw new ApiError('UNKNOWN_REFERENCE', `Unknown GPU type "${gpuTypeId}".`);
  return spotFloorPerGpu(type, cloud);
}

/**
 * The pod's bid per GPU, or null for an on-demand pod. A bid is a price from the floor to
 * {@link MAX_BID_PER_GPU}; below the floor it answers 400 BID_TOO_LOW naming the floor.
 */
export function resolveBid(
  input: BidInput,
  compute: { kind: 'gpu'; gpuTypeId: string } | { kind: 'cpu' },
  cloud: Cloud,
  catalog: Pick<Catalog, 'gpuTypes'>,
): number | null {
  if (input.interruptible !== true && input.bidPerGpu === undefined) return null;
  if (compute.kind !== 'gpu')
    throw new ApiError('BAD_REQUEST', 'Interruptible pods are GPU pods: a CPU pod is rented on demand only.');
  const floor = bidFloor(compute.gpuTypeId, cloud, catalog);
  const bid = input.bidPerGpu ?? floor;
  if (!Number.isFinite(bid) || bid < 0 || bid > MAX_BID_PER_GPU)
    throw new ApiError('BAD_REQUEST', `bidPerGpu must be a price from 0 to ${MAX_BID_PER_GPU} USD per GPU per hour.`);
  if (bid < floor)
    throw new ApiError(
      'BID_TOO_LOW',
      `A bid of $${bid} per GPU per hour is below the floor for "${compute.gpuTypeId}" in ${cloud} cloud: bid at least $${floor} (GraphQL lowestPrice.minimumBidPrice).`,
    );
  return bid;
}
