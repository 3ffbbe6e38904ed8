import type { Catalog, Host } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import { allotmentOn, type ComputeAllotment } from '../domain/gpu-allotment.js';
import type { FleetSnapshot, HostUsage } from '../domain/placement.js';
import type {
  Placement,
  PlacementRequest,
  PlacementResult,
  ReclaimableHold,
  ReclaimedHold,
} from '../domain/placement-request.js';
import { memoryOn, vcpusOn } from '../domain/placement-sieve.js';
import type { Reclaimable } from '../domain/reclaim-ladder.js';
import { FleetIndex, type GpuTypeStock } from './fleet-index.js';
import { HostDeadlines } from './host-deadlines.js';
import type { HostFeed } from '../runtime/host-feed.js';
import type { HostSlot } from './host-slot.js';
import type { Allocation } from './allocation.js';
import { ReclaimIndex } from './reclaim-index.js';
import { findReclaimPlan } from './reclaim-search.js';

export type { Allocation } from './allocation.js';

type Refusal = { ok: false; reason: string };

/**
 * The in-memory fleet: hosts plus what every holder has reserved. Placement decisions read it
 * without touching the database; pods and workers reserve and release through it.
 *
 * It obeys the rules of `place()` (same filters, same order of preference, same refusal
 * reasons) but answers from indexes: GPU hosts are grouped by everything the static filters
 * look at, and each group keeps its hosts bucketed by free GPU count.
 *
 * Hosts come and go at runtime (the fleet's agents, docs/fleet.md): `upsertHost` adds a host that
 * joined or takes its new capacity, `setAvailable` takes a host out of placement while it is
 * unreachable and puts it back, `removeHost` drops a revoked one. A host out of placement keeps
 * every allocation on it (its instances may well run on) and can still be reserved on exactly
 * (`reserveExact`: a server restart re-reserves what its pods hold); it is neither placed on nor
 * counted in the stock. Each such change rebuilds the index (O(hosts)); decisions stay
 * allocation-free.
 *
 * A host may also be given a deadline (`reachableUntil`: its last heartbeat plus the timeout):
 * every decision and every count first takes out the hosts whose deadline passed on `clock`, so a
 * host that stopped reporting is out at once, not when its watcher's next check comes round. The
 * `onLapse` listeners hear of them (the watcher confirms, or puts one back with `setAvailable`).
 *
 * When no free capacity fits a request that may take some back (`request.reclaim`), placement
 * climbs the reclaim ladder (domain/reclaim-ladder.ts) over the hosts with reclaimable holds only:
 * the host whose plan interrupts least is chosen, its holds are released, and the answer names
 * them (`reclaimed`) for the caller to stop; `restore` gives them back if the caller rolls back.
 */
export class Inventory {
  private index: FleetIndex;
  /** Every host's slot (available or not), by host id: what is reserved on it. */
  private readonly slots = new Map<string, HostSlot>();
  private readonly allocations = new Map<string, Allocation>();
  /** Hosts placement skips (unreachable): their slots stay, out of the index. */
  private readonly unavailableIds = new Set<string>();
  private hostList: Host[];
  private changes = 0;
  private readonly deadlines = new HostDeadlines();
  private readonly lapseListeners = new Set<(hostIds: string[]) => void>();
  private readonly reclaims = new ReclaimIndex();

  /**
   * `hosts`: the runtime's host feed (runtime/host-feed.ts), followed from now on, or a fixed list.
   * `clock`: what `reachableUntil` deadlines are read against. @default none: deadlines never pass
   */
  constructor(private readonly deps: { hosts: readonly Host[] | HostFeed; catalog: Catalog; clock?: Clock }) {
    const feed = isFeed(deps.hosts) ? deps.hosts : null;
    const hosts = feed ? feed.current() : (deps.hosts as readonly Host[]);
    this.hostList = [...hosts];
    for (const host of hosts) this.slots.set(host.id, FleetIndex.slotFor(host, deps.catalog));
    this.index = new FleetIndex([...this.slots.values()], deps.catalog);
    if (feed) this.follow(feed);
  }

  /** Takes the feed's changes as they come, and tells it of the hosts whose deadline passed. */
  private follow(feed: HostFeed): void {
    feed.subscribe({
      upserted: (host) => this.upsertHost(host),
      removed: (hostId) => this.removeHost(hostId),
      available: (hostId, available) => void this.setAvailable(hostId, available),
      reachableUntil: (hostId, at) => this.reachableUntil(hostId, at),
    });
    if (feed.lapsed) this.onLapse((hostIds) => feed.lapsed!(hostIds));
  }

