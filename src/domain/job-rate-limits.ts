/**
 * Job API rate limits (spec 8.1): per user (account, whichever of its keys calls), per endpoint,
 * per operation, a request count over a 10-second window and a cap on requests in flight. The
 * effective rate is the higher of the base rate and `running workers × per-worker rate` (the
 * dynamic limit), for every operation as the spec states it. Pure: `now` is passed in.
 */

/** The operations counted separately. `retry` and `health` are Gantry's (the spec names neither). */
export type JobOperation =
  'run' | 'runsync' | 'status' | 'stream' | 'cancel' | 'retry' | 'purge-queue' | 'health' | 'openai' | 'requests';

export const JOB_RATE_WINDOW_MS = 10_000;

export interface JobOperationLimit {
  /** Requests per 10-second window. */
  rate: number;
  /** Requests in flight at once; null = no cap. */
  concurrent: number | null;
}

/** spec 8.1; retry is limited like cancel and health like status. */
export const JOB_OPERATION_LIMITS: Readonly<Record<JobOperation, JobOperationLimit>> = {
  run: { rate: 1000, concurrent: 200 },
  runsync: { rate: 2000, concurrent: 400 },
  status: { rate: 2000, concurrent: 400 },
  stream: { rate: 2000, concurrent: 400 },
  cancel: { rate: 100, concurrent: 20 },
  retry: { rate: 100, concurrent: 20 },
  'purge-queue': { rate: 2, concurrent: null },
  health: { rate: 2000, concurrent: 400 },
  openai: { rate: 2000, concurrent: 400 },
  requests: { rate: 10, concurrent: 2 },
};

/** The counters of one (account, endpoint, operation). */
export interface JobWindow {
  /** Start (ms) of the current 10-second window. */
  start: number;
  /** Requests admitted in the current window, here. */
  count: number;
  /** Requests other replicas admitted in the current window (as far as they told). */
  remote: number;
  /** Requests admitted here and not yet answered. */
  inFlight: number;
}

export const newJobWindow = (): JobWindow => ({ start: 0, count: 0, remote: 0, inFlight: 0 });

export type JobAdmission =
  { allowed: true } | { allowed: false; exceeded: 'rate' | 'concurrency'; limit: number; retryAfterSeconds: number };

/** The rate in force: `max(base, runningWorkers × perWorker)`. */
export function effectiveRate(limit: JobOperationLimit, runningWorkers: number, perWorker: number): number {
  return Math.max(limit.rate, Math.max(0, runningWorkers) * Math.max(0, perWorker));
}

/**
 * Counts one request and says whether it is admitted. An admitted request is in flight until
 * `release` is called for it. A refused request is not counted, so a client that backs off regains
 * its quota when the window turns.
 */
export function admitJobRequest(
  window: JobWindow,
  limit: { rate: number; concurrent: number | null },
  now: number,
): JobAdmission {
  const start = now - (now % JOB_RATE_WINDOW_MS);
  if (window.start !== start) {
    window.start = start;
    window.count = 0;
    window.remote = 0;
  }
  if (window.count + window.remote >= limit.rate)
    return {
      allowed: false,
      exceeded: 'rate',
      limit: limit.rate,
      retryAfterSeconds: Math.max(1, Math.ceil((start + JOB_RATE_WINDOW_MS - now) / 1000)),
    };
  if (limit.concurrent !== null && window.inFlight >= limit.concurrent)
    return { allowed: false, exceeded: 'concurrency', limit: limit.concurrent, retryAfterSeconds: 1 };
  window.count += 1;
  window.inFlight += 1;
  return { allowed: true };
}

/**
 * Adds `count` requests another replica admitted in the window starting at `start`: the rate is
 * the user's across replicas. Counts for a window already over are dropped; a later window
 * (another replica's clock turned first) starts here too.
 */
export function addRemoteJobRequests(window: JobWindow, start: number, count: number): void {
  if (start > window.start) {
    window.start = start;
    window.count = 0;
    window.remote = 0;
  }
  if (start === window.start) window.remote += count;
}

/** Ends one admitted request's flight. */
export function releaseJobRequest(window: JobWindow): void {
  window.inFlight = Math.max(0, window.inFlight - 1);
}

/** A window nobody used for a whole period can be forgotten. */
export const isIdleJobWindow = (window: JobWindow, now: number): boolean =>
  window.inFlight === 0 && now - window.start >= 2 * JOB_RATE_WINDOW_MS;

/**
 * How replicas share their admitted-request counts, so the spec 8.1 rates hold per user across
 * them: each admitted request is published (batched by the relay, counts of one key added), and
 * every other replica adds it to the same window. The in-flight caps stay per replica.
 */
export interface JobRequestCounts {
  /** `key` names (account, endpoint, operation, window start); `count` requests were admitted. */
  publish(key: string, count: number): void;
  /** Calls `listener` with what other replicas published; answers the unsubscribe. */
  subscribe(listener: (key: string, count: number) => void): () => void;
}
