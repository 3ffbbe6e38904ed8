import type { ReclaimableHold } from '../domain/placement-request.js';

/** The exact resources one holder (pod or worker) keeps on a host. */
export interface Allocation {
  hostId: string;
  gpuIndices: number[];
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  publicPorts: number[];
  /** How placement may take the hold back (an interruptible pod's). @default never */
  reclaimable?: ReclaimableHold;
}
