/**
 * Where the hosts placement uses come from, while the server runs: the one seam between a runtime
 * and the inventory (src/inventory/inventory.ts consumes nothing else). A runtime whose hosts are
 * fixed (the process runtime's declared fleet, the Docker runtime's one discovered host) answers
 * them from `current()` and never changes them; a runtime whose hosts come and go (the fleet's
 * joined agents; a cluster's nodes) tells its subscribers as they do.
 */
import type { Host } from '../domain/catalog.js';

/** What a host feed tells the one following it. */
export interface HostFeedListener {
  /** A host joined, or reports a new capacity: placement uses it from now on (unless unavailable). */
  upserted(host: Host): void;
  /** The host left for good (revoked). */
  removed(hostId: string): void;
  /** Placement may use the host again (`true`), or not while it is unreachable (`false`). Repeating the current state is cheap. */
  available(hostId: string, available: boolean): void;
  /** The host was heard from: it stays in placement until `at` unless heard from again. */
  reachableUntil(hostId: string, at: number): void;
}

export interface HostFeed {
  /** The hosts now: what placement starts from. */
  current(): readonly Host[];
  /** Follows the changes from now on; answers the unsubscribe. */
  subscribe(listener: HostFeedListener): () => void;
  /**
   * The follower took hosts out of placement because the deadline the feed gave them passed
   * (`reachableUntil`): the feed confirms it, or puts one back with `available(…, true)`.
   */
  lapsed?(hostIds: readonly string[]): void;
}

/** A feed of hosts that never change (the process runtime's declared fleet, the Docker runtime's discovered host). */
export function fixedHosts(hosts: readonly Host[]): HostFeed {
  const list = [...hosts];
  return { current: () => list, subscribe: () => () => undefined };
}

/**
 * A feed whose hosts change: its owner calls the listener methods on it, and they reach every
 * subscriber. `current()` answers what it was told so far.
 */
export class LiveHosts implements HostFeed, HostFeedListener {
  readonly #hosts = new Map<string, Host>();
  readonly #listeners = new Set<HostFeedListener>();
  readonly #onLapse: ((hostIds: readonly string[]) => void) | undefined;

  /** `onLapse`: what the owner does when a follower finds hosts past their deadline. @default nothing */
  constructor(options: { onLapse?: (hostIds: readonly string[]) => void } = {}) {
    this.#onLapse = options.onLapse;
  }

  current(): readonly Host[] {
    return [...this.#hosts.values()];
  }

  subscribe(listener: HostFeedListener): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  lapsed(hostIds: readonly string[]): void {
    this.#onLapse?.(hostIds);
  }

  upserted(host: Host): void {
    this.#hosts.set(host.id, host);
    for (const l of this.#listeners) l.upserted(host);
  }

  removed(hostId: string): void {
    this.#hosts.delete(hostId);
    for (const l of this.#listeners) l.removed(hostId);
  }

  available(hostId: string, available: boolean): void {
    for (const l of this.#listeners) l.available(hostId, available);
  }

  reachableUntil(hostId: string, at: number): void {
    for (const l of this.#listeners) l.reachableUntil(hostId, at);
  }
}
