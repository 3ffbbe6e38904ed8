/**
 * How many log streams each account holds open on this replica, and the cap on them. Each stream
 * holds a connection and a reader of its instance's output for as long as it is open, so a tenant
 * that opens thousands (with many keys, from many addresses, all within the request rate limits)
 * would hold as many file descriptors on the server. The cap counts an account's streams across
 * all its keys and both routes (pods' and workers' logs); a stream frees its slot when it ends, for
 * whatever reason.
 */
import { ApiError } from '../domain/errors.js';

/** A taken slot; `release()` frees it, once (later calls do nothing). */
export interface LogStreamSlot {
  release(): void;
}

/** What a refused stream is told to wait before trying again. */
const RETRY_AFTER_SECONDS = 5;

export class LogStreamSlots {
  readonly #perAccount: number;
  readonly #held = new Map<string, number>();

  /** `perAccount`: streams one account may hold open at once (config `quotas.logStreams`). */
  constructor(perAccount: number) {
    this.#perAccount = Math.max(1, Math.floor(perAccount));
  }

  /** Streams `accountId` holds open now. */
  held(accountId: string): number {
    return this.#held.get(accountId) ?? 0;
  }

  /** Takes a slot for a new stream of `accountId`. @throws ApiError TOO_MANY_LOG_STREAMS (429, Retry-After) at the cap */
  take(accountId: string): LogStreamSlot {
    const held = this.held(accountId);
    if (held >= this.#perAccount)
      throw new ApiError(
        'TOO_MANY_LOG_STREAMS',
        `This account holds ${held} open log streams on this server, the most it may (quotas.logStreams = ${this.#perAccount}); close one, or wait for one to end, and retry in ${RETRY_AFTER_SECONDS} s.`,
        { headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } },
      );
    this.#held.set(accountId, held + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const left = this.held(accountId) - 1;
        if (left > 0) this.#held.set(accountId, left);
        else this.#held.delete(accountId);
      },
    };
  }
}
