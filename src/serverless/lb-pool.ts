/**
 * The workers of load-balancing endpoints as the balancer sees them (docs/load-balancing.md): each
 * one's health, from its health path (`PORT_HEALTH`, `HEALTH_CHECK_PATH`, asked every
 * `healthIntervalMs`: 200 ready, 204 initializing, anything else unhealthy), and the requests it
 * holds (here, and with replicas, on the others as they last wrote them: `setElsewhere`). A
 * request takes the ready worker of its endpoint holding the fewest (the one its
 * `X-Runpod-Worker-Id` names first, when that one is ready); with none ready it waits, bounded, for
 * one to become ready, and asks the autoscaler for a pass at once (a cold start). What the
 * autoscaler's REQUEST_COUNT rule reads — requests waiting, requests held, each worker's readiness
 * and last activity — comes from here (`LbTraffic`).
 *
 * FlashBoot (issue 30): a suspended worker is `suspended` here — no request goes to it and no
 * health check is sent while it is frozen. `freeze` refuses a worker that holds a request or that
 * a request waits for; `thaw` (it was resumed) checks its health at once, and it takes requests
 * again on its 200. A request pinned `strict` to a suspended worker is answered 'suspended';
 * pinned `strict-resume`, it waits, and the autoscaler reads it (`resumeWanted`) to resume that one;
 * named softly, it takes any ready worker, and while none is, the autoscaler resumes the one it
 * names before other suspended workers (`preferredWaiting`).
 */
import type { Logger } from 'pino';
import type { LbEndpointDemand } from '../store/lb-demand-store.js';
import { demandOf, type Entry, type LbHealth, type Waiter } from './lb-demand.js';
import type { LbLease, LbTraffic, LbWorkerInfo } from './lb-traffic.js';

export type { LbLease, LbTraffic, LbWorkerInfo } from './lb-traffic.js';

/** How many removed workers' ids are remembered. */
const GONE_KEPT = 4_096;

export interface LbPoolDeps {
  /** The status the worker's health path answered, or an Error when it did not answer. */
  probe(worker: LbWorkerInfo): Promise<number | Error>;
  now(): number;
  /** A `system` line of the worker's log. */
  log(workerId: string, line: string): void;
  /** A request waits with no ready worker: a pass of the autoscaler is wanted now. */
  wanted(endpointId: string): void;
  logger: Pick<Logger, 'info' | 'warn'>;
  healthIntervalMs: number;
}