  /** Chooses a host for the request and reserves it for `holderId` in one step. A holder's previous allocation is replaced. */
  placeAndReserve(holderId: string, request: PlacementRequest): PlacementResult {
    this.lapse();
    const previous = this.allocations.get(holderId);
    if (previous) this.release(holderId);
    let slot = request.kind === 'gpu' ? this.index.findGpuHost(request) : this.index.findCpuHost(request);
    let reclaimed: ReclaimedHold[] | undefined;
    if (slot === null && request.reclaim && !this.reclaims.empty) {
      const plan = findReclaimPlan(
        { reclaims: this.reclaims, index: this.index, slots: this.slots, unavailable: this.unavailableIds },
        request,
        request.reclaim,
      );
      if (plan) {
        reclaimed = plan.holds.map((r) => this.takeBack(r));
        slot = plan.slot;
      }
    }
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
      vcpus: vcpusOn(request, slot),
      memoryGb: memoryOn(request, slot),
    };
    this.apply(holderId, Inventory.allocationFrom(placement, request));
    return reclaimed ? { ok: true, placement, reclaimed } : { ok: true, placement };
  }

  /**
   * Gives back holds a placement took (`reclaimed`), exactly as they were: the caller rolls back
   * the placement (releasing what it reserved) first, so they fit again.
   */
  restore(reclaimed: readonly ReclaimedHold[]): void {
    for (const r of reclaimed) this.reserveExact(r.holderId, { ...r.held, reclaimable: r.hold });
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
    const slot = this.slots.get(allocation.hostId);
    slot?.release(allocation);
    if (allocation.reclaimable) this.reclaims.delete(holderId, allocation.hostId);
  }

  /**
   * Makes what `holderId` holds reclaimable on the ladder (`hold`: a worker suspended) or no longer
   * (null: resumed), in one step with placement's own: answers false when it holds nothing any
   * more (placement took it back), so a resume and a reclaim of one worker never both win.
   */
  setReclaimable(holderId: string, hold: ReclaimableHold | null): boolean {
    const allocation = this.allocations.get(holderId);
    if (!allocation) return false;
    const { reclaimable: _, ...held } = allocation;
    this.release(holderId);
    this.apply(holderId, hold ? { ...held, reclaimable: hold } : held);
    return true;
  }

  /** The host of that id, available or not. */
  host(id: string): Host | undefined {
    return this.slots.get(id)?.host;
  }

  /** Every host of the fleet, available or not, in configuration (then joining) order. */
  hosts(): readonly Host[] {
    return this.hostList;
  }

  /** The hosts placement may use now, in configuration (then joining) order. */
  availableHosts(): Host[] {
    this.lapse();
    return this.hostList.filter((h) => !this.unavailableIds.has(h.id));
  }

  /** Whether placement may use the host (false for an unknown id). */
  isAvailable(hostId: string): boolean {
    this.lapse();
    return this.slots.has(hostId) && !this.unavailableIds.has(hostId);
  }

  /** Counts changes of the fleet's hosts (joins, capacity, availability, removals): views built from the hosts are current while it stays the same. */
  get version(): number {
    this.lapse();
    return this.changes;
  }

  /**
   * A host joined, or reports a new capacity: placement uses it from now on (unless it is
   * unavailable). The allocations held on it are kept, counted against its new capacity (GPUs or
   * ports it no longer has are not counted; resources it lacks now leave it full until released).
   */
  upsertHost(host: Host): void {
    const slot = FleetIndex.slotFor(host, this.deps.catalog);
    for (const [holderId, allocation] of this.allocations) {
      if (allocation.hostId !== host.id) continue;
      slot.reserve(allocation);
      this.reclaims.add(holderId, allocation, slot);
    }
    const known = this.slots.has(host.id);
    this.slots.set(host.id, slot);
    this.hostList = known ? this.hostList.map((h) => (h.id === host.id ? host : h)) : [...this.hostList, host];
    this.reindex();
  }

  /**
   * Takes a host out of placement (`available` false: unreachable) or puts it back. Its
   * allocations are kept either way. Answers false for a host not in the fleet.
   */
  setAvailable(hostId: string, available: boolean): boolean {
    if (!this.slots.has(hostId)) return false;
    if (available === !this.unavailableIds.has(hostId)) return true;
    if (available) {
      this.unavailableIds.delete(hostId);
      this.deadlines.counts(hostId);
    } else this.unavailableIds.add(hostId);
    this.reindex();
    return true;
  }

  /**
   * The host stays in placement until `at` unless this is called again with a later time: once the
   * clock is past it, the next decision or count takes it out (and tells the `onLapse` listeners).
   * Coming back is the caller's to say (`setAvailable(hostId, true)`, after a later deadline).
   */
  reachableUntil(hostId: string, at: number): void {
    if (this.slots.has(hostId)) this.deadlines.set(hostId, at);
  }

  /** Listens for hosts taken out because their deadline passed (told after the decision that found them). */
  onLapse(listener: (hostIds: string[]) => void): () => void {
    this.lapseListeners.add(listener);
    return () => void this.lapseListeners.delete(listener);
  }

  /**
   * Removes a host from the fleet (revoked). Holders' allocations on it are kept as records (their
   * release is a no-op); reserving on it again is refused as "no longer in the fleet".
   */
  removeHost(hostId: string): void {
    if (!this.slots.delete(hostId)) return;
    for (const [holderId, allocation] of this.allocations)
      if (allocation.hostId === hostId && allocation.reclaimable) this.reclaims.delete(holderId, hostId);
    this.unavailableIds.delete(hostId);
    this.deadlines.delete(hostId);
    this.hostList = this.hostList.filter((h) => h.id !== hostId);
    this.reindex();
  }

  /**
   * The vCPUs and memory `gpuCount` GPUs come with on that host by default (its GPU type's per-GPU
   * default, capped by the host's share); null for a host not in the fleet. For an instance
   * placed before allotments existed, which holds none.
   */
  gpuAllotmentOn(hostId: string, gpuCount: number): ComputeAllotment | null {
    const slot = this.slots.get(hostId);
    if (!slot || gpuCount <= 0) return null;
    const allotment = allotmentOn(slot.terms, gpuCount);
    return allotment.ok ? { vcpus: allotment.vcpus, memoryGb: allotment.memoryGb } : null;
  }

  allocationOf(holderId: string): Allocation | undefined {
    return this.allocations.get(holderId);
  }

  /** Free and total GPUs of one type, overall and per data center and CUDA version. */
  gpuStock(gpuTypeId: string): GpuTypeStock {
    this.lapse();
    return this.index.gpuStock(gpuTypeId, this.reclaims.empty ? undefined : (id) => this.reclaims.givesOn(id));
  }

  /** Every host's GPUs (type, total, reserved) and whether placement uses it now (metrics); O(hosts). */
  gpuUsage(): Array<{ hostId: string; gpuTypeId: string | null; total: number; used: number; available: boolean }> {
    this.lapse();
    return [...this.slots.values()].map((slot) => ({
      hostId: slot.hostId,
      gpuTypeId: slot.host.gpuTypeId,
      total: slot.gpuUsed.length,
      used: slot.gpuUsed.length - slot.freeGpus,
      available: !this.unavailableIds.has(slot.hostId),
    }));
  }

  /**
   * The available hosts and their usage, as the pure `place()` reads them. `reclaimableFree`:
   * reclaimable holds count as free, as an on-demand request sees the fleet (the catalog's
   * availability). @default false
   */
  snapshot(options: { reclaimableFree?: boolean } = {}): FleetSnapshot {
    this.lapse();
    const usage = new Map<string, HostUsage>();
    for (const slot of this.index.slots)
      usage.set(
        slot.hostId,
        options.reclaimableFree ? this.reclaims.usageWithout(slot.hostId, slot.usage()) : slot.usage(),
      );
    return { hosts: this.availableHosts(), usage, catalog: this.deps.catalog };
  }

  static allocationFrom(placement: Placement, request: PlacementRequest): Allocation {
    const allocation: Allocation = {
      hostId: placement.hostId,
      gpuIndices: placement.gpuIndices,
      vcpus: placement.vcpus,
      memoryGb: placement.memoryGb,
      diskGb: request.diskGb,
      publicPorts: placement.publicPorts,
    };
    if (request.reclaimable) allocation.reclaimable = request.reclaimable;
    return allocation;
  }

  // --- bookkeeping -------------------------------------------------------------------------

  /** Takes out the hosts in placement whose deadline has passed. */
  private lapse(): void {
    const clock = this.deps.clock;
    if (!clock) return;
    const due = this.deadlines.due(clock.now(), (id) => this.slots.has(id) && !this.unavailableIds.has(id));
    if (due.length === 0) return;
    for (const id of due) this.unavailableIds.add(id);
    this.reindex();
    for (const listener of this.lapseListeners) queueMicrotask(() => listener(due));
  }

  private reindex(): void {
    const indexed: HostSlot[] = [];
    for (const slot of this.slots.values()) {
      slot.group = null;
      if (!this.unavailableIds.has(slot.hostId)) indexed.push(slot);
    }
    this.index = new FleetIndex(indexed, this.deps.catalog);
    this.reclaims.regroup(this.slots);
    this.changes++;
  }

  private checkExact(allocation: Allocation): Refusal | null {
    const slot = this.slots.get(allocation.hostId);
    if (!slot) return { ok: false, reason: `Host ${allocation.hostId} is no longer in the fleet` };
    const reason = slot.refusalFor(allocation);
    return reason === null ? null : { ok: false, reason };
  }

  /** Records an allocation already known to fit (or held on a host since removed). */
  private apply(holderId: string, allocation: Allocation): void {
    const slot = this.slots.get(allocation.hostId);
    slot?.reserve(allocation);
    this.allocations.set(holderId, allocation);
    this.reclaims.add(holderId, allocation, slot);
  }

  /** Releases a hold the ladder takes back, answering what it held. */
  private takeBack(r: Reclaimable): ReclaimedHold {
    const { reclaimable: _, ...held } = this.allocations.get(r.holderId)!;
    this.release(r.holderId);
    return { holderId: r.holderId, hold: r.hold, held };
  }
}

const isFeed = (hosts: readonly Host[] | HostFeed): hosts is HostFeed => !Array.isArray(hosts);
