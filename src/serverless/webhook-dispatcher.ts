/**
 * Delivers the webhook outbox (spec 6, wire-protocol §2): when a job reaches COMPLETED, FAILED or
 * TIMED_OUT, JobsService writes a `webhook_deliveries` row in the same transaction; this loop POSTs
 * its payload (the `/status` view plus `input` and `webhook`) as JSON.
 *
 * - Success is any 2xx answer. The spec says the receiver "should answer 200"; a 201/202/204 shows
 *   the receiver took the call just as well, and calling it again would only duplicate the
 *   notification. Redirects are not followed (3xx is a failure): a webhook URL must name its receiver.
 * - Anything else (other status, network error, no answer within `timeoutMs`) is retried
 *   `retryDelayMs` later, up to `maxAttempts` attempts in all, then the row is FAILED with the last error.
 * - Durable: the rows are the queue. A restarted server picks up PENDING rows; an attempt that was
 *   under way when the server died is retried once its claim lease (timeout + margin) runs out.
 * - Woken at once by the job events; due retries are found by polling every `pollIntervalMs`.
 * - With several replicas, only the holder of the `webhooks` lease delivers; it finds rows written
 *   by the others on its next poll.
 * - Nothing of the payload (input, output) is logged, and of the URL only its origin: query
 *   strings often carry tokens.
 */
import type { Logger } from 'pino';
import type { WebhookConfig } from '../config.js';
import type { Clock } from '../domain/clock.js';
import type { JobEventPayload } from '../jobs/job-view.js';
import type { Db } from '../store/database.js';
import { heldLease, type Lease } from '../store/leases.js';
import { WebhookStore, type WebhookDelivery } from '../store/webhook-store.js';

export type { WebhookDelivery } from '../store/webhook-store.js';

export const DEFAULT_WEBHOOK_CONFIG: WebhookConfig = { timeoutMs: 10_000, retryDelayMs: 10_000, maxAttempts: 3, pollIntervalMs: 1_000, concurrency: 16, perAccountConcurrency: 4, perReceiverConcurrency: 2, privateAddresses: 'auto' };

/** Where finished jobs are announced (the app's `EventBus`, or `JobEvents`). */
export interface JobFinishedEvents {
  on(name: 'job:completed' | 'job:failed' | 'job:timed_out', listener: (payload: JobEventPayload) => void): () => void;
}

/** The part of `fetch` the dispatcher uses. */
export type FetchLike = (url: string, init: { method: 'POST'; headers: Record<string, string>; body: string; redirect: 'manual'; signal: AbortSignal }) => Promise<{
  status: number;
  body: { cancel(): Promise<void> } | null;
}>;

export interface WebhookDispatcherDeps {
  db: Db;
  clock: Clock;
  logger: Pick<Logger, 'info' | 'warn' | 'debug'>;
  /** @default DEFAULT_WEBHOOK_CONFIG */
  config?: Partial<WebhookConfig>;
  /** Subscribed to by `start()`. */
  events?: JobFinishedEvents;
  /** @default globalThis.fetch */
  fetch?: FetchLike;
  /** Which replica delivers. @default always held */
  lease?: Lease;
}

export interface DispatchResult {
  delivered: number;
  /** Failed attempts that will be tried again. */
  retrying: number;
  /** Deliveries that spent their last attempt. */
  failed: number;
}

type Outcome = { ok: true; status: number } | { ok: false; error: string; aborted: boolean };

/** A claimed attempt not heard of within its timeout plus this margin is due again. */
const LEASE_MARGIN_MS = 5_000;
/** Finished rows are kept this long (visible through `deliveriesFor`), then purged. */
const KEEP_FINISHED_MS = 24 * 3_600_000;
const PURGE_EVERY_MS = 60_000;

const originOf = (url: string): string => {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid url)';
  }
};

export class WebhookDispatcher {
  readonly store: WebhookStore;
  readonly config: WebhookConfig;
  readonly #clock: Clock;
  readonly #logger: WebhookDispatcherDeps['logger'];
  readonly #events: JobFinishedEvents | undefined;
  readonly #fetch: FetchLike;
  readonly #lease: Lease;
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Aborts in-flight calls on stop(). */
  readonly #shutdown = new AbortController();
  #unsubscribe: Array<() => void> = [];
  #timer: NodeJS.Timeout | null = null;
  #pumping: Promise<void> | null = null;
  #again = false;
  #lastPurge = 0;
  #stopped = false;

  constructor(deps: WebhookDispatcherDeps) {
    this.store = new WebhookStore(deps.db);
    this.config = { ...DEFAULT_WEBHOOK_CONFIG, ...deps.config };
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#events = deps.events;
    this.#fetch = deps.fetch ?? (globalThis.fetch as unknown as FetchLike);
    this.#lease = deps.lease ?? heldLease('webhooks');
  }

