/**
 * Full reports asked of every host (docs/fleet.md, `sendFull`): a replica that just started knows
 * nothing the agents said before, so each host is asked once, in the answer to its next report,
 * for every instance it has. A request relayed from another replica asks again.
 */
export class FullReportRequests {
  /** since when full reports are wanted from every host (a replica started), null: never */
  #wantedSince: number | null = null;
  /** per host, when this replica last heard (or asked for) a full report */
  readonly #heardAt = new Map<string, number>();

  /** Full reports are wanted from every host from `now` on. */
  request(now: number): void {
    this.#wantedSince = now;
  }

  /** Whether to ask this report's host for a full report (once per request for all). */
  wanted(hostId: string, isFull: boolean, now: number): boolean {
    if (this.#wantedSince === null) return false;
    const heard = this.#heardAt.get(hostId) ?? -Infinity;
    if (!isFull && heard >= this.#wantedSince) return false;
    this.#heardAt.set(hostId, now);
    return !isFull;
  }
}
