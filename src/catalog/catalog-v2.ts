/**
 * The catalog in the public REST v2 shapes (GpuType, CpuType, DataCenter), with availability read
 * from the inventory's available hosts and what is reserved on them: never an invented figure.
 *
 * A level (NONE / LOW / MEDIUM / HIGH) counts units of the requested size: for GPUs, how many
 * pods of `count` GPUs (with the vCPUs and memory they come with, domain/gpu-allotment.ts: a host
 * can run out of CPUs or memory before GPUs) the hosts could still take, against how many they
 * could take empty; for CPU flavors, how many instances of `vcpuCount` vCPUs (with the flavor's
 * memory per vCPU).
 */
import type { Catalog, Cloud, CpuFlavor, DataCenter, GpuType, Host } from '../domain/catalog.js';
import { spotFloorPerGpu } from '../domain/cost.js';
import { cudaAccepts, cudaCode, cudaRule, compareCudaVersions } from '../domain/cuda.js';
import { gpuHostTerms, memoryCapacity, placeableUnits, vcpuCapacity } from '../domain/gpu-allotment.js';
import type { HostUsage } from '../domain/placement.js';

export type AvailabilityLevel = 'NONE' | 'LOW' | 'MEDIUM' | 'HIGH';
type CatalogProduct = 'POD' | 'CLUSTER' | 'SERVERLESS';
type DataCenterRegion =
  | 'NORTH_AMERICA'
  | 'SOUTH_AMERICA'
  | 'EUROPE'
  | 'ASIA'
  | 'MIDDLE_EAST'
  | 'AFRICA'
  | 'OCEANIA'
  | 'ANTARCTICA'
  | 'UNKNOWN';

type Compliance =
  | 'GDPR'
  | 'ISO_IEC_27001'
  | 'ISO_14001'
  | 'PCI_DSS'
  | 'HITRUST'
  | 'SOC_1_TYPE_2'
  | 'SOC_2_TYPE_2'
  | 'SOC_3_TYPE_2'
  | 'ITAR'
  | 'FISMA_HIGH'
  | 'HIPAA'
  | 'RENEWABLE';

export interface DataCenterAvailability {
  id: string;
  name: string;
  availability: AvailabilityLevel;
}

export interface CatalogGpuType {
  id: string;
  name: string;
  pool: string | null;
  manufacturer: 'NVIDIA' | 'AMD' | 'UNKNOWN';
  memory: number;
  secure: boolean;
  community: boolean;
  /** USD per GPU-hour; `*Spot`: the least bid of an interruptible pod (its floor, docs/pods.md) */
  price: { secure: number; community: number; serverless?: number; secureSpot: number; communitySpot: number };
  maxCount: { secure: number; community: number };
  availability?: AvailabilityLevel;
  dataCenters?: DataCenterAvailability[];
  cudaVersions?: Array<{ version: string; available: boolean }>;
}

export interface CatalogCpuType {
  id: string;
  name: string;
  group: string;
  vcpu: { min: number; max: number };
  ramGbPerVcpu: number;
  price: { securePerVcpu: number; serverlessPerVcpu: number; communityPerVcpu: number };
  availability?: AvailabilityLevel;
  dataCenters?: DataCenterAvailability[];
}

export interface CatalogDataCenter {
  id: string;
  name: string;
  region: DataCenterRegion;
  globalNetwork: boolean;
  networkVolumeTypes: Array<'STANDARD' | 'HIGH_PERFORMANCE'>;
  compliance: Compliance[];
  gpuAvailability?: Array<{ id: string; name: string; availability: AvailabilityLevel }>;
  cpuAvailability?: Array<{ id: string; name: string; availability: AvailabilityLevel }>;
}

/** What `include=AVAILABILITY` on the GPU routes asks for; absent = no availability. */
export interface GpuAvailabilityQuery {
  products: CatalogProduct[];
  count: number;
  cloud: Cloud;
  /** null = every country. */
  countryCodes: string[] | null;
  cudaVersions: string[];
  minCudaVersion: string | null;
}

export interface CpuAvailabilityQuery {
  products: Array<'POD' | 'SERVERLESS'>;
  /** null = the flavor's smallest vCPU option. */
  vcpuCount: number | null;
}

