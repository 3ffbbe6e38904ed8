import type { HostUsage } from '../domain/placement.js';
import type { Reclaimable } from '../domain/reclaim-ladder.js';
import type { Allocation } from './allocation.js';
import type { HostSlot } from './host-slot.js';

/** One reclaimable hold: what its holder keeps, and what taking it back gives the host. */
export interface HeldReclaimable {
  allocation: Allocation;
  gives: Reclaimable;
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
    if (!held) this.#byHost.set(allocation.hostId, (held = new Map()));
    held.set(holderId, { allocation, gives });
  }

  delete(holderId: string, hostId: string): void {
    const held = this.#byHost.get(hostId);
    if (!held?.delete(holderId)) return;
    if (held.size === 0) this.#byHost.delete(hostId);
  }

  /** Whether any host holds something reclaimable. */
  get empty(): boolean {
    return this.#byHost.size === 0;
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
