import type { HostUsage } from '../domain/placement.js';
import { compareReclaimables, type Reclaimable } from '../domain/reclaim-ladder.js';
import type { Allocation } from './allocation.js';
import type { GroupHold, HostSlot } from './host-slot.js';

/** One reclaimable hold: what its holder keeps, what taking it back gives the host, and the host's slot. */
export interface HeldReclaimable {
  allocation: Allocation;
  gives: Reclaimable;
  slot: HostSlot;
}

/** Where `gives` goes in a group's holds (kept in ladder order). */
function positionOf(holds: readonly GroupHold[], gives: Reclaimable): number {
  let lo = 0;
  let hi = holds.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareReclaimables(holds[mid]!.gives, gives) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Takes `gives` out of a group's holds (no-op when absent). */
function unlist(holds: GroupHold[] | undefined, gives: Reclaimable): void {
  if (!holds) return;
  const i = positionOf(holds, gives);
  if (holds[i]?.gives === gives) holds.splice(i, 1);
}

/**
 * The holds placement may take back (an interruptible pod's, a suspended worker's), by host: the
 * reclaim ladder reads only these hosts, so a fleet without them pays nothing for it. Kept by the
 * Inventory as it reserves and releases.
 */
export class ReclaimIndex {
  readonly #byHost = new Map<string, Map<string, HeldReclaimable>>();

  /** Records a hold reserved on `slot` (GPUs and ports outside the host's count for nothing, as in the slot). */
  add(holderId: string, allocation: Allocation, slot: HostSlot | undefined): void {
    const hold = allocation.reclaimable;
    if (!hold || !slot) return;
    const base = slot.host.portRange[0];
    const gives: Reclaimable = {
      holderId,
      hold,
      gpus: allocation.gpuIndices.filter((i) => i >= 0 && i < slot.gpuUsed.length).length,
      vcpus: allocation.vcpus,
      memoryGb: allocation.memoryGb,
      diskGb: allocation.diskGb,
      ports: allocation.publicPorts.filter((p) => p - base >= 0 && p - base < slot.portUsed.length).length,
    };
    let held = this.#byHost.get(allocation.hostId);
    if (!held) this.#byHost.set(allocation.hostId, (held = new Map<string, HeldReclaimable>()));
    const before = held.get(holderId);
    if (before) unlist(before.slot.group?.holds, before.gives);
    held.set(holderId, { allocation, gives, slot });
    const holds = slot.group?.holds;
    if (holds) holds.splice(positionOf(holds, gives), 0, { gives, slot });
  }

  /** Forgets a hold (released, or its host left the fleet). */
  delete(holderId: string, hostId: string): void {
    const held = this.#byHost.get(hostId);
    const entry = held?.get(holderId);
    if (!held || !entry) return;
    held.delete(holderId);
    unlist(entry.slot.group?.holds, entry.gives);
    if (held.size === 0) this.#byHost.delete(hostId);
  }

  /**
   * After the fleet index is rebuilt (its GPU groups are new): lists each hold in its host's new
   * group, in ladder order. `slots`: every host's current slot.
   */
  regroup(slots: ReadonlyMap<string, HostSlot>): void {
    const touched = new Set<GroupHold[]>();
    for (const [hostId, held] of this.#byHost) {
      const slot = slots.get(hostId);
      for (const [holderId, entry] of held) {
        const current = slot ?? entry.slot;
        held.set(holderId, { ...entry, slot: current });
        const holds = current.group?.holds;
        if (!holds) continue;
        holds.push({ gives: entry.gives, slot: current });
        touched.add(holds);
      }
    }
    for (const holds of touched) holds.sort((a, b) => compareReclaimables(a.gives, b.gives));
  }

  /** Whether any host holds something reclaimable. */
  get empty(): boolean {
    return this.#byHost.size === 0;
  }

  /** The reclaimable holds on one host, if any. */
  on(hostId: string): ReadonlyMap<string, HeldReclaimable> | undefined {
    return this.#byHost.get(hostId);
  }

  /** The hosts with reclaimable holds, and those holds. */
  hosts(): IterableIterator<[string, ReadonlyMap<string, HeldReclaimable>]> {
    return this.#byHost.entries();
  }

  /** What the holds on `hostId` would give back: GPUs, vCPUs and memory (for availability). */
  givesOn(hostId: string): { gpus: number; vcpus: number; memoryGb: number } | null {
    const held = this.#byHost.get(hostId);
    if (!held) return null;
    const sum = { gpus: 0, vcpus: 0, memoryGb: 0 };
    for (const { gives } of held.values()) {
      sum.gpus += gives.gpus;
      sum.vcpus += gives.vcpus;
      sum.memoryGb += gives.memoryGb;
    }
    return sum;
  }

  /** `usage` of the host without its reclaimable holds: what an on-demand request could have there. */
  usageWithout(hostId: string, usage: HostUsage): HostUsage {
    const held = this.#byHost.get(hostId);
    if (!held) return usage;
    const gpuIndices = new Set(usage.gpuIndices);
    const ports = new Set(usage.ports);
    let { vcpus, memoryGb, diskGb } = usage;
    for (const { allocation } of held.values()) {
      for (const i of allocation.gpuIndices) gpuIndices.delete(i);
      for (const p of allocation.publicPorts) ports.delete(p);
      vcpus -= allocation.vcpus;
      memoryGb -= allocation.memoryGb;
      diskGb -= allocation.diskGb;
    }
    return { gpuIndices, vcpus, memoryGb, diskGb, ports };
  }
}
