import type { Catalog, Host } from '../domain/catalog.js';
import type { Placement, PlacementRequest, PlacementResult } from '../domain/placement.js';

/** The exact resources one holder (pod or worker) keeps on a host. */
export interface Allocation {
  hostId: string;
  gpuIndices: number[];
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  publicPorts: number[];
}

/**
 * The in-memory fleet: hosts plus what every holder has reserved. Placement decisions read it
 * without touching the database; pods and workers reserve and release through it.
 */
export class Inventory {
  constructor(private readonly deps: { hosts: Host[]; catalog: Catalog }) {}

  /** Chooses a host for the request and reserves it for `holderId` in one step. */
  placeAndReserve(_holderId: string, _request: PlacementRequest): PlacementResult {
    throw new Error('not implemented');
  }

  /** Reserves exactly this allocation (a stopped pod starting again on its host); the reason says what is taken. */
  reserveExact(_holderId: string, _allocation: Allocation): { ok: true } | { ok: false; reason: string } {
    throw new Error('not implemented');
  }

  /** Releases whatever `holderId` holds; a no-op when it holds nothing. */
  release(_holderId: string): void {
    throw new Error('not implemented');
  }

  host(_id: string): Host | undefined {
    throw new Error('not implemented');
  }

  allocationOf(_holderId: string): Allocation | undefined {
    throw new Error('not implemented');
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
}
