/**
 * Wake-ups across replicas (DESIGN "Jobs: the hot path"): a replica's local notifications (a job
 * queued, finished, streamed, to stop) are forwarded to every other replica sharing the database,
 * whose long-polls then wake as if the event had happened there.
 *
 * On PostgreSQL it is `LISTEN/NOTIFY` on one channel per namespace (schema), over one dedicated
 * session per replica:
 * - Sending is batched: notifications are gathered and sent on the next turn of the event loop,
 *   the same topic and key coalesced (their counts added), as few `pg_notify` calls as fit under
 *   PostgreSQL's payload limit; while one send is under way the next batch gathers. The hot path
 *   only adds to a map.
 * - Each payload names its sender, so a replica ignores its own notifications (PostgreSQL delivers
 *   them to the sending session too) and nothing is relayed twice.
 * - A notification sent after a commit reaches a waiter that registered before reading the
 *   database, so nothing is lost between read and wait (the order `JobSignals` relies on).
 * - When the session drops, notifications are lost both ways until it is back; on reconnecting the
 *   relay wakes every local waiter and tells the other replicas to wake theirs, and each re-reads
 *   the database.
 */
import type { Logger } from 'pino';
import { newId } from '../domain/ids.js';
import { sql } from 'kysely';
import type { Db, Session, Sessions } from './database.js';

/** Where relayed notifications go (the replica's `JobSignals`). */
export interface RelayTarget {
  /** A notification from another replica: wake local waiters only. `count` Infinity = all. */
  deliver(topic: string, key: string, count: number): void;
  /** Wake every local waiter (notifications may have been missed). */
  wakeAll(): void;
}

export interface NotifyRelay {
  /** Forwards a local notification to the other replicas (soon, batched). */
  readonly publish: (topic: string, key: string, count: number) => void;
  /** Sets where notifications from other replicas go. */
  deliverTo(target: RelayTarget): void;
  /** Connects and listens; until then `publish` drops what it is given. */
  start(): Promise<void>;
  /** Resolves once everything published so far was sent (or dropped, the session being down). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** PostgreSQL refuses payloads of 8000 bytes or more; keep a margin. */
const MAX_PAYLOAD_BYTES = 7_900;
const PAYLOAD_VERSION = 1;
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;
/** Longest channel name PostgreSQL keeps (NAMEDATALEN - 1). */
const MAX_CHANNEL = 63;

/** What one payload carries: its sender, and either entries `[topic, key, count]` (count 0 = all) or a wake-all. */
interface Payload {
  v: number;
  o: string;
  m?: Array<[string, string, number]>;
  all?: true;
}

/** The channel of a namespace: `gantry_<namespace>`, hashed when too long for an identifier. */
export function relayChannel(namespace: string): string {
  const name = `gantry_${namespace}`;
  if (name.length <= MAX_CHANNEL) return name;
  let h = 0x811c9dc5;
  for (let i = 0; i < namespace.length; i++) h = Math.imul(h ^ namespace.charCodeAt(i), 0x01000193);
  return `gantry_${namespace.slice(0, 40)}_${(h >>> 0).toString(16)}`;
}

/**
 * Splits entries into payloads under `maxBytes`, each a JSON text. An entry too large for any
 * payload (a key of thousands of bytes) is dropped; keys are ids.
 */
export function encodePayloads(
  origin: string,
  entries: Iterable<[string, string, number]>,
  maxBytes = MAX_PAYLOAD_BYTES,
): string[] {
  const head = `{"v":${PAYLOAD_VERSION},"o":${JSON.stringify(origin)},"m":[`;
  const tail = ']}';
  const payloads: string[] = [];
  let parts: string[] = [];
  let size = Buffer.byteLength(head) + tail.length;
  const base = size;
  for (const [topic, key, count] of entries) {
    const part = JSON.stringify([topic, key, Number.isFinite(count) ? count : 0]);
    const bytes = Buffer.byteLength(part) + 1;
    if (base + bytes > maxBytes) continue;
    if (size + bytes > maxBytes) {
      payloads.push(head + parts.join(',') + tail);
      parts = [];
      size = base;
    }
    parts.push(part);
    size += bytes;
  }
  if (parts.length > 0) payloads.push(head + parts.join(',') + tail);
  return payloads;
}

/** Parses a payload; null for anything not of this format. */
export function decodePayload(text: string): Payload | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const p = value as Partial<Payload>;
  if (p.v !== PAYLOAD_VERSION || typeof p.o !== 'string') return null;
  if (p.all === true) return { v: p.v, o: p.o, all: true };
  if (!Array.isArray(p.m)) return null;
  const m = p.m.filter(
    (e): e is [string, string, number] =>
      Array.isArray(e) && typeof e[0] === 'string' && typeof e[1] === 'string' && typeof e[2] === 'number' && e[2] >= 0,
  );
  return { v: p.v, o: p.o, m };
}

export interface PostgresNotifyRelayOptions {
  sessions: Sessions;
  logger?: Pick<Logger, 'info' | 'warn'>;
  /** @default 7900 */
  maxPayloadBytes?: number;
}

