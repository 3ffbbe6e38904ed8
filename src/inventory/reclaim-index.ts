import type { HostUsage } from '../domain/placement.js';
import { compareReclaimables, type Reclaimable } from '../domain/reclaim-ladder.js';
import type { Allocation } from './allocation.js';
import type { GroupHold, HostSlot } from './host-slot.js';

/** One reclaimable hold: what its holder keeps, what taking it back gives the host, the host's slot and its entry in the slot's group. */
export interface HeldReclaimable {
  allocation: Allocation;
  gives: Reclaimable;
  slot: HostSlot;
  listed: GroupHold | null;
}

/** Lists a hold in its group's holds (at the end: the list is sorted when the ladder needs it). */
function list(
  group: { holds: GroupHold[]; holdsSorted: boolean } | null,
  gives: Reclaimable,
  slot: HostSlot,
): GroupHold | null {
  if (!group) return null;
  const entry: GroupHold = { gives, slot, at: group.holds.length };
  group.holds.push(entry);
  group.holdsSorted = false;
  return entry;
}

/** Takes a hold out of its group's holds, in constant time (the last takes its place). */
function unlist(group: { holds: GroupHold[]; holdsSorted: boolean } | null, entry: GroupHold | null): void {
  if (!group || !entry || group.holds[entry.at] !== entry) return;
  const last = group.holds.pop()!;
  if (last !== entry) {
    group.holds[entry.at] = last;
    last.at = entry.at;
    group.holdsSorted = false;
  }
}

/** Puts a group's holds in ladder order, if a change since the last sort left them out of it. */
export function sortHolds(group: { holds: GroupHold[]; holdsSorted: boolean }): void {
  if (group.holdsSorted) return;
  group.holds.sort((a, b) => compareReclaimables(a.gives, b.gives));
  group.holds.forEach((h, i) => (h.at = i));
  group.holdsSorted = true;
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
    let gpus = 0;
    for (const i of allocation.gpuIndices) if (i >= 0 && i < slot.gpuUsed.length) gpus++;
    let ports = 0;
    for (const p of allocation.publicPorts) if (p - base >= 0 && p - base < slot.portUsed.length) ports++;
    const gives: Reclaimable = {
      holderId,
      hold,
      gpus,
      vcpus: allocation.vcpus,
      memoryGb: allocation.memoryGb,
      diskGb: allocation.diskGb,
      ports,
    };
    let held = this.#byHost.get(allocation.hostId);
    if (!held) this.#byHost.set(allocation.hostId, (held = new Map<string, HeldReclaimable>()));
    const before = held.get(holderId);
    if (before) {
      unlist(before.slot.group, before.listed);
      before.slot.reclaimGpus -= before.gives.gpus;
      before.slot.group?.repotential(before.slot);
    }
    held.set(holderId, { allocation, gives, slot, listed: list(slot.group, gives, slot) });
    slot.reclaimGpus += gives.gpus;
    slot.group?.repotential(slot);
  }

  /** Forgets a hold (released, or its host left the fleet). */
  delete(holderId: string, hostId: string): void {
    const held = this.#byHost.get(hostId);
    const entry = held?.get(holderId);
    if (!held || !entry) return;
    held.delete(holderId);
    unlist(entry.slot.group, entry.listed);
    entry.slot.reclaimGpus -= entry.gives.gpus;
    entry.slot.group?.repotential(entry.slot);
    if (held.size === 0) this.#byHost.delete(hostId);
  }

  /**
   * After the fleet index is rebuilt (its GPU groups are new): lists each hold in its host's new
   * group. `slots`: every host's current slot.
   */
  regroup(slots: ReadonlyMap<string, HostSlot>): void {
    for (const [hostId, held] of this.#byHost) {
      const slot = slots.get(hostId);
      if (slot) slot.reclaimGpus = 0;
      for (const [holderId, entry] of held) {
        const current = slot ?? entry.slot;
        if (slot) slot.reclaimGpus += entry.gives.gpus;
        held.set(holderId, { ...entry, slot: current, listed: list(current.group, entry.gives, current) });
      }
    }
    for (const hostId of this.#byHost.keys()) {
      const slot = slots.get(hostId);
      slot?.group?.repotential(slot);
    }
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
