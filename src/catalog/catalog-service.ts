import type { Catalog, Cloud, CpuFlavor, DataCenter, GpuPool, GpuType } from '../domain/catalog.js';
import { ApiError } from '../domain/errors.js';
import type { Inventory } from '../inventory/inventory.js';
import {
  CatalogV2,
  type CatalogCpuType,
  type CatalogDataCenter,
  type CatalogGpuType,
  type CpuAvailabilityQuery,
  type DataCenterFilter,
  type GpuAvailabilityQuery,
} from './catalog-v2.js';

type StockStatus = 'High' | 'Medium' | 'Low' | 'None';

/**
 * How much of a GPU type is free, in words: None when nothing is free; Low when two or fewer
 * GPUs or under a fifth of them are; Medium under half; High otherwise.
 */
function stockStatus(available: number, total: number): StockStatus {
  if (available <= 0 || total <= 0) return 'None';
  if (available <= 2 || available < total * 0.2) return 'Low';
  if (available < total * 0.5) return 'Medium';
  return 'High';
}

interface GpuAvailability {
  stockStatus: StockStatus;
  available: number;
  total: number;
  /** Largest GPU count one pod can get on a single host right now. */
  maxGpuCount: number;
  dataCenters: Array<{ id: string; available: number }>;
}

export interface GpuTypeView extends GpuType {
  /** Some SECURE host has this type. */
  secureCloud: boolean;
  /** Some COMMUNITY host has this type. */
  communityCloud: boolean;
  availability?: GpuAvailability;
  /** Versions reported by hosts of this type, oldest first. */
  cudaVersions?: Array<{ version: string; available: number; total: number }>;
}

export type CpuFlavorView = CpuFlavor;

export interface DataCenterView extends DataCenter {
  /** GPU types some host in the data center has, in catalog order. */
  gpuTypes: string[];
  /** CPU flavors some host in the data center serves, in catalog order. */
  cpuFlavors: string[];
}

export interface GpuPoolView extends GpuPool {
  /** GPU types of the pool, in catalog order. */
  gpuTypes: string[];
}

/**
 * The catalog as the API shows it: static prices and specs, plus live stock from the inventory.
 * Which clouds offer a GPU type and what each data center offers follow the inventory's available
 * hosts: a host that joins counts at once, one that is unreachable or revoked stops counting.
 */
export class CatalogService {
  private cloudsByType = new Map<string, Set<Cloud>>();
  private offersByDataCenter = new Map<string, { gpuTypes: Set<string>; cpuFlavors: Set<string> }>();
  /** The inventory version the offers were read at. */
  private offersVersion = -1;

  constructor(private readonly deps: { catalog: Catalog; inventory: Inventory }) {}

  /** Reads the offers again when the inventory's hosts changed since they were read. */
  private offers(): void {
    const version = this.deps.inventory.version;
    if (version === this.offersVersion) return;
    const cloudsByType = new Map<string, Set<Cloud>>();
    const offersByDataCenter = new Map<string, { gpuTypes: Set<string>; cpuFlavors: Set<string> }>();
    for (const host of this.deps.inventory.availableHosts()) {
      const offers = offersByDataCenter.get(host.dataCenterId) ?? {
        gpuTypes: new Set<string>(),
        cpuFlavors: new Set<string>(),
      };
      offersByDataCenter.set(host.dataCenterId, offers);
      for (const flavor of host.cpuFlavors) offers.cpuFlavors.add(flavor);
      if (host.gpuTypeId === null || host.gpuCount <= 0) continue;
      offers.gpuTypes.add(host.gpuTypeId);
      const clouds = cloudsByType.get(host.gpuTypeId) ?? new Set<Cloud>();
      clouds.add(host.cloud);
      cloudsByType.set(host.gpuTypeId, clouds);
    }
    this.cloudsByType = cloudsByType;
    this.offersByDataCenter = offersByDataCenter;
    this.offersVersion = version;
  }

  get catalog(): Catalog {
    return this.deps.catalog;
  }

  listGpuTypes(options: { availability: boolean }): GpuTypeView[] {
    return this.deps.catalog.gpuTypes.map((t) => this.gpuTypeView(t, options.availability));
  }

  getGpuType(id: string, options: { availability: boolean }): GpuTypeView {
    const gpuType = this.deps.catalog.gpuTypes.find((t) => t.id === id);
    if (!gpuType) throw missing('GPU type', id);
    return this.gpuTypeView(gpuType, options.availability);
  }

  listCpuFlavors(): CpuFlavorView[] {
    return this.deps.catalog.cpuFlavors;
  }

  getCpuFlavor(id: string): CpuFlavorView {
    const flavor = this.deps.catalog.cpuFlavors.find((f) => f.id === id);
    if (!flavor) throw missing('CPU flavor', id);
    return flavor;
  }