export interface DataCenterFilter {
  regions: DataCenterRegion[];
  networkVolumeTypes: Array<'STANDARD' | 'HIGH_PERFORMANCE'>;
  compliance: Compliance[];
  globalNetwork: boolean | null;
}

/** The available hosts and what is reserved on each, as the inventory reports them. */
export interface FleetView {
  hosts: readonly Host[];
  usage: ReadonlyMap<string, HostUsage>;
}

/** Same thresholds as the stock status GraphQL shows: NONE, LOW (≤ 2 units or under a fifth), MEDIUM (under half), HIGH. */
function availabilityLevel(available: number, total: number): AvailabilityLevel {
  if (available <= 0 || total <= 0) return 'NONE';
  if (available <= 2 || available < total * 0.2) return 'LOW';
  if (available < total * 0.5) return 'MEDIUM';
  return 'HIGH';
}

const REGION_BY_COUNTRY: Record<string, DataCenterRegion> = Object.fromEntries([
  ...['US', 'CA', 'MX'].map((c) => [c, 'NORTH_AMERICA'] as const),
  ...['BR', 'AR', 'CL', 'CO', 'PE', 'UY'].map((c) => [c, 'SOUTH_AMERICA'] as const),
  ...[
    'AT',
    'BE',
    'BG',
    'CH',
    'CY',
    'CZ',
    'DE',
    'DK',
    'EE',
    'ES',
    'FI',
    'FR',
    'GB',
    'GR',
    'HR',
    'HU',
    'IE',
    'IS',
    'IT',
    'LT',
    'LU',
    'LV',
    'MT',
    'NL',
    'NO',
    'PL',
    'PT',
    'RO',
    'RS',
    'SE',
    'SI',
    'SK',
    'UA',
  ].map((c) => [c, 'EUROPE'] as const),
  ...['CN', 'HK', 'IN', 'ID', 'JP', 'KR', 'MY', 'PH', 'SG', 'TH', 'TW', 'VN'].map((c) => [c, 'ASIA'] as const),
  ...['AE', 'BH', 'IL', 'JO', 'KW', 'OM', 'QA', 'SA', 'TR'].map((c) => [c, 'MIDDLE_EAST'] as const),
  ...['EG', 'KE', 'MA', 'NG', 'ZA'].map((c) => [c, 'AFRICA'] as const),
  ...['AU', 'NZ'].map((c) => [c, 'OCEANIA'] as const),
  ['AQ', 'ANTARCTICA'] as const,
]);

/** The continent of a data center, from its two-letter country code. */
const regionOf = (dataCenter: DataCenter): DataCenterRegion =>
  REGION_BY_COUNTRY[dataCenter.country.toUpperCase()] ?? 'UNKNOWN';

const manufacturerOf = (gpuType: GpuType): CatalogGpuType['manufacturer'] => {
  const m = gpuType.manufacturer.toUpperCase();
  return m === 'NVIDIA' || m === 'AMD' ? m : 'UNKNOWN';
};

/** `cpu3c` → `Gen 3`: the generation the flavor id names; `Other` when it names none. */
const groupOf = (flavor: CpuFlavor): string => {
  const m = /^cpu(\d+)/i.exec(flavor.id);
  return m ? `Gen ${m[1]}` : 'Other';
};

const freeGpus = (host: Host, usage: HostUsage | undefined): number =>
  Math.max(0, host.gpuCount - (usage?.gpuIndices.size ?? 0));

/** What is free on a host, as the GPU units read it. */
const freeOn = (host: Host, usage: HostUsage | undefined) => ({
  freeGpus: freeGpus(host, usage),
  freeVcpus: vcpuCapacity(host) - (usage?.vcpus ?? 0),
  freeMemoryGb: memoryCapacity(host) - (usage?.memoryGb ?? 0),
});

/** Reads the v2 catalog from the static catalog and one view of the fleet. */
export class CatalogV2 {
  private readonly dataCenterById: Map<string, DataCenter>;

  constructor(
    private readonly catalog: Catalog,
    private readonly fleet: FleetView,
  ) {
    this.dataCenterById = new Map(catalog.dataCenters.map((d) => [d.id, d]));
  }

  /** Instances of `count` GPUs (with what they come with) the host can still take, and could take empty. */
  private gpuUnits(host: Host, count: number): { free: number; total: number } {
    const terms = gpuHostTerms(host, this.catalog.gpuTypes);
    const empty = { freeGpus: host.gpuCount, freeVcpus: vcpuCapacity(host), freeMemoryGb: memoryCapacity(host) };
    return {
      free: placeableUnits(terms, freeOn(host, this.fleet.usage.get(host.id)), count),
      total: placeableUnits(terms, empty, count),
    };
  }

