/**
 * The fleet journal: what one control-plane replica tells the others about the fleet (docs/fleet.md
 * "Replicas"). Each replica's fleet runtime keeps the agents' last word in memory, and an agent
 * talks to one replica at a time; with several replicas on one PostgreSQL database every runtime
 * must still know every instance (any replica may be asked to stop a pod another one started). So
 * a replica appends here what only it learned:
 * - `start` / `end`: an operation it queued (the instance, its owner; never the spec, which holds
 *   tenant secrets and stays sealed in `host_operations`);
 * - `acks` / `report`: what an agent reporting to it acknowledged and reported (the instances
 *   after the ownership check, so the others need not check again).
 * The others read the entries in `seq` order, woken by a relayed notification
 * (`FLEET_JOURNAL_TOPIC`) or, if that was lost, by their next periodic read, and apply them as if
 * they had happened there (`FleetRuntime.replay`).
 *
 * - Appends are batched and serial per replica (one insert at a time, entries in their order), so
 *   one replica's entries keep their order in `seq`.
 * - Gaps: PostgreSQL hands out `seq` values at insert, and a later insert may commit first. A
 *   reader that sees `seq` n+2 before n+1 remembers n+1 and asks for it again on its next reads for
 *   `GAP_WAIT_MS` (a rolled-back insert leaves a gap for ever).
 * - A replica reads only what was appended after it started: what came before is in the records
 *   (`attach()`), and the hosts' next full reports (the fleet service asks for them) settle the rest.
 * - Entries are pruned after `JOURNAL_RETENTION_MS` by whichever replica prunes first.
 * SQLite has one process: no journal.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { InstanceOwner } from '../runtime/runtime.js';
import type { Db } from '../store/database.js';
import type { InstanceReport, OperationAck } from './protocol.js';

/** Relay topic: new journal entries (key: empty). */
export const FLEET_JOURNAL_TOPIC = 'fleet-journal';
export const JOURNAL_RETENTION_MS = 600_000;
/** How long a missing `seq` is asked for again before it counts as a rolled-back insert. */
export const GAP_WAIT_MS = 10_000;
/** Most missing `seq` values remembered at once (beyond: a crash skipped values; they are let go). */
const MAX_GAPS = 1_000;
const READ_PAGE = 500;
const APPEND_BATCH = 200;

export type JournalEntry =
  | { t: 'start'; opId: string; id: string; owner: InstanceOwner; startedAt: number; volumes: string[] }
  | { t: 'end'; opId: string; kind: 'stop' | 'remove'; id: string }
  | { t: 'acks'; acks: OperationAck[] }
  | { t: 'report'; full: boolean; items: InstanceReport[] };

export interface JournalRecord {
  seq: number;
  hostId: string;
  at: number;
  entry: JournalEntry;
}

export interface FleetJournalDeps {
  db: Db;
  /** this replica's id (the notify relay's) */
  origin: string;
  clock: Clock;
  logger: Pick<Logger, 'warn'>;
  /** tells the other replicas there is something to read */
  publish?: () => void;
}

export class FleetJournal {
  readonly #d: FleetJournalDeps;
  #cursor = 0;
  /** missing seq → when first missed */
  readonly #gaps = new Map<number, number>();
  #queue: Array<{ host_id: string; origin: string; entry: string; at: number }> = [];
  #appending: Promise<void> | null = null;

  constructor(deps: FleetJournalDeps) {
    this.#d = deps;
  }

  get origin(): string {
    return this.#d.origin;
  }

  /** Starts reading after what is there now. */
  async start(): Promise<void> {
    const row = await this.#d.db.kysely
      .selectFrom('fleet_journal')
      .select((eb) => eb.fn.max('seq').as('max'))
      .executeTakeFirst();
    this.#cursor = Number(row?.max ?? 0);
  }

  /** Appends an entry about `hostId` (soon, in order with this replica's other entries), then tells the others. */
  append(hostId: string, entry: JournalEntry): void {
    this.#queue.push({
      host_id: hostId,
      origin: this.#d.origin,
      entry: JSON.stringify(entry),
      at: this.#d.clock.now(),
    });
    this.#appending ??= this.#drain();
  }

  /** Resolves once every entry appended so far is written (or failed). */
  async flush(): Promise<void> {
    while (this.#appending) await this.#appending;
  }

  async #drain(): Promise<void> {
    // let the entries of this turn of the event loop go in one insert
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, APPEND_BATCH);
        try {
          await this.#d.db.kysely.insertInto('fleet_journal').values(batch).execute();
          this.#d.publish?.();
        } catch (err) {
          // The others miss these entries; the hosts' next full reports and the records repair their view.
          this.#d.logger.warn(
            { err: (err as Error).message, entries: batch.length },
            'writing fleet journal entries failed',
          );
        }
      }
    } finally {
      this.#appending = null;
    }
  }

  /**
   * The entries other replicas appended since the last read, in `seq` order (at most a page:
   * `more` says to read again). Calls must not overlap.
   */
  async read(): Promise<{ records: JournalRecord[]; more: boolean }> {
    const now = this.#d.clock.now();
    for (const [seq, since] of this.#gaps) if (now - since > GAP_WAIT_MS) this.#gaps.delete(seq);
    const missing = [...this.#gaps.keys()];
    const cursor = this.#cursor;
    const rows = await this.#d.db.kysely
      .selectFrom('fleet_journal')
      .select(['seq', 'host_id', 'origin', 'entry', 'at'])
      .where((eb) =>
        missing.length > 0 ? eb.or([eb('seq', '>', cursor), eb('seq', 'in', missing)]) : eb('seq', '>', cursor),
      )
      .orderBy('seq')
      .limit(READ_PAGE + missing.length)
      .execute();
    const records: JournalRecord[] = [];
    let expected = cursor + 1;
    let fresh = 0;
    for (const row of rows) {
      const seq = Number(row.seq);
      if (seq <= cursor) {
        if (!this.#gaps.delete(seq)) continue;
      } else {
        fresh++;
        for (let s = expected; s < seq && this.#gaps.size < MAX_GAPS; s++) this.#gaps.set(s, now);
        expected = seq + 1;
        this.#cursor = seq;
      }
      if (row.origin === this.#d.origin) continue;
      try {
        records.push({ seq, hostId: row.host_id, at: Number(row.at), entry: JSON.parse(row.entry) as JournalEntry });
      } catch {
        this.#d.logger.warn({ seq }, 'a fleet journal entry does not parse; skipped');
      }
    }
    return { records, more: fresh >= READ_PAGE };
  }

  /** Deletes entries older than the retention. Answers how many. */
  async prune(now: number = this.#d.clock.now()): Promise<number> {
    const r = await this.#d.db.kysely
      .deleteFrom('fleet_journal')
      .where('at', '<', now - JOURNAL_RETENTION_MS)
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