export class LbPool implements LbTraffic {
  readonly #d: LbPoolDeps;
  readonly #workers = new Map<string, Entry>();
  readonly #waiters = new Set<Waiter>();
  readonly #inFlight = new Map<string, number>();
  readonly #removed = new Set<(workerId: string) => void>();
  readonly #announced = new Set<(workerId: string) => void>();
  /** Workers removed lately (oldest first, bounded): a stale read of the store does not bring them back. */
  readonly #gone = new Set<string>();
  #picks = 0;
  /** Counts changes of the demand (waiters, requests held, finishes): a publisher compares it. */
  #changes = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(deps: LbPoolDeps) {
    this.#d = deps;
  }

  /** Starts the health checks. */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => this.checkAll(), this.#d.healthIntervalMs);
    this.#timer.unref();
  }

  /** Stops the health checks and answers every waiting request (null: no worker). */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    for (const w of [...this.#waiters]) w.done(null);
  }

  /**
   * A worker was launched (or adopted): it is checked from now on, and takes requests once ready.
   * `suspended`: it is frozen (FlashBoot) and is neither checked nor sent requests until `thaw`.
   */
  add(info: LbWorkerInfo, suspended = false): void {
    const now = this.#d.now();
    this.#workers.set(info.workerId, {
      ...info,
      health: suspended ? 'suspended' : 'initializing',
      everReady: false,
      outstanding: 0,
      elsewhere: 0,
      lastActiveAt: now,
      lastPicked: 0,
      probing: false,
      served: false,
    });
    void this.#check(this.#workers.get(info.workerId)!);
  }

  /**
   * FlashBoot: the worker is about to be frozen. It leaves the ready set ('frozen'), unless it
   * holds a request or a request waits pinned to it ('busy': it is not idle; `force`, used where
   * the worker is already frozen by another replica, freezes it all the same). 'unknown': not here.
   */
  freeze(workerId: string, why: string, force = false): 'frozen' | 'busy' | 'unknown' {
    const e = this.#workers.get(workerId);
    if (!e) return 'unknown';
    if (e.health === 'suspended') return 'frozen';
    if (!force && (e.outstanding > 0 || [...this.#waiters].some((w) => w.preferred === workerId))) return 'busy';
    this.#setHealth(e, 'suspended', why);
    this.#changes++;
    // (forced only:) a request waiting `strict` for it is answered as one sent now would be
    for (const w of [...this.#waiters]) if (w.strict && !w.resume && w.preferred === workerId) w.done('suspended');
    return 'frozen';
  }

  /** The worker runs again (resumed, or its suspension failed): its health is checked at once. */
  thaw(workerId: string, why: string): void {
    const e = this.#workers.get(workerId);
    if (!e || e.health !== 'suspended') return;
    this.#setHealth(e, 'initializing', why);
    this.#changes++;
    void this.#check(e);
  }

  /**
   * The requests other replicas hold per worker, as they last wrote them (lb-replicas.ts): picks go
   * to the worker holding the fewest in all. A worker left out holds none elsewhere.
   */
  setElsewhere(outstanding: ReadonlyMap<string, number>): void {
    for (const e of this.#workers.values()) e.elsewhere = outstanding.get(e.workerId) ?? 0;
  }

  /** Whether the worker is suspended (frozen) here. */
  isFrozen(workerId: string): boolean {
    return this.#workers.get(workerId)?.health === 'suspended';
  }

  /** A worker stops: it takes no more requests (those under way end with its instance). */
  remove(workerId: string): void {
    if (!this.#workers.delete(workerId)) return;
    this.#gone.add(workerId);
    if (this.#gone.size > GONE_KEPT) this.#gone.delete(this.#gone.values().next().value!);
    this.#changes++;
    for (const w of [...this.#waiters]) if (w.strict && w.preferred === workerId) w.done('gone');
    for (const listener of this.#removed) listener(workerId);
  }

  /**
   * The worker's row changed in a way the other replicas' pools follow (it was launched, suspended,
   * resumed or stopped here, and its row says so): the listeners (the relay) tell them at once,
   * rather than leave it to their next read of the workers table.
   */
  announce(workerId: string): void {
    for (const listener of this.#announced) listener(workerId);
  }

  /** Calls `listener` with each worker `announce`d from now on; answers the unsubscription. */
  onAnnounce(listener: (workerId: string) => void): () => void {
    this.#announced.add(listener);
    return () => this.#announced.delete(listener);
  }

  /** Calls `listener` with each worker removed from now on; answers the unsubscription. */
  onRemove(listener: (workerId: string) => void): () => void {
    this.#removed.add(listener);
    return () => this.#removed.delete(listener);
  }

  has(workerId: string): boolean {
    return this.#workers.has(workerId);
  }

  /** Whether the worker was removed lately (not to be added again from an older read of the store). */
  wasRemoved(workerId: string): boolean {
    return this.#gone.has(workerId);
  }

  /** Ids of the workers learnt from the store (added with `hostPorts`). */
  learntIds(): string[] {
    return [...this.#workers.values()].filter((e) => e.hostPorts !== undefined).map((e) => e.workerId);
  }

  /** The host port of a learnt worker's private `port`, as its launching replica recorded it. */
  hostPortOf(workerId: string, port: number): number | undefined {
    return this.#workers.get(workerId)?.hostPorts?.[port];
  }

  /** A number that changes whenever the demand `demand()` answers may have. */
  get changes(): number {
    return this.#changes;
  }

  /**
   * This replica's traffic per endpoint: requests waiting and held, and the workers it sent
   * requests to (requests held, last finish). Endpoints with none of these are left out.
   */
  demand(): LbEndpointDemand[] {
    return demandOf(this.#waiters, this.#workers, this.#inFlight);
  }

  waiting(endpointId: string): number {
    let n = 0;
    for (const w of this.#waiters) if (w.endpointId === endpointId) n++;
    return n;
  }

  inFlight(endpointId: string): number {
    return this.#inFlight.get(endpointId) ?? 0;
  }

  workerState(workerId: string): { ready: boolean; outstanding: number; lastActiveAt: number } | null {
    const e = this.#workers.get(workerId);
    return e ? { ready: e.health === 'ready', outstanding: e.outstanding, lastActiveAt: e.lastActiveAt } : null;
  }

  resumeWanted(workerId: string): number {
    let n = 0;
    for (const w of this.#waiters) if (w.resume && w.preferred === workerId) n++;
    return n;
  }

  preferredWaiting(workerId: string): number {
    let n = 0;
    for (const w of this.#waiters) if (!w.strict && w.preferred === workerId) n++;
    return n;
  }

  /** Whether any worker of the endpoint is ready now. */
  anyReady(endpointId: string): boolean {
    for (const e of this.#workers.values()) if (e.endpointId === endpointId && e.health === 'ready') return true;
    return false;
  }

  /**
   * A ready worker of the endpoint for one request: `preferred` when it is one and ready, else the
   * one holding the fewest requests. With none ready, waits up to `waitMs` for one (null: none
   * became ready in time, or `signal` ended the wait). `strict`: `preferred` or nothing — waits
   * for it while it is not ready, and answers 'gone' when it is not (or no longer) one of the
   * endpoint's workers. A suspended `preferred`: 'suspended' for `strict`; `resume` (strict-resume)
   * waits for it, and asks for a pass of the autoscaler, which resumes it.
   */
  acquire(
    endpointId: string,
    options: {
      waitMs: number;
      preferred?: string | null;
      strict?: boolean;
      resume?: boolean;
      signal?: AbortSignal;
      onWait?: () => void;
    },
  ): Promise<LbLease | null | 'gone' | 'suspended'> {
    const preferred = options.preferred ?? null;
    const strict = options.strict === true && preferred !== null;
    const resume = strict && options.resume === true;
    const pinned = strict ? this.#workers.get(preferred) : undefined;
    if (strict && pinned?.endpointId !== endpointId) return Promise.resolve('gone');
    if (strict && !resume && pinned?.health === 'suspended') return Promise.resolve('suspended');
    const now = this.#take(endpointId, preferred, strict);
    if (now) return Promise.resolve(now);
    if (options.signal?.aborted) return Promise.resolve(null);
    options.onWait?.();
    return new Promise((resolve) => {
      const waiter: Waiter = {
        endpointId,
        preferred,
        strict,
        resume,
        done: (lease) => {
          clearTimeout(timer);
          options.signal?.removeEventListener('abort', abort);
          if (this.#waiters.delete(waiter)) this.#changes++;
          resolve(lease);
        },
      };
      const timer = setTimeout(() => waiter.done(null), options.waitMs);
      const abort = (): void => waiter.done(null);
      options.signal?.addEventListener('abort', abort, { once: true });
      this.#waiters.add(waiter);
      this.#changes++;
      // a pinned worker is on its way or not (another would not serve it), unless it is to be resumed
      if (!strict || resume) this.#d.wanted(endpointId);
    });
  }

  /** One round of health checks over every worker (the interval's; tests may call it). */
  checkAll(): void {
    for (const e of this.#workers.values()) void this.#check(e);
  }

  #take(endpointId: string, preferred: string | null, strict = false): LbLease | null {
    let best: Entry | null = null;
    const wanted = preferred === null ? undefined : this.#workers.get(preferred);
    if (wanted && wanted.endpointId === endpointId && wanted.health === 'ready') best = wanted;
    else if (strict) return null;
    else
      for (const e of this.#workers.values()) {
        if (e.endpointId !== endpointId || e.health !== 'ready') continue;
        const held = e.outstanding + e.elsewhere;
        const bestHeld = best ? best.outstanding + best.elsewhere : 0;
        if (!best || held < bestHeld || (held === bestHeld && e.lastPicked < best.lastPicked)) best = e;
      }
    if (!best) return null;
    const entry = best;
    entry.outstanding++;
    entry.served = true;
    this.#changes++;
    entry.lastPicked = ++this.#picks;
    this.#inFlight.set(endpointId, this.inFlight(endpointId) + 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.#changes++;
      entry.outstanding--;
      entry.lastActiveAt = Math.max(entry.lastActiveAt, this.#d.now());
      const left = this.inFlight(endpointId) - 1;
      if (left > 0) this.#inFlight.set(endpointId, left);
      else this.#inFlight.delete(endpointId);
    };
    return {
      workerId: entry.workerId,
      port: entry.port,
      release,
      unreachable: (why) => {
        release();
        if (this.#workers.get(entry.workerId) === entry && entry.health === 'ready')
          this.#setHealth(entry, 'unhealthy', `a request could not reach port ${entry.port}: ${why}`);
      },
    };
  }

  #setHealth(e: Entry, next: LbHealth, why: string): void {
    const line = `health: ${next} (${why})`;
    this.#d.log(e.workerId, line);
    this.#d.logger.info({ workerId: e.workerId, endpointId: e.endpointId, from: e.health, to: next }, line);
    e.health = next;
  }

  async #check(e: Entry): Promise<void> {
    // a frozen worker is not asked: it could not answer
    if (e.probing || e.health === 'suspended') return;
    e.probing = true;
    let answer: number | Error;
    try {
      answer = await this.#d.probe(e);
    } catch (err) {
      answer = err instanceof Error ? err : new Error(String(err));
    } finally {
      e.probing = false;
    }
    // (frozen while it was asked: what it said, if anything, is not its state now)
    if (this.#workers.get(e.workerId) !== e || (e.health as LbHealth) === 'suspended') return;
    // Before it was first ready, a worker that does not answer yet is still starting.
    const next: LbHealth =
      answer === 200
        ? 'ready'
        : answer === 204 || (answer instanceof Error && !e.everReady)
          ? 'initializing'
          : 'unhealthy';
    if (next === e.health) return;
    const what = answer instanceof Error ? answer.message : `answered ${answer}`;
    this.#setHealth(e, next, `GET ${e.healthPath} on port ${e.healthPort} ${what}`);
    if (next !== 'ready') return;
    if (!e.everReady) e.lastActiveAt = Math.max(e.lastActiveAt, this.#d.now());
    e.everReady = true;
    // Requests that waited go now, each to the least busy ready worker.
    for (const w of [...this.#waiters]) {
      if (w.endpointId !== e.endpointId) continue;
      const lease = this.#take(w.endpointId, w.preferred, w.strict);
      if (lease) w.done(lease);
    }
  }
}
