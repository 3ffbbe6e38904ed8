import type { Cloud } from '../domain/catalog.js';
import { cudaCode } from '../domain/cuda.js';
import type { PlacementRequest } from '../domain/placement-request.js';
import type { FreeResources, HostGroup } from '../domain/placement-sieve.js';
import type { GroupHold, HostSlot } from './host-slot.js';

/**
 * GPU hosts alike to every static filter (type, data center, cloud, CUDA, GPUs per host), with
 * one bitset per free-GPU count so the tightest fit with the lowest host id is found by looking
 * at a few words instead of every host.
 */
export class GpuGroup implements HostGroup {
  readonly slots: HostSlot[] = [];
  readonly cpuFlavors: readonly string[] = [];
  /** levels[k]: bitset over `slots` positions of hosts with exactly k free GPUs. */
  levels: Uint32Array[] = [];
  levelCount: Int32Array = new Int32Array(0);
  freeGpus = 0;
  readonly cudaCode: number;
  readonly globalNetworking: boolean;
  /** Scratch: the group's data center rank for the request being placed. */
  dcRank = 0;
  /** Scratch: the rank of the group's GPU type in the request being placed. */
  typeRank = 0;
  /** The reclaimable holds on its hosts (the reclaim ladder walks them); kept by reclaim-index.ts. */
  readonly holds: GroupHold[] = [];
  /** Whether `holds` is in ladder order now (reclaim-index.ts `sortHolds`). */
  holdsSorted = true;

  constructor(
    readonly gpuTypeId: string,
    readonly dataCenterId: string,
    readonly cloud: Cloud,
    readonly cudaVersion: string | null,
    readonly gpusPerHost: number,
    globalNetworking: boolean,
  ) {
    this.cudaCode = cudaCode(cudaVersion);
    this.globalNetworking = globalNetworking;
  }

  get hostCount(): number {
    return this.slots.length;
  }

  get maxFreeGpus(): number {
    for (let k = this.gpusPerHost; k > 0; k--) if (this.levelCount[k]! > 0) return k;
    return 0;
  }

  /** Called once all slots are added (in id order). */
  seal(): void {
    const words = Math.ceil(this.slots.length / 32);
    this.levels = Array.from({ length: this.gpusPerHost + 1 }, () => new Uint32Array(words));
    this.levelCount = new Int32Array(this.gpusPerHost + 1);
    this.potentialCount = new Int32Array(this.gpusPerHost + 1);
    this.slots.forEach((slot, pos) => {
      slot.group = this;
      slot.pos = pos;
      this.setLevel(pos, slot.freeGpus);
      this.freeGpus += slot.freeGpus;
      slot.potential = this.potentialOf(slot);
      this.potentialCount[slot.potential]!++;
    });
  }

  /** Hosts by their free GPUs plus those their reclaimable holds would give back (the reclaim ladder's bound). */
  private potentialCount: Int32Array = new Int32Array(0);

  private potentialOf(slot: HostSlot): number {
    return Math.min(this.gpusPerHost, slot.freeGpus + slot.reclaimGpus);
  }

  /** Recounts a host's free-plus-reclaimable GPUs after either changed. */
  repotential(slot: HostSlot): void {
    const next = this.potentialOf(slot);
    if (next === slot.potential) return;
    this.potentialCount[slot.potential]!--;
    this.potentialCount[next]!++;
    slot.potential = next;
  }

  /** The most GPUs one of its hosts has free or held by reclaimable holds: more cannot be made room for here. */
  get maxPotential(): number {
    for (let k = this.gpusPerHost; k > 0; k--) if (this.potentialCount[k]! > 0) return k;
    return 0;
  }

  private setLevel(pos: number, k: number): void {
    this.levels[k]![pos >>> 5]! |= 1 << (pos & 31);
    this.levelCount[k]!++;
  }

  private clearLevel(pos: number, k: number): void {
    this.levels[k]![pos >>> 5]! &= ~(1 << (pos & 31));
    this.levelCount[k]!--;
  }

  /** Moves a slot to its new free-GPU level after its free count changed from `before`. */
  moved(slot: HostSlot, before: number): void {
    if (before === slot.freeGpus) return;
    this.clearLevel(slot.pos, before);
    this.setLevel(slot.pos, slot.freeGpus);
    this.repotential(slot);
    this.freeGpus += slot.freeGpus - before;
  }

  /** The lowest-id host with exactly `k` free GPUs that also has the request's other resources. */
  firstAtLevel(k: number, request: PlacementRequest): HostSlot | null {
    if (this.levelCount[k]! === 0) return null;
    const words = this.levels[k]!;
    for (let w = 0; w < words.length; w++) {
      let bits = words[w]!;
      while (bits !== 0) {
        const low = bits & -bits;
        const slot = this.slots[(w << 5) + (31 - Math.clz32(low))]!;
        if (slot.fitsResources(request)) return slot;
        bits ^= low;
      }
    }
    return null;
  }

  eachHostWithFreeGpus(min: number, visit: (host: FreeResources) => void): void {
    for (let k = Math.max(min, 0); k <= this.gpusPerHost; k++) {
      if (this.levelCount[k]! === 0) continue;
      const words = this.levels[k]!;
      for (let w = 0; w < words.length; w++) {
        let bits = words[w]!;
        while (bits !== 0) {
          const low = bits & -bits;
          visit(this.slots[(w << 5) + (31 - Math.clz32(low))]!);
          bits ^= low;
        }
      }
    }
  }
}
