import type { DataCenterView, GpuTypeView } from '../catalog/catalog-service.js';
import { spotFloorPerGpu } from '../domain/cost.js';
import type { GraphqlContext } from './context.js';
import { gpuAvailability, type GpuAvailabilityInput, type GqlDataCenter } from './gpu-availability.js';
import type { ResolverMap } from './schema.js';

/**
 * Prices per GPU per hour; Gantry rents by the hour only, so the term prices equal the on-demand
 * one. The spot prices are the least an interruptible pod may bid in each cloud that offers the
 * type (docs/pods.md, "Interruptible pods").
 */
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
    communitySpotPrice: g.communityCloud ? spotFloorPerGpu(g, 'COMMUNITY') : null,
    secureSpotPrice: g.secureCloud ? spotFloorPerGpu(g, 'SECURE') : null,
    maxGpuCount: g.availability?.maxGpuCount ?? 0,
    maxGpuCountSecureCloud: g.secureCloud ? (g.availability?.maxGpuCount ?? 0) : 0,
    maxGpuCountCommunityCloud: g.communityCloud ? (g.availability?.maxGpuCount ?? 0) : 0,
  };
};

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
    gpuTypes: (
      _root,
      args: { input?: { id?: string | null; cluster?: boolean | null } | null },
      { services }: GraphqlContext,
    ) => {
      const id = args.input?.id;
      if (id) return [toGqlGpuType(services.catalog.getGpuType(id, { availability: true }))];
      const types = services.catalog.listGpuTypes({ availability: true });
      if (args.input?.cluster !== true) return types.map(toGqlGpuType);
      // the types a cluster can be made of: those some data center has a host of
      const offered = new Set(services.catalog.listDataCenters().flatMap((d) => d.gpuTypes));
      return types.filter((g) => offered.has(g.id)).map(toGqlGpuType);
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
};