  /** Subscribes to finished jobs, polls for due retries, and delivers what is already due (a restart). */
  start(): void {
    if (this.#timer || this.#stopped) return;
    if (this.#events) {
      const wake = (p: JobEventPayload): void => {
        if (p.webhook) this.wake();
      };
      this.#unsubscribe = (['job:completed', 'job:failed', 'job:timed_out'] as const).map((name) => this.#events!.on(name, wake));
    }
    this.#timer = setInterval(() => this.wake(), this.config.pollIntervalMs);
    this.#timer.unref();
    this.wake();
  }

  /** Stops polling, aborts calls in flight (they stay PENDING, their attempt not counted) and waits for them. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const off of this.#unsubscribe) off();
    this.#unsubscribe = [];
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#shutdown.abort();
    await this.#pumping?.catch(() => undefined);
    await Promise.allSettled([...this.#inFlight]);
  }

  /** Runs a dispatch pass now (or right after the one under way), if this replica holds the lease. */
  wake(): void {
    if (this.#stopped || !this.#lease.isHeld()) return;
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = (async () => {
      try {
        do {
          this.#again = false;
          await this.dispatchDue(this.#clock.now());
        } while (this.#again && !this.#stopped);
      } catch (err) {
        this.#logger.warn({ err: (err as Error).message }, 'webhook dispatch pass failed; retrying on the next poll');
      } finally {
        this.#pumping = null;
      }
    })();
  }

  /**
   * Delivers every delivery due at `now`, at most `concurrency` at once; resolves when all the
   * attempts it started are recorded. Tests call it directly with a fake clock's `now`.
   */
  async dispatchDue(now: number = this.#clock.now()): Promise<DispatchResult> {
    const result: DispatchResult = { delivered: 0, retrying: 0, failed: 0 };
    const started: Array<Promise<void>> = [];
    const interrupted = await this.store.failInterrupted(now, this.config.maxAttempts, 'the server stopped during the last attempt');
    result.failed += interrupted;
    while (!this.#stopped) {
      const free = this.config.concurrency - this.#inFlight.size;
      if (free <= 0) {
        await Promise.race(this.#inFlight);
        continue;
      }
      const claimed = await this.store.claimDue(now, free, now + this.config.timeoutMs + LEASE_MARGIN_MS, this.config.maxAttempts);
      if (claimed.length === 0) break;
      for (const delivery of claimed) {
        const p = this.#deliver(delivery, now).then((r) => {
          if (r) result[r]++;
        });
        const tracked = p.finally(() => this.#inFlight.delete(tracked));
        this.#inFlight.add(tracked);
        started.push(tracked);
      }
    }
    await Promise.all(started);
    await this.#purgeOld(now);
    return result;
  }

  /** The deliveries of a job, oldest first, for its record. */
  deliveriesFor(jobId: string): Promise<WebhookDelivery[]> {
    return this.store.forJob(jobId);
  }

  /** One claimed attempt: POST, then record the outcome. */
  async #deliver(d: WebhookDelivery, claimedAt: number): Promise<keyof DispatchResult | null> {
    const outcome = await this.#post(d);
    const at = Math.max(claimedAt, this.#clock.now());
    const log = { delivery: d.id, job: d.jobId, receiver: originOf(d.url), attempt: d.attempts };
    if (outcome.ok) {
      await this.store.markDelivered(d.id);
      this.#logger.debug({ ...log, status: outcome.status }, 'webhook delivered');
      return 'delivered';
    }
    if (outcome.aborted) {
      await this.store.unclaim(d.id, at);
      return null;
    }
    if (d.attempts >= this.config.maxAttempts) {
      await this.store.markFailed(d.id, outcome.error);
      this.#logger.warn({ ...log, error: outcome.error }, 'webhook delivery failed; no attempts left');
      return 'failed';
    }
    await this.store.markRetry(d.id, at + this.config.retryDelayMs, outcome.error);
    this.#logger.info({ ...log, error: outcome.error, retryInMs: this.config.retryDelayMs }, 'webhook attempt failed; will retry');
    return 'retrying';
  }

  async #post(d: WebhookDelivery): Promise<Outcome> {
    const timeout = AbortSignal.timeout(this.config.timeoutMs);
    const signal = AbortSignal.any([timeout, this.#shutdown.signal]);
    try {
      const res = await this.#fetch(d.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'gantry-webhooks/1',
          'x-gantry-delivery': d.id,
          'x-gantry-attempt': String(d.attempts),
        },
        body: d.payloadJson,
        redirect: 'manual',
        signal,
      });
      // The answer's body is not needed; release the connection.
      await res.body?.cancel().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
      return { ok: false, error: `the receiver answered HTTP ${res.status}`, aborted: false };
    } catch (err) {
      if (this.#shutdown.signal.aborted) return { ok: false, error: 'server shutdown', aborted: true };
      if (timeout.aborted) return { ok: false, error: `no answer within ${this.config.timeoutMs} ms`, aborted: false };
      return { ok: false, error: `network error: ${describeNetworkError(err)}`, aborted: false };
    }
  }

  async #purgeOld(now: number): Promise<void> {
    if (now - this.#lastPurge < PURGE_EVERY_MS) return;
    this.#lastPurge = now;
    await this.store.purgeFinished(now - KEEP_FINISHED_MS, 1000).catch(() => undefined);
  }
}

/** fetch wraps socket errors as `TypeError: fetch failed` with the useful part in `cause`. */
function describeNetworkError(err: unknown): string {
  const cause = (err as { cause?: unknown } | null)?.cause;
  const pick = (e: unknown): string | null => {
    if (!e || typeof e !== 'object') return null;
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string') return code;
    return typeof message === 'string' ? message : null;
  };
  return pick(cause) ?? pick(err) ?? String(err);
}
