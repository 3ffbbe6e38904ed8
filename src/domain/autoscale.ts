/**
 * The serverless scaling rules, pure: what an endpoint's workers should become, given its queue
 * and its workers at `now`. The autoscaler loop gathers the inputs and carries out the answer.
 *
 * Rules (each `reasons` entry names the one that fired):
 * - `workersMin` workers are kept up; never more than `workersMax` are up.
 * - Low-priority queued jobs (spec 2.13) never call for a worker; they run on workers that are up.
 * - From zero: a queued job with no worker up or starting starts one at once, whatever the scaler
 *   (waiting `scalerValue` seconds before the first worker would only add that to every cold start).
 * - QUEUE_DELAY: while the oldest queued job has waited more than `scalerValue` seconds, one more
 *   worker — and only when none is still starting: a starting worker is the answer already on its
 *   way, and adding one per decision during a slow start would jump straight to `workersMax`.
 * - REQUEST_COUNT: ceil((queued + in progress) / scalerValue) workers.
 * - Scaling down is by idleness only, never by a lower target: a worker idle (no job) for
 *   `idleTimeout` seconds stops, longest idle first, never below `workersMin`, and not while jobs
 *   are queued (an idle worker is about to take them). A busy worker is never stopped here.
 * - Above `workersMax` (it was lowered): the excess stops, starting and idle workers first; busy
 *   workers finish their job and stop on a later decision when idle.
 * - A worker that asked to be recycled (`stopPod`) stops once it holds no job; it is replaced when
 *   the rules above still want it.
 * - A worker still starting after `startTimeoutMs` stops (and counts as a crash, see below).
 * - Crash loops: a worker that ends on its own within `crashWindowMs` of starting is a crash of its
 *   endpoint; `crashThreshold` crashes in a row back the endpoint off for `backoffBaseMs`, doubling
 *   per further crash up to `backoffMaxMs`. While backed off nothing is started (not even for
 *   `workersMin`) and the endpoint is reported unhealthy. A worker that takes a job resets the count.
 */

type ScalerType = 'QUEUE_DELAY' | 'REQUEST_COUNT';

/** The endpoint settings the rules read. */
export interface ScaleSettings {
  workersMin: number;
  workersMax: number;
  scalerType: ScalerType;
  /** QUEUE_DELAY: seconds; REQUEST_COUNT: requests per worker. */
  scalerValue: number;
  /** Seconds. */
  idleTimeout: number;
}

/**
 * The queue of the endpoint now. Counts may stop at a bound past which no decision changes
 * (workersMax × scalerValue): the autoscaler never counts a long queue in full.
 */
export interface ScaleQueue {
  /** Queued jobs, low-priority ones included. */
  inQueue: number;
  inQueueLowPriority: number;
  inProgress: number;
  /** When the oldest queued job that is not low-priority entered the queue; null when none. */
  oldestUrgentQueuedAt: number | null;
}

type ScaleWorkerState = 'initializing' | 'idle' | 'running';

export interface ScaleWorker {
  id: string;
  /** `running` = holds at least one job in progress. */
  state: ScaleWorkerState;
  /** When it was launched. */
  startedAt: number;
  /** When it last held a job (or when it became ready, if it never did). */
  lastActiveAt: number;
  /** It asked to be recycled after its job. */
  recycle?: boolean;
}

/** Crash-loop bookkeeping of one endpoint, carried between decisions. */
export interface CrashState {
  /** Crashes in a row since a worker last took a job. */
  consecutive: number;
  /** No start before this; null when not backed off. */
  backoffUntil: number | null;
  /** What the last crash said, for `/health` and logs. */
  lastReason: string | null;
}

export const HEALTHY: CrashState = Object.freeze({ consecutive: 0, backoffUntil: null, lastReason: null });

export interface ScaleConfig {
  /** @default 30000 */
  crashWindowMs: number;
  /** @default 3 */
  crashThreshold: number;
  /** @default 10000 */
  backoffBaseMs: number;
  /** @default 300000 */
  backoffMaxMs: number;
  /** @default 600000 */
  startTimeoutMs: number;
}

export const DEFAULT_SCALE_CONFIG: ScaleConfig = {
  crashWindowMs: 30_000,
  crashThreshold: 3,
  backoffBaseMs: 10_000,
  backoffMaxMs: 300_000,
  startTimeoutMs: 600_000,
};

type StopReason = 'idle' | 'over-max' | 'recycle' | 'start-timeout';

export interface ScaleDecision {
  /** Workers to launch. */
  start: number;
  /** Workers to stop, each with why. */
  stop: Array<{ id: string; reason: StopReason }>;
  /** Workers the queue and `workersMin` call for (after min/max); more may stay up until idle. */
  desired: number;
  /** Starts the back-off held back (the endpoint is crash-looping). */
  heldBack: number;
  reasons: string[];
}

