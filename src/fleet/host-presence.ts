/**
 * What one replica knows of each host it serves: its credential hash, whether it is revoked, when
 * its agent was last heard from and how many long-polls it holds open here. A few dozen bytes a
 * host; filled on a host's first authenticated call (one read), kept up to date by this replica's
 * own revocations and the ones relayed or found (host-revocations.ts).
 *
 * Signs of life cost no write each: `flush` writes those gathered since the last flush in one
 * batched statement (a host holding a long-poll counts as seen at the flush).
 */
import { iso, type Clock } from '../domain/clock.js';
import { ApiError } from '../domain/errors.js';
import { credentialHostId, secretMatches } from './host-secrets.js';
import type { HostStore } from './host-store.js';

interface Entry {
  hash: string;
  revokedAt: number | null;
  lastSeen: number;
  /** the last time written to the database */
  written: number;
  polls: number;
}

const unknownCredential = (): ApiError =>
  new ApiError(
    'UNAUTHORIZED',
    'The host credential is malformed or unknown: send "Authorization: Bearer ghc_…", the credential the agent received when it joined.',
    {
      headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
    },
  );

const hostRevoked = (hostId: string, at: number): ApiError =>
  new ApiError(
    'HOST_REVOKED',
    `Host ${hostId} was revoked at ${iso(at)}: its credential no longer works. Stop its agent; to bring the machine back, join it again with a new token (gantry hosts token create).`,
  );

export class HostPresence {
  readonly #entries = new Map<string, Entry>();

  constructor(
    private readonly store: Pick<HostStore, 'getHost' | 'touchHosts'>,
    private readonly clock: Clock,
  ) {}

  /** Hosts this replica has heard from (or of) since it started. */
  get size(): number {
    return this.#entries.size;
  }

  /** A host that just joined here. */
  joined(hostId: string, credentialHash: string, now: number): void {
    this.#entries.set(hostId, { hash: credentialHash, revokedAt: null, lastSeen: now, written: now, polls: 0 });
  }

  /**
   * The host a credential belongs to. 401 UNAUTHORIZED for anything else (one message, whatever
   * was wrong: the caller learns nothing about which hosts exist); 401 HOST_REVOKED only for a
   * revoked host's true credential. With `unlessKnown`, a credential this replica cannot check
   * without the database is refused with that error instead (the caller's address is guessing).
   */
  async authenticate(credential: string, options: { unlessKnown?: Error | null } = {}): Promise<string> {
    const hostId = credentialHostId(credential);
    if (hostId === null) throw options.unlessKnown ?? unknownCredential();
    let entry = this.#entries.get(hostId);
    if (entry && options.unlessKnown && !secretMatches(credential, entry.hash)) throw options.unlessKnown;
    if (!entry) {
      if (options.unlessKnown) throw options.unlessKnown;
      const record = await this.store.getHost(hostId);
      if (!record) throw unknownCredential();
      const seen = record.lastReportAt ?? record.joinedAt;
      entry = this.#entries.get(hostId) ?? {
        hash: record.credentialHash,
        revokedAt: record.revokedAt,
        lastSeen: seen,
        written: seen,
        polls: 0,
      };
      this.#entries.set(hostId, entry);
    }
    if (!secretMatches(credential, entry.hash)) throw unknownCredential();
    if (entry.revokedAt !== null) throw hostRevoked(hostId, entry.revokedAt);
    return hostId;
  }

  /** 401 HOST_REVOKED when the host was revoked since it authenticated. */
  assertLive(hostId: string): void {
    const at = this.#entries.get(hostId)?.revokedAt;
    if (at !== undefined && at !== null) throw hostRevoked(hostId, at);
  }

  revoked(hostId: string, at: number): void {
    const entry = this.#entries.get(hostId);
    if (entry && entry.revokedAt === null) entry.revokedAt = at;
  }

  /** A sign of life (memory only). Answers now. */
  seen(hostId: string): number {
    const now = this.clock.now();
    const entry = this.#entries.get(hostId);
    if (entry && now > entry.lastSeen) entry.lastSeen = now;
    return now;
  }

  /** A long-poll opened here; call the answer when it ends. An open poll keeps the host seen. */
  pollOpened(hostId: string): () => void {
    const entry = this.#entries.get(hostId);
    if (!entry) return () => {};
    entry.polls += 1;
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      entry.polls -= 1;
    };
  }

  /** The latest sign of life known here (a host polling now counts as seen now), or null. */
  lastSeen(hostId: string): number | null {
    const entry = this.#entries.get(hostId);
    if (!entry) return null;
    return entry.polls > 0 ? Math.max(entry.lastSeen, this.clock.now()) : entry.lastSeen;
  }

  /** Writes the signs of life gathered since the last flush. Answers how many hosts. */
  async flush(): Promise<number> {
    const now = this.clock.now();
    const due: Array<[string, number]> = [];
    for (const [id, entry] of this.#entries) {
      if (entry.revokedAt !== null) continue;
      if (entry.polls > 0 && now > entry.lastSeen) entry.lastSeen = now;
      if (entry.lastSeen > entry.written) due.push([id, entry.lastSeen]);
    }
    if (due.length === 0) return 0;
    await this.store.touchHosts(due);
    for (const [id, at] of due) {
      const entry = this.#entries.get(id);
      if (entry && entry.written < at) entry.written = at;
    }
    return due.length;
  }
}
