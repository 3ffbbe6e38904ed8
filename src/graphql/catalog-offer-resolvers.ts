/**
 * The catalog as offer listings read it: a GPU type's lowest price and stock for a GPU count in
 * one data center or country (what dstack's offer catalog, gpuhunt, asks once per data center and
 * per country), the types clusters can be made of, and the CPU flavors with their stock per data
 * center. Every figure comes from the catalog service REST's `/v2/catalog` routes use.
 */
import type { AvailabilityLevel, CatalogGpuType, GpuAvailabilityQuery } from '../catalog/catalog-v2.js';
import type { GpuTypeView } from '../catalog/catalog-service.js';
import type { Cloud, CpuFlavor } from '../domain/catalog.js';
import { spotFloorPerGpu } from '../domain/cost.js';
import { perGpuDefault } from '../domain/gpu-allotment.js';
import { toGqlDataCenter } from './catalog-resolvers.js';
import type { GraphqlContext } from './context.js';
import type { ResolverMap } from './schema.js';

interface LowestPriceInput {
  gpuCount?: number | null;
  secureCloud?: boolean | null;
  countryCode?: string | null;
  dataCenterId?: string | null;
  minCudaVersion?: string | null;
  allowedCudaVersions?: Array<string | null> | null;
}

/** The stock words GraphQL answers (High, Medium, Low), null for none, as the platform does. */
const stockWord = (level: AvailabilityLevel | undefined): string | null =>
  level === 'HIGH' ? 'High' : level === 'MEDIUM' ? 'Medium' : level === 'LOW' ? 'Low' : null;

const LEVEL_ORDER: readonly AvailabilityLevel[] = ['NONE', 'LOW', 'MEDIUM', 'HIGH'];
const best = (levels: Array<AvailabilityLevel | undefined>): AvailabilityLevel =>
  levels.reduce<AvailabilityLevel>(
    (a, b) => (b !== undefined && LEVEL_ORDER.indexOf(b) > LEVEL_ORDER.indexOf(a) ? b : a),
    'NONE',
  );

/** The level of one catalog answer: in the data center asked for, else overall. */
const levelOf = (view: CatalogGpuType, dataCenterId: string | null): AvailabilityLevel =>
  dataCenterId === null
    ? (view.availability ?? 'NONE')
    : (view.dataCenters?.find((d) => d.id === dataCenterId)?.availability ?? 'NONE');

/** A country code as one or none: an empty string asks for every country. */
const countryOf = (input: LowestPriceInput | null | undefined): string | null =>
  input?.countryCode ? input.countryCode.toUpperCase() : null;

export const catalogOfferResolvers: ResolverMap<GraphqlContext> = {
  Query: {
    countryCodes: (_root, _args, { services }: GraphqlContext) => [
      ...new Set(
        services.catalog
          .listDataCenters()
          .filter((d) => d.gpuTypes.length > 0 || d.cpuFlavors.length > 0)
          .map((d) => d.country),
      ),
    ],
    cpuFlavors: (_root, _args, { services }: GraphqlContext) => services.catalog.listCpuFlavors(),
  },
  GpuType: {
    /**
     * The on-demand price and the least bid for the cloud asked (the lower of both when not said);
     * null where nothing is free.
     */
    lowestPrice: (g: GpuTypeView, args: { input?: LowestPriceInput | null }, { services }: GraphqlContext) => {
      const input = args.input ?? {};
      const count = Math.max(1, input.gpuCount ?? 1);
      const clouds: Cloud[] =
        input.secureCloud === true ? ['SECURE'] : input.secureCloud === false ? ['COMMUNITY'] : ['SECURE', 'COMMUNITY'];
      const country = countryOf(input);
      const dataCenterId = input.dataCenterId || null;
      const cudaVersions = (input.allowedCudaVersions ?? []).filter((v): v is string => typeof v === 'string');
      const levels = clouds.map((cloud) => {
        const query: GpuAvailabilityQuery = {
          products: ['POD'],
          count,
          cloud,
          countryCodes: country === null ? null : [country],
          cudaVersions,
          minCudaVersion: input.minCudaVersion || null,
        };
        return { cloud, level: levelOf(services.catalog.gpuType(g.id, query), dataCenterId) };
      });
      const inStock = levels.filter((l) => l.level !== 'NONE');
      const prices = inStock.map((l) => (l.cloud === 'SECURE' ? g.securePrice : g.communityPrice));
      // the least an interruptible pod may bid there (docs/pods.md)
      const bids = inStock.map((l) => spotFloorPerGpu(g, l.cloud));
      const perGpu = perGpuDefault(g);
      return {
        gpuName: g.displayName,
        gpuTypeId: g.id,
        minimumBidPrice: bids.length > 0 ? Math.min(...bids) : null,
        uninterruptablePrice: prices.length > 0 ? Math.min(...prices) : null,
        minMemory: perGpu.memoryGb * count,
        minVcpu: perGpu.vcpus * count,
        stockStatus: stockWord(best(levels.map((l) => l.level))),
        compliance: [],
        countryCode: country,
      };
    },
    sixMonthPrice: (g: { oneMonthPrice?: number | null }) => g.oneMonthPrice ?? null,
    minPodGpuCount: () => 1,
    nodeGroupDatacenters: (g: GpuTypeView, _args, { services }: GraphqlContext) =>
      services.catalog
        .listDataCenters()
        .filter((d) => d.gpuTypes.includes(g.id))
        .map(toGqlDataCenter),
    clusterPrice: (g: GpuTypeView) => g.securePrice,
  },
  CpuFlavor: {
    groupId: (f: CpuFlavor, _args, { services }: GraphqlContext) => services.catalog.cpuType(f.id, null).group,
    minVcpu: (f: CpuFlavor) => Math.min(...f.vcpuOptions),
    maxVcpu: (f: CpuFlavor) => Math.max(...f.vcpuOptions),
    diskLimitPerVcpu: () => null,
    specifics: (
      f: CpuFlavor,
      args: { input?: { dataCenterId?: string | null } | null },
      { services }: GraphqlContext,
    ) => {
      const view = services.catalog.cpuType(f.id, { products: ['POD'], vcpuCount: null });
      const dataCenterId = args.input?.dataCenterId || null;
      const level =
        dataCenterId === null ? view.availability : view.dataCenters?.find((d) => d.id === dataCenterId)?.availability;
      return { stockStatus: stockWord(level), securePrice: f.securePricePerVcpu * Math.min(...f.vcpuOptions) };
    },
  },
};
