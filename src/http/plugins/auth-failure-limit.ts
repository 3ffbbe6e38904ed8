import type { Clock } from '../../domain/clock.js';
import { ApiError } from '../../domain/errors.js';
import { admit, newCounters, type Quotas, type WindowCounters } from '../../domain/rate-windows.js';

/** Wrong join tokens or host credentials one client address may send, per window (docs/security.md). */
const AUTH_FAILURE_QUOTAS: Quotas = { minute: 20, hour: 200, day: 1000 };
/** Addresses remembered at most; past it, those whose day window is over are forgotten first. */
const MAX_CLIENTS = 10_000;

/**
 * Counts failed authentications (a wrong join token, an unknown host credential) per client
 * address, in the same fixed windows as the API's rate limits; once a window's quota is spent the
 * address's guesses are refused with 429 before they are looked up, until the window ends. Only
 * failures count, and an agent whose credential this replica already knows is let through even
 * from a refused address (hosts behind one NAT share it with whoever guesses). A secret of ~190
 * random bits cannot be guessed anyway; this keeps guessing from costing the database anything.
 */
export class AuthFailureLimiter {
  readonly #counters = new Map<string, WindowCounters>();

  constructor(
    private readonly clock: Clock,
    private readonly quotas: Quotas = AUTH_FAILURE_QUOTAS,
  ) {}

  /** The 429 RATE_LIMITED to answer when the address spent its quota of failures, else null; counts nothing. */
  refusal(client: string): ApiError | null {
    const counters = this.#counters.get(client);
    if (!counters) return null;
    // a trial admission on a copy: would one more failure still be allowed?
    const trial = admit(
      { starts: [...counters.starts], counts: [...counters.counts] },
      this.quotas,
      this.clock.now(),
      1,
    );
    if (trial.allowed) return null;
    return new ApiError(
      'RATE_LIMITED',
      `Too many failed authentications from this address (${this.quotas[trial.exceeded!]} per ${trial.exceeded}); retry in ${trial.retryAfterSeconds} s.`,
      {
        headers: { 'Retry-After': String(trial.retryAfterSeconds) },
      },
    );
  }

  /** Counts a failure of the address. */
  failed(client: string): void {
    let counters = this.#counters.get(client);
    if (!counters) {
      if (this.#counters.size >= MAX_CLIENTS) this.#forget();
      counters = newCounters();
      this.#counters.set(client, counters);
    }
    admit(counters, this.quotas, this.clock.now(), 1);
  }

  #forget(): void {
    const day = 86_400_000;
    const today = this.clock.now() - (this.clock.now() % day);
    for (const [client, counters] of this.#counters) if (counters.starts[2] < today) this.#counters.delete(client);
    // still nearly full: the oldest tenth goes (a Map iterates in insertion order)
    for (const client of this.#counters.keys()) {
      if (this.#counters.size < MAX_CLIENTS * 0.9) break;
      this.#counters.delete(client);
    }
  }
}