  listDataCenters(): DataCenterView[] {
    return this.deps.catalog.dataCenters.map((d) => this.dataCenterView(d));
  }

  getDataCenter(id: string): DataCenterView {
    const dataCenter = this.deps.catalog.dataCenters.find((d) => d.id === id);
    if (!dataCenter) throw missing('data center', id);
    return this.dataCenterView(dataCenter);
  }

  listPools(): GpuPoolView[] {
    return this.deps.catalog.pools.map((p) => this.poolView(p));
  }

  getPool(id: string): GpuPoolView {
    const pool = this.deps.catalog.pools.find((p) => p.id === id);
    if (!pool) throw missing('GPU pool', id);
    return this.poolView(pool);
  }

  /** The v2 reads: one snapshot of the available hosts and their usage per call. */
  private v2(): CatalogV2 {
    // as an on-demand create sees the fleet: what interruptible pods hold is available to it (docs/pods.md)
    return new CatalogV2(this.deps.catalog, this.deps.inventory.snapshot({ reclaimableFree: true }));
  }

  /** REST v2 GPU types; with `countryCodes`, a type with no host in those countries drops out. */
  gpuTypes(query: GpuAvailabilityQuery | null): CatalogGpuType[] {
    const v2 = this.v2();
    const countries = query?.countryCodes ?? null;
    return this.deps.catalog.gpuTypes
      .filter((t) => countries === null || v2.gpuTypeInCountries(t, countries))
      .map((t) => v2.gpuType(t, query));
  }

  /** One REST v2 GPU type (404 when the catalog has no such id, whatever the filters). */
  gpuType(id: string, query: GpuAvailabilityQuery | null): CatalogGpuType {
    const gpuType = this.deps.catalog.gpuTypes.find((t) => t.id === id);
    if (!gpuType) throw missing('GPU type', id);
    return this.v2().gpuType(gpuType, query);
  }

  cpuTypes(query: CpuAvailabilityQuery | null): CatalogCpuType[] {
    const v2 = this.v2();
    return this.deps.catalog.cpuFlavors.map((f) => v2.cpuType(f, query));
  }

  cpuType(id: string, query: CpuAvailabilityQuery | null): CatalogCpuType {
    const flavor = this.deps.catalog.cpuFlavors.find((f) => f.id === id);
    if (!flavor) throw missing('CPU flavor', id);
    return this.v2().cpuType(flavor, query);
  }

  dataCenters(filter: DataCenterFilter, include: { gpu: boolean; cpu: boolean }): CatalogDataCenter[] {
    const v2 = this.v2();
    return this.deps.catalog.dataCenters.map((d) => v2.dataCenter(d, include)).filter((d) => v2.matches(d, filter));
  }

  dataCenter(id: string, include: { gpu: boolean; cpu: boolean }): CatalogDataCenter {
    const dataCenter = this.deps.catalog.dataCenters.find((d) => d.id === id);
    if (!dataCenter) throw missing('data center', id);
    return this.v2().dataCenter(dataCenter, include);
  }

  private gpuTypeView(gpuType: GpuType, availability: boolean): GpuTypeView {
    this.offers();
    const clouds = this.cloudsByType.get(gpuType.id);
    const view: GpuTypeView = {
      ...gpuType,
      secureCloud: clouds?.has('SECURE') === true,
      communityCloud: clouds?.has('COMMUNITY') === true,
    };
    if (!availability) return view;
    const stock = this.deps.inventory.gpuStock(gpuType.id);
    view.availability = {
      stockStatus: stockStatus(stock.available, stock.total),
      available: stock.available,
      total: stock.total,
      maxGpuCount: stock.maxGpuCount,
      dataCenters: stock.dataCenters.map(({ id, available }) => ({ id, available })),
    };
    view.cudaVersions = stock.cudaVersions;
    return view;
  }

  private dataCenterView(dataCenter: DataCenter): DataCenterView {
    this.offers();
    const offers = this.offersByDataCenter.get(dataCenter.id);
    return {
      ...dataCenter,
      gpuTypes: this.deps.catalog.gpuTypes.filter((t) => offers?.gpuTypes.has(t.id)).map((t) => t.id),
      cpuFlavors: this.deps.catalog.cpuFlavors.filter((f) => offers?.cpuFlavors.has(f.id)).map((f) => f.id),
    };
  }

  private poolView(pool: GpuPool): GpuPoolView {
    return { ...pool, gpuTypes: this.deps.catalog.gpuTypes.filter((t) => t.pool === pool.id).map((t) => t.id) };
  }
}

const missing = (kind: string, id: string): ApiError =>
  new ApiError('NOT_FOUND', `No ${kind} with id "${id}" is in the catalog.`);
