/**
 * What compute costs, in USD per hour, from catalog prices: per GPU for GPU pods, per vCPU for
 * CPU pods, at the price of the cloud the pod runs in.
 */
import type { Catalog, Cloud, CpuFlavor, GpuType } from './catalog.js';
import type { Placement, PlacementRequest } from './placement-request.js';

/** The compute a pod (or worker) holds, as pricing sees it. */
export type PricedCompute =
  | { kind: 'gpu'; gpuTypeId: string; gpuCount: number; cloud: Cloud }
  | { kind: 'cpu'; cpuFlavorId: string; vcpuCount: number; cloud: Cloud };

/** Rounded to a millionth of a dollar so sums of float prices read as the prices people expect. */
const money = (usd: number): number => Math.round(usd * 1e6) / 1e6;

const gpuPricePerHour = (gpuType: Pick<GpuType, 'securePrice' | 'communityPrice'>, cloud: Cloud): number =>
  cloud === 'SECURE' ? gpuType.securePrice : gpuType.communityPrice;

const vcpuPricePerHour = (flavor: CpuFlavor, cloud: Cloud): number =>
  cloud === 'SECURE' ? flavor.securePricePerVcpu : flavor.communityPricePerVcpu;

/** @default 0.4: a GPU type's spot price, as a share of its on-demand price, when the catalog sets none */
const SPOT_SHARE = 0.4;

/**
 * The least an interruptible pod may bid per GPU per hour on this GPU type in this cloud: the
 * type's spot price there, by default {@link SPOT_SHARE} of the cloud's on-demand price.
 */
export function spotFloorPerGpu(
  gpuType: Pick<GpuType, 'securePrice' | 'communityPrice' | 'secureSpotPrice' | 'communitySpotPrice'>,
  cloud: Cloud,
): number {
  const spot = cloud === 'SECURE' ? gpuType.secureSpotPrice : gpuType.communitySpotPrice;
  return money(spot ?? gpuPricePerHour(gpuType, cloud) * SPOT_SHARE);
}

/** What an interruptible pod bidding `bidPerGpu` costs an hour: its bid for each GPU. */
export const bidCostPerHour = (bidPerGpu: number, gpuCount: number): number => money(bidPerGpu * gpuCount);

/**
 * Cost per hour of running the compute; 0 when the GPU type or CPU flavor is not in the catalog
 * (a type removed from the config is not charged for).
 */
export function costPerHour(compute: PricedCompute, catalog: Pick<Catalog, 'gpuTypes' | 'cpuFlavors'>): number {
  switch (compute.kind) {
    case 'gpu': {
      const gpuType = catalog.gpuTypes.find((t) => t.id === compute.gpuTypeId);
      return gpuType ? money(gpuPricePerHour(gpuType, compute.cloud) * compute.gpuCount) : 0;
    }
    case 'cpu': {
      const flavor = catalog.cpuFlavors.find((f) => f.id === compute.cpuFlavorId);
      return flavor ? money(vcpuPricePerHour(flavor, compute.cloud) * compute.vcpuCount) : 0;
    }
    default: {
      const unreachable: never = compute;
      return unreachable;
    }
  }
}

/**
 * What an instance placed for `request` costs an hour where it landed: a GPU request per GPU of
 * the type its host has, a CPU request per vCPU of its flavor, at the placement's cloud.
 */
export function placedCostPerHour(
  request: Pick<PlacementRequest, 'kind' | 'gpuCount' | 'cpuFlavorId' | 'vcpuCount'>,
  placement: Pick<Placement, 'gpuTypeId' | 'cloud'>,
  catalog: Pick<Catalog, 'gpuTypes' | 'cpuFlavors'>,
): number {
  return costPerHour(
    request.kind === 'gpu' && placement.gpuTypeId !== null
      ? { kind: 'gpu', gpuTypeId: placement.gpuTypeId, gpuCount: request.gpuCount, cloud: placement.cloud }
      : { kind: 'cpu', cpuFlavorId: request.cpuFlavorId ?? '', vcpuCount: request.vcpuCount, cloud: placement.cloud },
    catalog,
  );
}

/** Hours in use and what they cost: each interval's hours × its rate, an open one (no end) up to `now`. */
export function accruedUsage(
  intervals: ReadonlyArray<{ startedAt: number; endedAt: number | null; costPerHr: number }>,
  now: number,
): { hours: number; cost: number } {
  let hours = 0;
  let cost = 0;
  for (const u of intervals) {
    const h = Math.max(0, (u.endedAt ?? now) - u.startedAt) / 3_600_000;
    hours += h;
    cost += h * u.costPerHr;
  }
  return { hours, cost };
}
