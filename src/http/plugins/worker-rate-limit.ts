import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../../domain/clock.js';
import { ApiError } from '../../domain/errors.js';
import { pathParam } from '../type-provider.js';
import {
  admitJobRequest,
  isIdleJobWindow,
  JOB_RATE_WINDOW_MS,
  newJobWindow,
  releaseJobRequest,
  type JobWindow,
} from '../../domain/job-rate-limits.js';

export interface WorkerRateLimiterDeps {
  clock: Clock;
  /** Calls per 10 s per worker id within its endpoint; 0: no limit. */
  perWorker: number;
  /** Calls per 10 s per endpoint; 0: no limit. Raised to `perWorker` × its running launched workers when that is more. */
  perEndpoint: number;
  /** Running workers the platform launched for the endpoint (pings with made-up ids never count). */
  liveWorkers: (endpointId: string) => number;
}

/**
 * The worker protocol's limits: calls per 10-second window per worker and per endpoint, counted
 * per account (the caller's), so calls naming another account's endpoint fill only the caller's
 * own counters. Counted in this replica's memory (each replica admits up to the limits).
 */
export class WorkerRateLimiter {
  readonly #windows = new Map<string, JobWindow>();
  readonly #deps: WorkerRateLimiterDeps;
  #lastSweep = 0;

  constructor(deps: WorkerRateLimiterDeps) {
    this.#deps = deps;
  }

  /** Counts one call, or throws 429 RATE_LIMITED with `Retry-After` (a refused call is not counted). */
  admit(accountId: string, endpointId: string, workerId: string): void {
    const { perWorker, perEndpoint } = this.#deps;
    if (perWorker <= 0 && perEndpoint <= 0) return;
    const now = this.#deps.clock.now();
    this.#sweep(now);
    const endpointKey = `${accountId}\u0000${endpointId}`;
    let endpointWindow: JobWindow | null = null;
    if (perEndpoint > 0) {
      endpointWindow = this.#window(endpointKey);
      // Counting the endpoint's workers walks the registry: only worth it once the base is spent.
      const used = endpointWindow.start === now - (now % JOB_RATE_WINDOW_MS) ? endpointWindow.count : 0;
      const rate =
        used < perEndpoint ? perEndpoint : Math.max(perEndpoint, perWorker * this.#deps.liveWorkers(endpointId));
      const admission = admitJobRequest(endpointWindow, { rate, concurrent: null }, now);
      if (!admission.allowed)
        throw refusal(
          `The workers of endpoint ${endpointId} made ${admission.limit} worker-protocol calls within 10 seconds, the most allowed (jobs.workerRateLimits.perEndpoint); retry in ${admission.retryAfterSeconds} s.`,
          admission.retryAfterSeconds,
        );
      releaseJobRequest(endpointWindow);
    }
    if (perWorker > 0) {
      const workerWindow = this.#window(`${endpointKey}\u0000${workerId}`);
      const admission = admitJobRequest(workerWindow, { rate: perWorker, concurrent: null }, now);
      if (!admission.allowed) {
        if (endpointWindow) endpointWindow.count = Math.max(0, endpointWindow.count - 1);
        throw refusal(
          `Worker ${workerId.slice(0, 128)} of endpoint ${endpointId} made ${admission.limit} worker-protocol calls within 10 seconds, the most allowed per worker (jobs.workerRateLimits.perWorker); retry in ${admission.retryAfterSeconds} s.`,
          admission.retryAfterSeconds,
        );
      }
      releaseJobRequest(workerWindow);
    }
  }

  /** Counters kept (for tests). */
  get size(): number {
    return this.#windows.size;
  }

  #window(key: string): JobWindow {
    let window = this.#windows.get(key);
    if (!window) {
      window = newJobWindow();
      this.#windows.set(key, window);
    }
    return window;
  }

  /** Forgets windows idle for a whole period: fresh worker ids must not grow the map for good. */
  #sweep(now: number): void {
    if (now - this.#lastSweep < JOB_RATE_WINDOW_MS) return;
    this.#lastSweep = now;
    for (const [key, w] of this.#windows) if (isIdleJobWindow(w, now)) this.#windows.delete(key);
  }
}

const refusal = (detail: string, retryAfterSeconds: number): ApiError =>
  new ApiError('RATE_LIMITED', detail, { headers: { 'Retry-After': String(retryAfterSeconds) } });

/** Refusals a `deferred` hook held back for its handler to decide (see `workerRateLimitHook`). */
const deferred = new WeakMap<FastifyRequest, ApiError>();

/** The rate limit refusal a `deferred` hook held back for this request, if any. */
export const deferredRefusal = (request: FastifyRequest): ApiError | undefined => deferred.get(request);

/**
 * The route hook applying the worker protocol limits, once the caller is authenticated. With
 * `deferred`, a call over a limit is not refused here: its refusal is kept for the handler
 * (`deferredRefusal`), which admits what must never be lost (a result finishing a job the worker
 * holds) and throws the refusal otherwise.
 */
export function workerRateLimitHook(limiter: WorkerRateLimiter, options: { deferred?: boolean } = {}) {
  // Callback-style: an async hook costs a promise per call on the protocol's hottest routes.
  return (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
    const principal = request.principal;
    if (!principal || principal.rateLimitExempt) return done();
    const endpointId = pathParam(request, 'endpointId') ?? '';
    const workerId = pathParam(request, 'workerId') ?? '';
    try {
      limiter.admit(principal.accountId, endpointId, workerId);
    } catch (err) {
      if (options.deferred && err instanceof ApiError) {
        deferred.set(request, err);
        return done();
      }
      return done(err as Error);
    }
    done();
  };
}
