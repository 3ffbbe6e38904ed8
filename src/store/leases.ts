/**
 * Leases: which replica drives a control loop (DESIGN "Scale-out"). Several `gantry serve`
 * replicas may share one PostgreSQL database; each loop (timekeeper, autoscaler, webhook
 * dispatcher, pod sweep) runs under a named lease so exactly one replica drives it, while every
 * replica keeps serving requests.
 *
 * - PostgreSQL: a lease is a session-level advisory lock (`pg_try_advisory_lock`) held on one
 *   dedicated connection per replica, outside the pool. The lock lasts exactly as long as that
 *   session, so a replica that dies or loses its connection loses its leases, and another replica
 *   takes them on its next attempt. Leases held are re-checked every `renewIntervalMs` (a query on
 *   the session, which also proves it alive); leases wanted but not held are tried again.
 * - SQLite (one process owns the database): every lease is always held.
 *
 * A loop asks `lease.isHeld()` (synchronous, no I/O) at the top of each scheduled pass. A pass
 * already under way when the lease is lost runs to its end; the next one does not start.
 */
import type { Logger } from 'pino';
import type { Session, Sessions } from './database.js';

export interface Lease {
  readonly name: string;
  /** Whether this replica holds the lease, as of the last check. */
  isHeld(): boolean;
  /**
   * Counts the times the lease was gained: it changes on every (re)acquisition, so a loop can redo
   * its start-up work (another replica drove it meanwhile). 0 until first held.
   */
  readonly term: number;
  /** Wants the lease (the replica keeps trying to take it) and tries now; answers whether it is held. */
  acquire(): Promise<boolean>;
  /** Re-checks a held lease (still ours?) or tries again to take a wanted one; answers whether it is held. */
  renew(): Promise<boolean>;
  /** Lets the lease go and stops wanting it. */
  release(): Promise<void>;
}

/** The leases of one replica. */
export interface Leases {
  /** The lease of `name` (one object per name); wanted from the start. */
  lease(name: string): Lease;
  /** Starts taking and renewing the wanted leases. */
  start(): Promise<void>;
  /** Gives every lease up (on PostgreSQL by closing the session). */
  close(): Promise<void>;
}

/** Names of the leases of the control loops. */
export const LEASE_NAMES = {
  timekeeper: 'timekeeper',
  autoscaler: 'autoscaler',
  webhooks: 'webhooks',
  pods: 'pods',
} as const;

class LocalLease implements Lease {
  #held = true;
  #term = 1;

  constructor(readonly name: string) {}

  get term(): number {
    return this.#term;
  }

  isHeld(): boolean {
    return this.#held;
  }

  async acquire(): Promise<boolean> {
    if (!this.#held) this.#term++;
    this.#held = true;
    return true;
  }

  async renew(): Promise<boolean> {
    return this.#held;
  }

  async release(): Promise<void> {
    this.#held = false;
  }
}

/** A lease that is always held: the default of every loop, and what one process owning its database needs. */
export const heldLease = (name: string): Lease => new LocalLease(name);

/** The leases of a process that owns its database (SQLite): always held. */
export class LocalLeases implements Leases {
  readonly #leases = new Map<string, Lease>();

  lease(name: string): Lease {
    let lease = this.#leases.get(name);
    if (!lease) {
      lease = new LocalLease(name);
      this.#leases.set(name, lease);
    }
    return lease;
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {}
}

/** 32-bit FNV-1a of a string (UTF-16 code units), unsigned. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The advisory-lock key of a lease: (namespace, name) as two int4 keys. `pg_locks` shows such a
 * lock with the first key in `classid`, the second in `objid` (as unsigned oids) and `objsubid` 2.
 */
export function leaseKey(namespace: string, name: string): { classid: number; objid: number } {
  return { classid: hash32(`gantry:${namespace}`), objid: hash32(name) };
}

const toInt4 = (unsigned: number): number => unsigned | 0;

export interface PostgresLeasesOptions {
  sessions: Sessions;
  /** How often held leases are re-checked and wanted ones tried again. @default 1000 */
  renewIntervalMs?: number;
  logger?: Pick<Logger, 'info' | 'warn'>;
}

class PostgresLease implements Lease {
  wanted = true;
  held = false;
  #term = 0;

  constructor(
    readonly name: string,
    readonly key: { classid: number; objid: number },
    readonly owner: PostgresLeases,
  ) {}

  get term(): number {
    return this.#term;
  }

  gained(): void {
    this.held = true;
    this.#term++;
  }

  isHeld(): boolean {
    return this.held;
  }

  acquire(): Promise<boolean> {
    this.wanted = true;
    return this.owner.renewOne(this);
  }

  renew(): Promise<boolean> {
    return this.owner.renewOne(this);
  }

  release(): Promise<void> {
    this.wanted = false;
    return this.owner.releaseOne(this);
  }
}

/** Leases as advisory locks on one dedicated session per replica. */
export class PostgresLeases implements Leases {
  readonly #sessions: Sessions;
  readonly #renewIntervalMs: number;
  readonly #logger: PostgresLeasesOptions['logger'];
  readonly #leases = new Map<string, PostgresLease>();
  #session: Session | null = null;
  /** Operations on the session run one at a time: advisory locks are re-entrant, so taking one
   * twice from overlapping attempts would need two unlocks. */
  #queue: Promise<unknown> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;
  /** A round under way: a slow server does not pile rounds up behind it. */
  #round: Promise<void> | null = null;
  #closed = false;
  /**
   * After losing its session a replica stands down for a few rounds before it bids again, so a
   * healthy replica (which bids every round) takes the leases over rather than racing the
   * replica whose connection just failed.
   */
  #standDownUntil = 0;

