/**
 * Containers a host runs that the control plane never placed there (docs/fleet.md "Return"): a
 * pod terminated while its host was away (its `remove` pruned before delivery), a database restored
 * from an older backup, a container made by hand with Gantry's labels. Once a host has reported
 * such a container for `graceMs` (`runtime.orphanGraceMs`), a `remove` operation is queued for it
 * on that host, once.
 *
 * - An orphan is a reported id the ownership check refused because no record places it on the
 *   reporting host: none places it anywhere, or a record places it on another host. The `remove`
 *   goes to the reporting host only, and its agent removes its own container of that name: a host
 *   can never make the control plane act on another host (the real instance of a claimed id runs
 *   on untouched). Ids refused for their shape or state are not containers to remove.
 * - A full report is the whole truth: an orphan it no longer lists (or now accepts: the records
 *   came to place it there) is forgotten; a delta that accepts an id forgets it too.
 * - Memory is bounded: at most `MAX_PER_HOST` orphans are followed per host (a hostile agent may
 *   report thousands of made-up ids); beyond that, new ones wait until the followed ones are gone.
 * - Kept by the replica the agent reports to (in memory). An agent that moves to another replica
 *   reports in full there and the grace starts again there; a `remove` sent twice is harmless.
 * - Time is the injected clock; `sweep(now)` runs on a timer and tests call it.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { NewOperation } from './protocol.js';

export const MAX_PER_HOST = 1_000;

interface Orphan {
  since: number;
  /** its `remove` was queued */
  removing: boolean;
}

export interface OrphanContainersDeps {
  enqueue(hostId: string, op: NewOperation): Promise<unknown>;
  clock: Clock;
  logger: Pick<Logger, 'info' | 'warn'>;
  graceMs: number;
}

export class OrphanContainers {
  readonly #d: OrphanContainersDeps;
  readonly #hosts = new Map<string, Map<string, Orphan>>();
  #timer: NodeJS.Timeout | null = null;
  #sweeping: Promise<void> | null = null;

  constructor(deps: OrphanContainersDeps) {
    this.#d = deps;
  }

  /**
   * A report of the host was screened: `reported` every id it listed, `orphans` those refused as
   * placed on no host or on another one. `full`: the report lists every instance the host has.
   */
  noted(hostId: string, report: { full: boolean; reported: readonly string[]; orphans: readonly string[] }): void {
    const now = this.#d.clock.now();
    let followed = this.#hosts.get(hostId);
    const orphans = new Set(report.orphans);
    if (followed) {
      if (report.full) {
        for (const id of followed.keys()) if (!orphans.has(id)) followed.delete(id);
      } else for (const id of report.reported) if (!orphans.has(id)) followed.delete(id);
    }
    if (orphans.size === 0) {
      if (followed?.size === 0) this.#hosts.delete(hostId);
      return;
    }
    if (!followed) this.#hosts.set(hostId, (followed = new Map<string, Orphan>()));
    let skipped = 0;
    for (const id of orphans) {
      if (followed.has(id)) continue;
      if (followed.size >= MAX_PER_HOST) skipped++;
      else followed.set(id, { since: now, removing: false });
    }
    if (skipped > 0)
      this.#d.logger.warn(
        { hostId, skipped, followed: followed.size },
        'a host reports more unknown containers than are followed; the rest wait',
      );
  }

  /** The host is gone (revoked): nothing more is sent to it. */
  forgetHost(hostId: string): void {
    this.#hosts.delete(hostId);
  }

  /** Orphans followed, per host (for tests and logs). */
  followed(hostId: string): string[] {
    return [...(this.#hosts.get(hostId)?.keys() ?? [])];
  }

  /** Queues a `remove` for each orphan reported for the grace. */
  sweep(now: number = this.#d.clock.now()): Promise<void> {
    this.#sweeping ??= this.#sweep(now).finally(() => {
      this.#sweeping = null;
    });
    return this.#sweeping;
  }

  async #sweep(now: number): Promise<void> {
    for (const [hostId, followed] of this.#hosts) {
      for (const [id, orphan] of followed) {
        if (orphan.removing || now - orphan.since < this.#d.graceMs) continue;
        orphan.removing = true;
        try {
          await this.#d.enqueue(hostId, { kind: 'remove', instanceId: id });
          this.#d.logger.info(
            { hostId, instance: id, reportedSince: new Date(orphan.since).toISOString() },
            'removing a container no record places on its host',
          );
        } catch (err) {
          orphan.removing = false;
          this.#d.logger.warn(
            { hostId, instance: id, err: (err as Error).message },
            'could not queue the removal of an unknown container',
          );
        }
      }
    }
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.sweep(), Math.max(200, Math.min(this.#d.graceMs / 4, 30_000)));
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}
