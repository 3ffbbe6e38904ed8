/**
 * Revocations as one replica learns them: its own, at once; another replica's, through the relay;
 * and those written elsewhere (the CLI, a replica whose notification was lost), found by a
 * one-query look for revocations since the last. Each revocation ends the host's credential and
 * long-polls here every time it is learnt, and is announced once.
 */
import type { Clock } from '../domain/clock.js';
import type { HostStore } from './host-store.js';

/** A revocation written this long before the last check is still found (a slow transaction, another process's clock). */
const REVOCATION_MARGIN_MS = 300_000;

export interface HostRevocationsDeps {
  hosts: Pick<HostStore, 'revokedSince'>;
  clock: Clock;
  /** Ends the host's credential and long-polls here (each time the revocation is learnt). */
  stop(hostId: string, at: number): void;
  /** Tells the listeners (once per host). */
  announce(hostId: string, at: number): void;
}

export class HostRevocations {
  readonly #deps: HostRevocationsDeps;
  /** Revocations already announced here. */
  readonly #announced = new Set<string>();
  #checkedAt: number;

  constructor(deps: HostRevocationsDeps) {
    this.#deps = deps;
    this.#checkedAt = deps.clock.now();
  }

  /** Whether the host's revocation was announced here. */
  has(hostId: string): boolean {
    return this.#announced.has(hostId);
  }

  /** A revocation learnt here: its host stops at once, and it is announced unless it was already. */
  revoked(hostId: string, at: number): void {
    this.#deps.stop(hostId, at);
    if (this.#announced.has(hostId)) return;
    this.#announced.add(hostId);
    this.#deps.announce(hostId, at);
  }

  /** Finds hosts revoked elsewhere since the last look. */
  async sync(): Promise<void> {
    const now = this.#deps.clock.now();
    const found = await this.#deps.hosts.revokedSince(this.#checkedAt - REVOCATION_MARGIN_MS);
    this.#checkedAt = now;
    for (const { id, revokedAt } of found) if (!this.#announced.has(id)) this.revoked(id, revokedAt);
  }
}