  constructor(options: PostgresLeasesOptions) {
    this.#sessions = options.sessions;
    this.#renewIntervalMs = options.renewIntervalMs ?? 1_000;
    this.#logger = options.logger;
  }

  lease(name: string): Lease {
    let lease = this.#leases.get(name);
    if (!lease) {
      lease = new PostgresLease(name, leaseKey(this.#sessions.namespace, name), this);
      this.#leases.set(name, lease);
    }
    return lease;
  }

  async start(): Promise<void> {
    if (this.#timer || this.#closed) return;
    await this.renewAll();
    this.#timer = setInterval(() => {
      if (this.#round) return;
      this.#round = this.renewAll().finally(() => (this.#round = null));
    }, this.#renewIntervalMs);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#serial(async () => {
      // Ending the session releases every lock it holds.
      const session = this.#session;
      this.#lost(null);
      await session?.close();
    });
  }

  /** One round: re-checks the held leases and tries the wanted ones not held. */
  renewAll(): Promise<void> {
    return this.#serial(async () => {
      const session = await this.#connect();
      if (!session) return;
      try {
        await this.#check(session);
        if (this.#standingDown()) return;
        for (const lease of this.#leases.values()) if (lease.wanted && !lease.held) await this.#tryLock(session, lease);
      } catch (err) {
        this.#failed(session, err);
      }
    });
  }

  /** @internal `Lease.acquire/renew` */
  renewOne(lease: PostgresLease): Promise<boolean> {
    return this.#serial(async () => {
      const session = await this.#connect();
      if (!session) return false;
      try {
        if (lease.held) await this.#check(session);
        if (lease.wanted && !lease.held && !this.#standingDown()) await this.#tryLock(session, lease);
      } catch (err) {
        this.#failed(session, err);
      }
      return lease.held;
    });
  }

  /** @internal `Lease.release` */
  releaseOne(lease: PostgresLease): Promise<void> {
    return this.#serial(async () => {
      if (!lease.held) return;
      lease.held = false;
      const session = this.#session;
      if (!session) return;
      try {
        await session.query('SELECT pg_advisory_unlock($1::int4, $2::int4)', [
          toInt4(lease.key.classid),
          toInt4(lease.key.objid),
        ]);
        this.#logger?.info({ lease: lease.name }, 'lease released');
      } catch (err) {
        this.#failed(session, err);
      }
    });
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #connect(): Promise<Session | null> {
    if (this.#session || this.#closed) return this.#session;
    try {
      const session = await this.#sessions.open();
      if (this.#closed) {
        await session.close();
        return null;
      }
      this.#session = session;
      session.onClose((err) => {
        if (this.#session !== session) return;
        this.#lost(err ?? null);
      });
      return session;
    } catch (err) {
      this.#logger?.warn({ err: (err as Error).message }, 'lease session could not connect; retrying');
      return null;
    }
  }

  /** Held leases whose lock this session no longer holds are lost (it never happens while the session lives, unless someone unlocked it). */
  async #check(session: Session): Promise<void> {
    const held = [...this.#leases.values()].filter((l) => l.held);
    if (held.length === 0) return;
    const classids = [...new Set(held.map((l) => l.key.classid))];
    const rows = await session.query<{ classid: string; objid: string }>(
      `SELECT classid::text AS classid, objid::text AS objid FROM pg_locks
        WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objsubid = 2 AND granted AND classid = ANY($1::oid[])`,
      [classids.map(String)],
    );
    const present = new Set(rows.map((r) => `${r.classid}:${r.objid}`));
    for (const lease of held) {
      if (present.has(`${lease.key.classid}:${lease.key.objid}`)) continue;
      lease.held = false;
      this.#logger?.warn({ lease: lease.name }, 'lease lost: its lock is no longer held');
    }
  }

  async #tryLock(session: Session, lease: PostgresLease): Promise<void> {
    const [row] = await session.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::int4, $2::int4) AS ok', [
      toInt4(lease.key.classid),
      toInt4(lease.key.objid),
    ]);
    if (!row?.ok) return;
    lease.gained();
    this.#logger?.info({ lease: lease.name, term: lease.term }, 'lease acquired');
  }

  /** A query on the session failed: the session cannot be trusted any more; drop it and start over next round. */
  #failed(session: Session, err: unknown): void {
    if (this.#session !== session) return;
    this.#lost(err instanceof Error ? err : new Error(String(err)));
    void session.close();
  }

  #standingDown(): boolean {
    return performance.now() < this.#standDownUntil;
  }

  /** The session is gone (or going): no lease is held any more. */
  #lost(err: Error | null): void {
    this.#session = null;
    if (!this.#closed) this.#standDownUntil = performance.now() + 2.5 * this.#renewIntervalMs;
    for (const lease of this.#leases.values()) {
      if (!lease.held) continue;
      lease.held = false;
      if (err) this.#logger?.warn({ lease: lease.name, err: err.message }, 'lease lost: its connection ended');
    }
  }
}