export class PostgresNotifyRelay implements NotifyRelay {
  /** This replica's name in payloads. */
  readonly origin = newId(10);
  readonly channel: string;
  readonly #sessions: Sessions;
  readonly #logger: PostgresNotifyRelayOptions['logger'];
  readonly #maxBytes: number;
  /** topic → key → count, waiting for the next send. */
  #pending = new Map<string, Map<string, number>>();
  #scheduled = false;
  #sending: Promise<void> | null = null;
  #target: RelayTarget | null = null;
  #session: Session | null = null;
  #started = false;
  #closed = false;
  #reconnectTimer: NodeJS.Timeout | null = null;
  #reconnectDelay = RECONNECT_MIN_MS;
  #wasConnected = false;

  constructor(options: PostgresNotifyRelayOptions) {
    this.#sessions = options.sessions;
    this.#logger = options.logger;
    this.#maxBytes = options.maxPayloadBytes ?? MAX_PAYLOAD_BYTES;
    this.channel = relayChannel(options.sessions.namespace);
  }

  readonly publish = (topic: string, key: string, count: number): void => {
    if (!this.#session || !(count > 0)) return;
    let keys = this.#pending.get(topic);
    if (!keys) {
      keys = new Map();
      this.#pending.set(topic, keys);
    }
    const before = keys.get(key) ?? 0;
    keys.set(key, before + count);
    this.#schedule();
  };

  deliverTo(target: RelayTarget): void {
    this.#target = target;
  }

  async start(): Promise<void> {
    if (this.#started || this.#closed) return;
    this.#started = true;
    if (!(await this.#connect())) this.#scheduleReconnect();
  }

  async flush(): Promise<void> {
    while (this.#sending || this.#scheduled) {
      if (this.#sending) await this.#sending;
      else await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
    await this.flush().catch(() => undefined);
    const session = this.#session;
    this.#session = null;
    await session?.close();
  }

  #schedule(): void {
    if (this.#scheduled || this.#sending) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#sending = this.#send().finally(() => {
        this.#sending = null;
        if (this.#pending.size > 0) this.#schedule();
      });
    });
  }

  async #send(): Promise<void> {
    const pending = this.#pending;
    this.#pending = new Map();
    const session = this.#session;
    if (!session) return;
    const entries = function* (): Generator<[string, string, number]> {
      for (const [topic, keys] of pending) for (const [key, count] of keys) yield [topic, key, count];
    };
    try {
      for (const payload of encodePayloads(this.origin, entries(), this.#maxBytes))
        await session.query('SELECT pg_notify($1, $2)', [this.channel, payload]);
    } catch (err) {
      // The session is likely gone; its close handler reconnects, and the wake-all on reconnect covers what was lost.
      this.#logger?.warn({ err: (err as Error).message }, 'relaying notifications failed');
    }
  }

  async #connect(): Promise<boolean> {
    let session: Session;
    try {
      session = await this.#sessions.open();
    } catch (err) {
      this.#logger?.warn({ err: (err as Error).message }, 'notify relay could not connect; retrying');
      return false;
    }
    if (this.#closed) {
      await session.close();
      return true;
    }
    session.onNotification((channel, payload) => {
      if (channel === this.channel) this.#receive(payload);
    });
    try {
      await session.query(`LISTEN "${this.channel}"`);
    } catch (err) {
      this.#logger?.warn({ err: (err as Error).message }, 'notify relay could not listen; retrying');
      await session.close();
      return false;
    }
    session.onClose((err) => {
      if (this.#session !== session) return;
      this.#session = null;
      this.#pending.clear();
      if (this.#closed) return;
      this.#logger?.warn({ err: err?.message }, 'notify relay connection lost; reconnecting');
      this.#scheduleReconnect();
    });
    const reconnected = this.#wasConnected;
    this.#session = session;
    this.#wasConnected = true;
    this.#reconnectDelay = RECONNECT_MIN_MS;
    if (reconnected) {
      // Notifications were lost both ways while disconnected: everyone re-reads the database.
      this.#target?.wakeAll();
      await session
        .query('SELECT pg_notify($1, $2)', [
          this.channel,
          JSON.stringify({ v: PAYLOAD_VERSION, o: this.origin, all: true } satisfies Payload),
        ])
        .catch(() => undefined);
      this.#logger?.info({ channel: this.channel }, 'notify relay reconnected');
    }
    return true;
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#reconnectTimer) return;
    const delay = this.#reconnectDelay;
    this.#reconnectDelay = Math.min(RECONNECT_MAX_MS, delay * 2);
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = null;
      void this.#connect().then((ok) => {
        if (!ok) this.#scheduleReconnect();
      });
    }, delay);
    this.#reconnectTimer.unref();
  }

  #receive(text: string): void {
    const payload = decodePayload(text);
    if (!payload || payload.o === this.origin || !this.#target) return;
    if (payload.all) {
      this.#target.wakeAll();
      return;
    }
    for (const [topic, key, count] of payload.m ?? [])
      this.#target.deliver(topic, key, count === 0 ? Number.POSITIVE_INFINITY : count);
  }
}

/**
 * Sends one notification to every replica of the database, from a process that runs no relay (a
 * CLI command): e.g. a host revoked by `gantry hosts revoke` is refused by every replica at once.
 * Nothing to do without LISTEN/NOTIFY (SQLite: the server looks for such changes itself).
 */
export async function notifyReplicasOnce(db: Db, topic: string, key: string): Promise<void> {
  if (!db.capabilities.listenNotify || !db.sessions) return;
  const [payload] = encodePayloads(`once-${newId(8)}`, [[topic, key, 1]]);
  if (payload) await sql`SELECT pg_notify(${relayChannel(db.sessions.namespace)}, ${payload})`.execute(db.kysely);
}
