import type { DataCenterView, GpuTypeView } from '../catalog/catalog-service.js';
import type { GraphqlContext } from './context.js';
import { gpuAvailability, type GpuAvailabilityInput, type GqlDataCenter } from './gpu-availability.js';
import type { ResolverMap } from './schema.js';

interface LowestPriceInput {
  gpuCount?: number | null;
  secureCloud?: boolean | null;
  countryCode?: string | null;
  dataCenterId?: string | null;
}

/** Prices per GPU per hour; Gantry rents by the hour only, so the term prices equal the on-demand one. */
const toGqlGpuType = (g: GpuTypeView) => {
  const cheapest = Math.min(
    ...[g.secureCloud ? g.securePrice : Infinity, g.communityCloud ? g.communityPrice : Infinity],
  );
  return {
    ...g,
    cudaCores: null,
    oneWeekPrice: Number.isFinite(cheapest) ? cheapest : null,
    oneMonthPrice: Number.isFinite(cheapest) ? cheapest : null,
    threeMonthPrice: Number.isFinite(cheapest) ? cheapest : null,
    communitySpotPrice: null,
    secureSpotPrice: null,
    maxGpuCount: g.availability?.maxGpuCount ?? 0,
    maxGpuCountSecureCloud: g.secureCloud ? (g.availability?.maxGpuCount ?? 0) : 0,
    maxGpuCountCommunityCloud: g.communityCloud ? (g.availability?.maxGpuCount ?? 0) : 0,
  };
};
type GqlGpuType = ReturnType<typeof toGqlGpuType>;

/** A data center in the GraphQL shape (also `NetworkVolume.dataCenter`). */
export const toGqlDataCenter = (d: DataCenterView): GqlDataCenter => ({
  id: d.id,
  name: d.name,
  location: d.location,
  countryCode: d.country,
  listed: d.gpuTypes.length > 0 || d.cpuFlavors.length > 0,
  gpuTypes: d.gpuTypes,
});

export const catalogResolvers: ResolverMap<GraphqlContext> = {
  Query: {
    gpuTypes: (_root, args: { input?: { id?: string | null } | null }, { services }: GraphqlContext) => {
      const id = args.input?.id;
      if (id) return [toGqlGpuType(services.catalog.getGpuType(id, { availability: true }))];
      return services.catalog.listGpuTypes({ availability: true }).map(toGqlGpuType);
    },
    /** Each data center with the GPU types its hosts have (their availability: DataCenter.gpuAvailability). */
    dataCenters: (_root, _args, { services }: GraphqlContext): GqlDataCenter[] =>
      services.catalog.listDataCenters().map(toGqlDataCenter),
    serverlessGpuPools: (_root, _args, { services }: GraphqlContext) =>
      services.catalog
        .listPools()
        .map((p) => ({ id: p.id, displayName: p.displayName, memoryInGb: p.memoryInGb, gpuTypeIds: p.gpuTypes })),
  },
  DataCenter: {
    gpuAvailability: (dc: GqlDataCenter, args: { input?: GpuAvailabilityInput | null }, ctx: GraphqlContext) =>
      gpuAvailability(dc, args.input, ctx),
  },
  GpuType: {
    /** The on-demand price for the asked cloud (both when not said), null when no host offers it. */
    lowestPrice: (g: GqlGpuType, args: { input?: LowestPriceInput | null }) => {
      const secure = args.input?.secureCloud;
      const offers = [
        ...(secure !== false && g.secureCloud ? [g.securePrice] : []),
        ...(secure !== true && g.communityCloud ? [g.communityPrice] : []),
      ];
      const stock = g.availability;
      const count = args.input?.gpuCount ?? 1;
      const inStock = stock !== undefined && stock.maxGpuCount >= count;
      return {
        gpuName: g.displayName,
        gpuTypeId: g.id,
        minimumBidPrice: null,
        uninterruptablePrice: offers.length > 0 && inStock ? Math.min(...offers) : null,
        minMemory: null,
        minVcpu: null,
        stockStatus: inStock ? (stock?.stockStatus ?? null) : 'None',
      };
    },
  },
};
