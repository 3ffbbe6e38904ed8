import type { HeldResources, ReclaimableHold } from '../domain/placement-request.js';

/** The exact resources one holder (pod or worker) keeps on a host, and whether it may be taken back. */
export interface Allocation extends HeldResources {
  /** How placement may take the hold back (an interruptible pod's). @default never */
  reclaimable?: ReclaimableHold;
}
