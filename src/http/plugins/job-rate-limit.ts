import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../../domain/clock.js';
import { ApiError } from '../../domain/errors.js';
import { pathParam } from '../type-provider.js';
import {
  addRemoteJobRequests,
  admitJobRequest,
  effectiveRate,
  isIdleJobWindow,
  JOB_OPERATION_LIMITS,
  JOB_RATE_WINDOW_MS,
  newJobWindow,
  releaseJobRequest,
  type JobOperation,
  type JobRequestCounts,
  type JobWindow,
} from '../../domain/job-rate-limits.js';

export interface JobRateLimiterDeps {
  clock: Clock;
  /** Live workers of an endpoint, for the dynamic limit. */
  liveWorkers: (endpointId: string) => number;
  /** Requests per 10 s each live worker adds. @default 200 */
  perWorker?: number;
  /** @default true */
  enabled?: boolean;
  /** Tells the other replicas of requests admitted here (see `JobRequestCounts`). */
  share?: Pick<JobRequestCounts, 'publish'>;
}

const opLabel = (op: JobOperation): string => (op === 'openai' ? '/openai/*' : `/${op}`);

/**
 * In-memory counters of the job API limits (spec 8.1), per user (the account, whichever of its
 * keys calls), endpoint and operation. With `share`, the rates count every replica's admitted
 * requests (`receive`); the in-flight caps count this replica's only.
 */
export class JobRateLimiter {
  readonly #windows = new Map<string, JobWindow>();
  readonly #deps: JobRateLimiterDeps;
  #lastSweep = 0;

  constructor(deps: JobRateLimiterDeps) {
    this.#deps = deps;
  }

  /**
   * Admits one request, or throws 429 RATE_LIMITED with `Retry-After`. Answers the function that
   * ends the request's flight (idempotent).
   */
  admit(accountId: string, endpointId: string, op: JobOperation): () => void {
    if (this.#deps.enabled === false) return () => {};
    const now = this.#deps.clock.now();
    this.#sweep(now);
    const id = `${accountId}\u0000${endpointId}\u0000${op}`;
    let window = this.#windows.get(id);
    if (!window) {
      window = newJobWindow();
      this.#windows.set(id, window);
    }
    const base = JOB_OPERATION_LIMITS[op];
    const rate = effectiveRate(base, this.#deps.liveWorkers(endpointId), this.#deps.perWorker ?? 200);
    const admission = admitJobRequest(window, { rate, concurrent: base.concurrent }, now);
    if (!admission.allowed) {
      const detail =
        admission.exceeded === 'rate'
          ? `Rate limit exceeded for ${opLabel(op)} on endpoint ${endpointId}: you may make ${admission.limit} requests per 10 seconds (all your keys together); retry in ${admission.retryAfterSeconds} s.`
          : `Concurrency limit exceeded for ${opLabel(op)} on endpoint ${endpointId}: you may have ${admission.limit} requests in flight at once; retry in ${admission.retryAfterSeconds} s.`;
      throw new ApiError('RATE_LIMITED', detail, { headers: { 'Retry-After': String(admission.retryAfterSeconds) } });
    }
    this.#deps.share?.publish(`${id}\u0000${window.start}`, 1);
    const admitted = window;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      releaseJobRequest(admitted);
    };
  }

  /** Requests another replica admitted (what its `share.publish` sent). */
  receive(key: string, count: number): void {
    const cut = key.lastIndexOf('\u0000');
    const start = Number(key.slice(cut + 1));
    if (cut < 0 || !Number.isFinite(start) || !(count > 0)) return;
    const id = key.slice(0, cut);
    let window = this.#windows.get(id);
    if (!window) {
      window = newJobWindow();
      this.#windows.set(id, window);
    }
    addRemoteJobRequests(window, start, count);
  }

  /** Counters kept (for tests and metrics). */
  get size(): number {
    return this.#windows.size;
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < JOB_RATE_WINDOW_MS) return;
    this.#lastSweep = now;
    for (const [id, w] of this.#windows) if (isIdleJobWindow(w, now)) this.#windows.delete(id);
  }
}

const releases = new WeakMap<FastifyRequest, () => void>();

/** Ends a request's flight early (replies written outside Fastify's send, e.g. server-sent events). */
export function endJobRequestFlight(request: FastifyRequest): void {
  releases.get(request)?.();
  releases.delete(request);
}

/**
 * Route hooks applying one operation's limit: counted once the caller is authenticated, released
 * when the reply has been sent or the client went away.
 */
export function jobRateLimitHooks(limiter: JobRateLimiter, op: JobOperation) {
  // Callback-style hooks: an async hook costs a promise per request on the hottest routes.
  const release = (request: FastifyRequest, _reply: FastifyReply, done: () => void): void => {
    endJobRequestFlight(request);
    done();
  };
  return {
    onRequest: (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
      const principal = request.principal;
      if (!principal || principal.rateLimitExempt) return done();
      const endpointId = pathParam(request, 'endpointId') ?? '';
      try {
        releases.set(request, limiter.admit(principal.accountId, endpointId, op));
      } catch (err) {
        return done(err as Error);
      }
      done();
    },
    onResponse: release,
    onRequestAbort: (request: FastifyRequest, done: () => void): void => {
      endJobRequestFlight(request);
      done();
    },
  };
}
