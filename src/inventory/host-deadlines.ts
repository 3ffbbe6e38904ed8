/**
 * When each host leaves placement unless it is heard from again (a fleet host's heartbeat
 * timeout, docs/fleet.md "Heartbeats"). The inventory asks `due(now)` before every decision and
 * takes the hosts past their deadline out then, rather than when a periodic check comes round: a
 * host that `gantry hosts list` calls unreachable is never chosen, nor counted in the catalog.
 *
 * Cheap while no deadline passes: only the earliest deadline of a host in placement is compared.
 * When it passes, one scan (O(hosts)) finds those due and the next earliest. A deadline moved
 * later leaves the earliest as it was (a scan then finds nothing due and moves it on).
 */
export class HostDeadlines {
  readonly #at = new Map<string, number>();
  /** no host in placement has a deadline earlier than this */
  #earliest = Infinity;

  /** The host stays in placement until `at` (it is due once the time is past `at`). */
  set(hostId: string, at: number): void {
    this.#at.set(hostId, at);
    if (at < this.#earliest) this.#earliest = at;
  }

  delete(hostId: string): void {
    this.#at.delete(hostId);
  }

  /** The host is back in placement: its deadline counts again. */
  counts(hostId: string): void {
    const at = this.#at.get(hostId);
    if (at !== undefined && at < this.#earliest) this.#earliest = at;
  }

  /** The hosts in placement (`inPlacement`) whose deadline is past at `now`. */
  due(now: number, inPlacement: (hostId: string) => boolean): string[] {
    if (now <= this.#earliest) return [];
    const due: string[] = [];
    let earliest = Infinity;
    for (const [hostId, at] of this.#at) {
      if (!inPlacement(hostId)) continue;
      if (at < now) due.push(hostId);
      else if (at < earliest) earliest = at;
    }
    this.#earliest = earliest;
    return due;
  }
}