/** The decision for one endpoint at `now`. */
export function decideScale(
  settings: ScaleSettings,
  queue: ScaleQueue,
  workers: readonly ScaleWorker[],
  crash: CrashState,
  now: number,
  config: ScaleConfig = DEFAULT_SCALE_CONFIG,
): ScaleDecision {
  const reasons: string[] = [];
  const stop = new Map<string, StopReason>();
  const max = Math.max(0, settings.workersMax);
  const min = Math.min(Math.max(0, settings.workersMin), max);

  for (const w of workers) {
    if (w.state === 'initializing' && now - w.startedAt >= config.startTimeoutMs) {
      stop.set(w.id, 'start-timeout');
      reasons.push(`worker ${w.id} did not become ready within ${config.startTimeoutMs} ms`);
    } else if (w.recycle && w.state !== 'running') {
      stop.set(w.id, 'recycle');
      reasons.push(`worker ${w.id} asked to be recycled`);
    }
  }
  const up = workers.filter((w) => !stop.has(w.id));
  const starting = up.filter((w) => w.state === 'initializing').length;
  const urgent = Math.max(0, queue.inQueue - queue.inQueueLowPriority);
  const queued = Math.max(0, queue.inQueue);

  // The workers the queue calls for (0: no call for more than are up).
  let want = 0;
  if (settings.scalerType === 'QUEUE_DELAY') {
    const waited = queue.oldestUrgentQueuedAt === null ? 0 : now - queue.oldestUrgentQueuedAt;
    if (urgent > 0 && up.length > 0 && waited > settings.scalerValue * 1000) {
      if (starting === 0) {
        want = up.length + 1;
        reasons.push(`oldest queued job waited ${waited} ms > ${settings.scalerValue} s: one more worker`);
      } else reasons.push(`oldest queued job waited ${waited} ms; ${starting} worker(s) already starting`);
    }
  } else {
    const perWorker = Math.max(1, settings.scalerValue);
    want = Math.ceil((urgent + Math.max(0, queue.inProgress)) / perWorker);
    if (want > up.length)
      reasons.push(`${urgent} queued + ${queue.inProgress} in progress at ${perWorker} per worker: ${want} worker(s)`);
  }
  if (urgent > 0 && up.length === 0 && want < 1) {
    want = 1;
    reasons.push(`${urgent} job(s) queued and no worker up: starting one`);
  }
  if (up.length < min && want < min) reasons.push(`workersMin is ${min}`);
  if (want > max) reasons.push(`capped at workersMax ${max}`);
  const desired = Math.min(max, Math.max(min, want));

  // Above the maximum: starting and idle workers go first, longest idle first; busy ones stay.
  if (up.length > max) {
    const order = up
      .filter((w) => w.state !== 'running')
      .sort((a, b) => rank(a) - rank(b) || a.lastActiveAt - b.lastActiveAt || (a.id < b.id ? -1 : 1));
    for (const w of order.slice(0, up.length - max)) stop.set(w.id, 'over-max');
    if (order.length > 0) reasons.push(`more than workersMax ${max} workers`);
  }

  // Idle workers past their idle timeout, longest idle first, down to the floor.
  let remaining = up.filter((w) => !stop.has(w.id)).length;
  if (queued === 0) {
    const floor = Math.max(min, desired);
    const idle = up
      .filter((w) => !stop.has(w.id) && w.state === 'idle' && now - w.lastActiveAt >= settings.idleTimeout * 1000)
      .sort((a, b) => a.lastActiveAt - b.lastActiveAt || (a.id < b.id ? -1 : 1));
    for (const w of idle) {
      if (remaining <= floor) break;
      stop.set(w.id, 'idle');
      remaining--;
      reasons.push(`worker ${w.id} idle for ${now - w.lastActiveAt} ms (idleTimeout ${settings.idleTimeout} s)`);
    }
  }

  let start = Math.max(0, desired - remaining);
  let heldBack = 0;
  if (start > 0 && isBackedOff(crash, now)) {
    heldBack = start;
    start = 0;
    reasons.push(
      `crash-looping (${crash.consecutive} crashes in a row): no start before ${new Date(crash.backoffUntil!).toISOString()}`,
    );
  }
  return { start, stop: [...stop].map(([id, reason]) => ({ id, reason })), desired, heldBack, reasons };
}

const rank = (w: ScaleWorker): number => (w.state === 'initializing' ? 0 : w.state === 'idle' ? 1 : 2);

export const isBackedOff = (crash: CrashState, now: number): boolean =>
  crash.backoffUntil !== null && now < crash.backoffUntil;

/**
 * A worker ended without being asked to (it exited, failed its start, or never became ready).
 * Within `crashWindowMs` of its start it is a crash: the count goes up and, from `crashThreshold`
 * on, the endpoint is backed off. A worker that ran longer ended for its own reasons: no change.
 */
export function recordWorkerEnd(
  crash: CrashState,
  end: { startedAt: number; endedAt: number; reason: string },
  config: ScaleConfig = DEFAULT_SCALE_CONFIG,
): CrashState {
  if (end.endedAt - end.startedAt > config.crashWindowMs) return crash;
  const consecutive = crash.consecutive + 1;
  if (consecutive < config.crashThreshold)
    return { consecutive, backoffUntil: crash.backoffUntil, lastReason: end.reason };
  const exponent = Math.min(30, consecutive - config.crashThreshold);
  const delay = Math.min(config.backoffMaxMs, config.backoffBaseMs * 2 ** exponent);
  return { consecutive, backoffUntil: Math.max(crash.backoffUntil ?? 0, end.endedAt + delay), lastReason: end.reason };
}

/** A worker of the endpoint took a job: it is not crash-looping (any back-off ends). */
export const recordWorkerHealthy = (crash: CrashState): CrashState =>
  crash.consecutive === 0 && crash.backoffUntil === null ? crash : HEALTHY;
