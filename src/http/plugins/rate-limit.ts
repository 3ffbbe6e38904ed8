import type { Clock } from '../../domain/clock.js';
import { ApiError } from '../../domain/errors.js';
import {
  admit,
  newCounters,
  rateLimitHeader,
  rateLimitPolicyHeader,
  type Quotas,
  type WindowCounters,
} from '../../domain/rate-windows.js';

const windowLabel = { minute: 'per minute', hour: 'per hour', day: 'per day' } as const;
const WINDOW_INDEX = { minute: 0, hour: 1, day: 2 } as const;

/** Who a limiter counts for, as its 429 names it, and how many it remembers at most. */
interface LimiterOptions {
  /** @default "API key" */
  subject?: string;
  /** Past this many, the counters kept longest are forgotten (callers without a key can come from any number of addresses). @default unbounded (keys are few) */
  maxCounters?: number;
}

/** In-memory per-key counters. Each replica counts its own traffic. */
export class RestRateLimiter {
  readonly #counters = new Map<string, WindowCounters>();
  readonly #policy: string;
  readonly #subject: string;
  readonly #maxCounters: number;

  constructor(
    private readonly quotas: Quotas,
    private readonly clock: Clock,
    options: LimiterOptions = {},
  ) {
    this.#policy = rateLimitPolicyHeader(quotas);
    this.#subject = options.subject ?? 'API key';
    this.#maxCounters = options.maxCounters ?? Infinity;
  }

  /** Counts a request for `keyId`; answers the headers to send, or throws 429. */
  check(keyId: string): Record<string, string> {
    return this.charge(keyId, 1);
  }

  /**
   * Counts `units` more requests for `keyId` at once — a GraphQL document is one request per root
   * field it runs, `counted` of them already counted by `check` — all or none; answers the headers
   * to send, or throws 429 and counts nothing.
   */
  charge(keyId: string, units: number, counted = 0): Record<string, string> {
    let counters = this.#counters.get(keyId);
    if (!counters) {
      if (this.#counters.size >= this.#maxCounters) this.#counters.delete(this.#counters.keys().next().value!);
      counters = newCounters();
      this.#counters.set(keyId, counters);
    }
    const admission = admit(counters, this.quotas, this.clock.now(), units);
    const headers: Record<string, string> = { RateLimit: rateLimitHeader(admission), 'RateLimit-Policy': this.#policy };
    if (!admission.allowed) {
      const window = admission.exceeded!;
      headers['Retry-After'] = String(admission.retryAfterSeconds);
      const total = units + counted;
      const needs =
        total === 1
          ? ''
          : ` This request counts as ${total} requests (one per GraphQL root field) and ${admission.remaining[WINDOW_INDEX[window]]} remain.`;
      throw new ApiError(
        'RATE_LIMITED',
        `Rate limit exceeded for the ${window} window: this ${this.#subject} may make ${this.quotas[window]} requests ${windowLabel[window]}; retry in ${admission.retryAfterSeconds} s.${needs}`,
        { headers },
      );
    }
    return headers;
  }
}
