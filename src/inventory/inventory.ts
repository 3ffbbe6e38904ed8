import type { Catalog, Host } from '../domain/catalog.js';
import type { FleetSnapshot, HostUsage, Placement, PlacementRequest, PlacementResult } from '../domain/placement.js';
import { FleetIndex, type GpuTypeStock } from './fleet-index.js';
import type { HostSlot } from './host-slot.js';

/** The exact resources one holder (pod or worker) keeps on a host. */
export interface Allocation {
  hostId: string;
  gpuIndices: number[];
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  publicPorts: number[];
}

type Refusal = { ok: false; reason: string };

/**
 * The in-memory fleet: hosts plus what every holder has reserved. Placement decisions read it
 * without touching the database; pods and workers reserve and release through it.
 *
 * It obeys the rules of `place()` (same filters, same order of preference, same refusal
 * reasons) but answers from indexes: GPU hosts are grouped by everything the static filters
 * look at, and each group keeps its hosts bucketed by free GPU count.
 */
export class Inventory {
  private readonly index: FleetIndex;
  /** The index's slots, by host id. */
  private readonly slots: ReadonlyMap<string, HostSlot>;
  private readonly allocations = new Map<string, Allocation>();
  private readonly hostList: Host[];

  constructor(private readonly deps: { hosts: Host[]; catalog: Catalog }) {
    this.hostList = [...deps.hosts];
    this.index = new FleetIndex(deps.hosts, deps.catalog);
    this.slots = this.index.slots;
  }

  /** Chooses a host for the request and reserves it for `holderId` in one step. A holder's previous allocation is replaced. */
  placeAndReserve(holderId: string, request: PlacementRequest): PlacementResult {
    const previous = this.allocations.get(holderId);
    if (previous) this.release(holderId);
    const slot = request.kind === 'gpu' ? this.index.findGpuHost(request) : this.index.findCpuHost(request);
    if (slot === null) {
      if (previous) this.apply(holderId, previous);
      return this.index.explain(request);
    }
    const placement: Placement = {
      hostId: slot.hostId,
      dataCenterId: slot.host.dataCenterId,
      cloud: slot.host.cloud,
      gpuTypeId: request.kind === 'gpu' ? slot.host.gpuTypeId : null,
      gpuIndices: request.kind === 'gpu' ? slot.lowestFreeGpus(request.gpuCount) : [],
      cudaVersion: request.kind === 'gpu' ? slot.host.cudaVersion : null,
      publicPorts: slot.lowestFreePorts(request.portCount),
    };
    this.apply(holderId, Inventory.allocationFrom(placement, request));
    return { ok: true, placement };
  }

  /** Reserves exactly this allocation (a stopped pod starting again on its host); the reason says what is taken. */
  reserveExact(holderId: string, allocation: Allocation): { ok: true } | Refusal {
    const previous = this.allocations.get(holderId);
    if (previous) this.release(holderId);
    const refusal = this.checkExact(allocation);
    if (refusal) {
      if (previous) this.apply(holderId, previous);
      return refusal;
    }
    this.apply(holderId, allocation);
    return { ok: true };
  }

  /** Releases whatever `holderId` holds; a no-op when it holds nothing. */
  release(holderId: string): void {
    const allocation = this.allocations.get(holderId);
    if (!allocation) return;
    this.allocations.delete(holderId);
    this.slots.get(allocation.hostId)?.release(allocation);
  }

  host(id: string): Host | undefined {
    return this.slots.get(id)?.host;
  }

  /** Every host of the fleet, in configuration order. */
  hosts(): readonly Host[] {
    return this.hostList;
  }

  allocationOf(holderId: string): Allocation | undefined {
    return this.allocations.get(holderId);
  }

  /** Free and total GPUs of one type, overall and per data center and CUDA version. */
  gpuStock(gpuTypeId: string): GpuTypeStock {
    return this.index.gpuStock(gpuTypeId);
  }

  /** The current usage of every host, as the pure `place()` reads it. */
  snapshot(): FleetSnapshot {
    const usage = new Map<string, HostUsage>();
    for (const slot of this.slots.values()) usage.set(slot.hostId, slot.usage());
    return { hosts: this.hostList, usage, catalog: this.deps.catalog };
  }

  static allocationFrom(placement: Placement, request: PlacementRequest): Allocation {
    return {
      hostId: placement.hostId,
      gpuIndices: placement.gpuIndices,
      vcpus: request.vcpuCount,
      memoryGb: request.memoryGb,
      diskGb: request.diskGb,
      publicPorts: placement.publicPorts,
    };
  }

  // --- bookkeeping -------------------------------------------------------------------------

  private checkExact(allocation: Allocation): Refusal | null {
    const slot = this.slots.get(allocation.hostId);
    if (!slot) return { ok: false, reason: `Host ${allocation.hostId} is no longer in the fleet` };
    const reason = slot.refusalFor(allocation);
    return reason === null ? null : { ok: false, reason };
  }

  /** Records an allocation already known to fit. */
  private apply(holderId: string, allocation: Allocation): void {
    this.slots.get(allocation.hostId)!.reserve(allocation);
    this.allocations.set(holderId, allocation);
  }
}