  private dcName(id: string): string {
    return this.dataCenterById.get(id)?.name ?? id;
  }

  private country(dataCenterId: string): string | undefined {
    return this.dataCenterById.get(dataCenterId)?.country.toUpperCase();
  }

  /** Per data center (catalog order, then unknown ones by id), units free and total. */
  private levels(
    hosts: Host[],
    units: (host: Host) => { free: number; total: number },
  ): { overall: AvailabilityLevel; dataCenters: DataCenterAvailability[] } {
    const byDc = new Map<string, { free: number; total: number }>();
    let free = 0;
    let total = 0;
    for (const host of hosts) {
      const u = units(host);
      free += u.free;
      total += u.total;
      const dc = byDc.get(host.dataCenterId) ?? { free: 0, total: 0 };
      dc.free += u.free;
      dc.total += u.total;
      byDc.set(host.dataCenterId, dc);
    }
    const order = this.catalog.dataCenters.map((d) => d.id);
    const rank = (id: string) => (order.includes(id) ? order.indexOf(id) : order.length);
    const dataCenters = [...byDc.entries()]
      .sort(([a], [b]) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0))
      .map(([id, u]) => ({ id, name: this.dcName(id), availability: availabilityLevel(u.free, u.total) }));
    return { overall: availabilityLevel(free, total), dataCenters };
  }

  gpuType(gpuType: GpuType, query: GpuAvailabilityQuery | null): CatalogGpuType {
    const ofType = this.fleet.hosts.filter((h) => h.gpuTypeId === gpuType.id && h.gpuCount > 0);
    const most = (cloud: Cloud) => Math.max(0, ...ofType.filter((h) => h.cloud === cloud).map((h) => h.gpuCount));
    const view: CatalogGpuType = {
      id: gpuType.id,
      name: gpuType.displayName,
      pool: gpuType.pool === '' ? null : gpuType.pool,
      manufacturer: manufacturerOf(gpuType),
      memory: Math.round(gpuType.memoryInGb),
      secure: ofType.some((h) => h.cloud === 'SECURE'),
      community: ofType.some((h) => h.cloud === 'COMMUNITY'),
      price: {
        secure: gpuType.securePrice,
        community: gpuType.communityPrice,
        // a worker is billed at the price of the cloud it lands in: quote the higher one
        ...(gpuType.pool === '' ? {} : { serverless: Math.max(gpuType.securePrice, gpuType.communityPrice) }),
        secureSpot: spotFloorPerGpu(gpuType, 'SECURE'),
        communitySpot: spotFloorPerGpu(gpuType, 'COMMUNITY'),
      },
      maxCount: { secure: most('SECURE'), community: most('COMMUNITY') },
    };
    if (query === null) return view;
    const rule = cudaRule({ allowedCudaVersions: query.cudaVersions, minCudaVersion: query.minCudaVersion });
    const countries = query.countryCodes;
    const matching = ofType.filter(
      (h) =>
        h.cloud === query.cloud &&
        h.gpuCount >= query.count &&
        (countries === null || countries.includes(this.country(h.dataCenterId) ?? '')) &&
        cudaAccepts(rule, cudaCode(h.cudaVersion)),
    );
    const { overall, dataCenters } = this.levels(matching, (h) => this.gpuUnits(h, query.count));
    view.availability = overall;
    if (overall !== 'NONE') view.dataCenters = dataCenters;
    const versions = new Map<string, boolean>();
    for (const h of matching) {
      if (h.cudaVersion === null) continue;
      const fits = this.gpuUnits(h, query.count).free > 0;
      versions.set(h.cudaVersion, (versions.get(h.cudaVersion) ?? false) || fits);
    }
    if (versions.size > 0)
      view.cudaVersions = [...versions.entries()]
        .sort(([a], [b]) => compareCudaVersions(a, b))
        .map(([version, available]) => ({ version, available }));
    return view;
  }

  /** Whether some available host of the type sits in one of the countries (the list drops the others). */
  gpuTypeInCountries(gpuType: GpuType, countries: string[]): boolean {
    return this.fleet.hosts.some(
      (h) => h.gpuTypeId === gpuType.id && h.gpuCount > 0 && countries.includes(this.country(h.dataCenterId) ?? ''),
    );
  }

  cpuType(flavor: CpuFlavor, query: CpuAvailabilityQuery | null): CatalogCpuType {
    const options = [...flavor.vcpuOptions].sort((a, b) => a - b);
    const view: CatalogCpuType = {
      id: flavor.id,
      name: flavor.displayName,
      group: groupOf(flavor),
      vcpu: { min: options[0] ?? 0, max: options[options.length - 1] ?? 0 },
      ramGbPerVcpu: flavor.ramMultiplier,
      price: {
        securePerVcpu: flavor.securePricePerVcpu,
        // a worker is billed at the price of the cloud it lands in: quote the higher one
        serverlessPerVcpu: Math.max(flavor.securePricePerVcpu, flavor.communityPricePerVcpu),
        communityPerVcpu: flavor.communityPricePerVcpu,
      },
    };
    if (query === null) return view;
    const { overall, dataCenters } = this.cpuLevels(flavor, query.vcpuCount);
    view.availability = overall;
    if (overall !== 'NONE') view.dataCenters = dataCenters;
    return view;
  }

  private cpuLevels(flavor: CpuFlavor, vcpuCount: number | null, dataCenterId?: string) {
    const vcpus = vcpuCount ?? Math.min(...flavor.vcpuOptions);
    const memory = vcpus * flavor.ramMultiplier;
    const offered = flavor.vcpuOptions.includes(vcpus);
    const hosts = this.fleet.hosts.filter(
      (h) =>
        offered &&
        h.cpuFlavors.includes(flavor.id) &&
        (dataCenterId === undefined || h.dataCenterId === dataCenterId) &&
        vcpuCapacity(h) >= vcpus &&
        memoryCapacity(h) >= memory,
    );
    return this.levels(hosts, (h) => {
      const used = this.fleet.usage.get(h.id);
      return {
        free: Math.max(
          0,
          Math.min(
            Math.floor((vcpuCapacity(h) - (used?.vcpus ?? 0)) / vcpus),
            Math.floor((memoryCapacity(h) - (used?.memoryGb ?? 0)) / memory),
          ),
        ),
        total: Math.min(Math.floor(vcpuCapacity(h) / vcpus), Math.floor(memoryCapacity(h) / memory)),
      };
    });
  }

  dataCenter(dataCenter: DataCenter, include: { gpu: boolean; cpu: boolean }): CatalogDataCenter {
    const view: CatalogDataCenter = {
      id: dataCenter.id,
      name: dataCenter.name,
      region: regionOf(dataCenter),
      globalNetwork: dataCenter.globalNetworking,
      // every data center of the catalog takes network volumes, on the engine's one storage tier
      networkVolumeTypes: ['STANDARD'],
      compliance: [],
    };
    const here = this.fleet.hosts.filter((h) => h.dataCenterId === dataCenter.id);
    if (include.gpu) {
      const gpus = this.catalog.gpuTypes
        .filter((t) => here.some((h) => h.gpuTypeId === t.id && h.gpuCount > 0))
        .map((t) => {
          const hosts = here.filter((h) => h.gpuTypeId === t.id && h.gpuCount > 0);
          const { overall } = this.levels(hosts, (h) => this.gpuUnits(h, 1));
          return { id: t.id, name: t.displayName, availability: overall };
        });
      if (gpus.length > 0) view.gpuAvailability = gpus;
    }
    if (include.cpu) {
      const cpus = this.catalog.cpuFlavors
        .filter((f) => here.some((h) => h.cpuFlavors.includes(f.id)))
        .map((f) => ({
          id: f.id,
          name: f.displayName,
          availability: this.cpuLevels(f, null, dataCenter.id).overall,
        }));
      if (cpus.length > 0) view.cpuAvailability = cpus;
    }
    return view;
  }

  matches(view: CatalogDataCenter, filter: DataCenterFilter): boolean {
    return (
      (filter.regions.length === 0 || filter.regions.includes(view.region)) &&
      filter.networkVolumeTypes.every((t) => view.networkVolumeTypes.includes(t)) &&
      filter.compliance.every((c) => view.compliance.includes(c)) &&
      (filter.globalNetwork === null || view.globalNetwork === filter.globalNetwork)
    );
  }
}
