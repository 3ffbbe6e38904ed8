/**
 * What the fleet runtime knows of each host's instances (fleet-runtime.ts): the instances it
 * tracks, by id and by host, the stopped ones the hosts keep, each host's availability, and the
 * listeners told of every change callers can see. A live instance of an unreachable host reads
 * `unknown`, with why, whatever its host last said; one of a revoked host reads `exited` (the host
 * never reports again); a change of availability is told for every instance it changes. Reports and acks of one host are applied one at a time (`onHost`).
 */
import { iso } from '../domain/clock.js';
import type { InstanceListener, InstanceOwner, InstanceState, InstanceStatus } from '../runtime/runtime.js';
import type { PlacedInstance } from './report-screen.js';

export const LIVE: ReadonlySet<InstanceState> = new Set(['starting', 'running', 'suspended', 'unknown']);

export interface Tracked {
  id: string;
  hostId: string;
  owner: InstanceOwner;
  /** as last reported (or as `start()` set it), before the host's availability is overlaid */
  status: InstanceStatus;
  /** a start is enqueued (or being) and not yet acknowledged */
  starting: boolean;
}

export interface HostState {
  id: string;
  /** ids of the tracked instances on the host */
  instances: Set<string>;
  /** since when it is unreachable; null while available */
  downSince: number | null;
  /** when it was revoked; null while it is not */
  revokedAt: number | null;
  /** a full report came since this runtime started */
  reported: boolean;
  /** reports and acks of the host, applied one at a time */
  chain: Promise<unknown>;
}

export const copyStatus = (s: InstanceStatus): InstanceStatus => ({ ...s, stats: s.stats && { ...s.stats } });
/** Why the host's instances cannot be reached, or null when they can. */
export const hostAway = (host: HostState | undefined): string | null =>
  host?.revokedAt != null
    ? `host ${host.id} was revoked at ${iso(host.revokedAt)}`
    : host?.downSince != null
      ? `host ${host.id} unreachable since ${iso(host.downSince)}`
      : null;
const differs = (a: InstanceStatus, b: InstanceStatus): boolean =>
  a.state !== b.state || a.reason !== b.reason || a.exitCode !== b.exitCode;

export class FleetInstances {
  /** the instances tracked (started, adopted from a report), by id */
  readonly tracked = new Map<string, Tracked>();
  /** stopped instances whose containers the hosts keep */
  readonly kept = new Map<string, PlacedInstance>();
  readonly #hosts = new Map<string, HostState>();
  readonly #listeners = new Set<InstanceListener>();

  onChange(listener: InstanceListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The host's state, made on first use. */
  host(hostId: string): HostState {
    let host = this.#hosts.get(hostId);
    if (!host) {
      host = {
        id: hostId,
        instances: new Set(),
        downSince: null,
        revokedAt: null,
        reported: false,
        chain: Promise.resolve(),
      };
      this.#hosts.set(hostId, host);
    }
    return host;
  }

  /** The host's state, if anything is known of it. */
  knownHost(hostId: string): HostState | undefined {
    return this.#hosts.get(hostId);
  }

  /** The host a tracked or kept instance is on. */
  hostIdOf(id: string): string | undefined {
    return this.tracked.get(id)?.hostId ?? this.kept.get(id)?.hostId;
  }

  /** The tracked instances of the host. */
  on(host: HostState): Tracked[] {
    return [...host.instances].map((id) => this.tracked.get(id)!);
  }

  /** Runs `fn` after the host's previous report (a lookup in one must not let a later one overtake it). */
  onHost<T>(hostId: string, fn: () => Promise<T>): Promise<T> {
    const host = this.host(hostId);
    const run = host.chain.catch(() => undefined).then(fn);
    host.chain = run;
    return run;
  }

  track(t: Tracked): void {
    this.tracked.set(t.id, t);
    this.host(t.hostId).instances.add(t.id);
  }

  untrack(t: Tracked): void {
    this.tracked.delete(t.id);
    this.#hosts.get(t.hostId)?.instances.delete(t.id);
  }

  /** The status callers see: a live instance of an unreachable host is `unknown`, of a revoked one `exited`, with why. */
  visible(t: Tracked): InstanceStatus {
    const away = hostAway(this.#hosts.get(t.hostId));
    if (away === null || !LIVE.has(t.status.state)) return t.status;
    if (this.#hosts.get(t.hostId)!.revokedAt !== null)
      return { ...t.status, state: 'exited', exitCode: null, reason: away };
    return { ...t.status, state: 'unknown', reason: away };
  }

  /** Sets what is known of the instance, telling listeners when what they see changed. */
  update(t: Tracked, next: InstanceStatus): void {
    const before = this.visible(t);
    t.status = next;
    const after = this.visible(t);
    if (differs(before, after)) this.emit(after);
  }

  /** Applies a change of the host's availability, telling listeners of every instance it changes. */
  changeHost(host: HostState, change: () => void): void {
    const before = new Map([...host.instances].map((id) => [id, this.visible(this.tracked.get(id)!)]));
    change();
    for (const [id, was] of before) {
      const now = this.visible(this.tracked.get(id)!);
      if (differs(was, now)) this.emit(now);
    }
  }

  emit(status: InstanceStatus): void {
    for (const listener of [...this.#listeners]) {
      try {
        const result: unknown = listener(copyStatus(status));
        if (result instanceof Promise) result.catch(() => undefined);
      } catch {
        // a listener's bug is its own
      }
    }
  }
}
