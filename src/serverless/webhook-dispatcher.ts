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
 *   Every network-level failure (refused, reset, DNS, TLS, timeout) is recorded in one wording: the
 *   error is shown to the tenant in `/status`, and "refused" against "timed out" would tell open
 *   ports from filtered ones. The log keeps the cause.
 * - Receivers on non-public addresses are refused per `privateAddresses` (`WebhookAddressPolicy`),
 *   on the address the connection is made to (`createWebhookFetch`); a refusal is FAILED at once.
 * - Fair: accounts are served in turn, the account with the fewest calls in flight first, and no
 *   account has more than `perAccountConcurrency` calls in flight, nor any receiver more than
 *   `perReceiverConcurrency`, so one tenant's backlog or dead receiver never holds another's
 *   deliveries back. Calls run in the background: a pass never waits for a slow receiver.
 * - Durable: the rows are the queue. A restarted server picks up PENDING rows; an attempt that was
 *   under way when the server died is retried once its claim lease (timeout + margin) runs out.
 * - Woken at once by the job events; due retries are found by polling every `pollIntervalMs`.
 * - With several replicas, only the holder of the `webhooks` lease delivers; it finds rows written
 *   by the others on its next poll.
 * - Nothing of the payload (input, output) is logged, and of the URL only its origin: query
 *   strings often carry tokens.
 */
import type { Logger } from 'pino';
import { DEFAULT_WEBHOOK_CONFIG, type WebhookConfig } from './webhook-config.js';
import type { Clock } from '../domain/clock.js';
import type { JobEventPayload } from '../jobs/job-view.js';
import type { AccountStore } from '../store/account-store.js';
import { heldLease, type Lease } from '../store/leases.js';
import type { WebhookStore, WebhookDelivery } from '../store/webhook-store.js';
import { WebhookAddressPolicy, WebhookAddressRefused } from './webhook-address-policy.js';
import { WebhookFairShare } from './webhook-fair-share.js';
import { createWebhookFetch, describeNetworkError, type FetchLike, type ResolveLike } from './webhook-http.js';

export type { WebhookDelivery } from '../store/webhook-store.js';
export type { FetchLike } from './webhook-http.js';

/** Where finished jobs are announced (the app's `EventBus`, or `JobEvents`). */
export interface JobFinishedEvents {
  on(name: 'job:completed' | 'job:failed' | 'job:timed_out', listener: (payload: JobEventPayload) => void): () => void;
}

export interface WebhookDispatcherDeps {
  /** The deliveries outbox. */
  store: WebhookStore;
  /** Counted by the default address policy (the `privateAddresses` mode depends on how many accounts there are). */
  accounts: Pick<AccountStore, 'countAccounts'>;
  clock: Clock;
  logger: Pick<Logger, 'info' | 'warn' | 'debug'>;
  /** @default DEFAULT_WEBHOOK_CONFIG */
  config?: Partial<WebhookConfig>;
  /** Subscribed to by `start()`. */
  events?: JobFinishedEvents;
  /** Which receivers may be called. @default from `config.privateAddresses`, counting `accounts` */
  addressPolicy?: WebhookAddressPolicy;
  /** Host name resolution for the default HTTP client (a test seam). @default dns.lookup */
  resolve?: ResolveLike;
  /** The HTTP client; replacing it also replaces the address policy it applies. @default createWebhookFetch */
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

type Outcome =
  | { ok: true; status: number }
  /** `final`: the address policy refused the receiver; no attempt would do better. */
  | { ok: false; error: string; aborted: boolean; final: boolean; cause?: string };

/** What the tenant sees of any network-level failure: nothing that tells closed ports from filtered ones. */
export const UNREACHABLE = 'the receiver could not be reached or did not answer in time';

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
  readonly addressPolicy: WebhookAddressPolicy;
  readonly #clock: Clock;
  readonly #logger: WebhookDispatcherDeps['logger'];
  readonly #events: JobFinishedEvents | undefined;
  readonly #fetch: FetchLike;
  readonly #lease: Lease;
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #share: WebhookFairShare;
  /** Claim rounds run one at a time (the fair share must not move under a round but by its own claims). */
  #filling: Promise<unknown> = Promise.resolve();
  /** Aborts in-flight calls on stop(). */
  readonly #shutdown = new AbortController();
  #unsubscribe: Array<() => void> = [];
  #timer: NodeJS.Timeout | null = null;
  #pumping: Promise<void> | null = null;
  #again = false;
  #lastPurge = 0;
  #stopped = false;
  /** Attempts recorded by this process, by outcome, since it started (metrics). */
  readonly outcomes: DispatchResult = { delivered: 0, retrying: 0, failed: 0 };

  constructor(deps: WebhookDispatcherDeps) {
    this.store = deps.store;
    this.config = { ...DEFAULT_WEBHOOK_CONFIG, ...deps.config };
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#events = deps.events;
    this.addressPolicy =
      deps.addressPolicy ??
      new WebhookAddressPolicy({
        mode: this.config.privateAddresses,
        countAccounts: () => deps.accounts.countAccounts(),
        clock: deps.clock,
      });
    this.#fetch =
      deps.fetch ??
      createWebhookFetch({ policy: this.addressPolicy, ...(deps.resolve ? { resolve: deps.resolve } : {}) });
    this.#lease = deps.lease ?? heldLease('webhooks');
    this.#share = new WebhookFairShare({
      perAccount: this.config.perAccountConcurrency,
      perReceiver: this.config.perReceiverConcurrency,
    });
  }

  /** Subscribes to finished jobs, polls for due retries, and delivers what is already due (a restart). */
  start(): void {
    if (this.#timer || this.#stopped) return;
    if (this.#events) {
      const wake = (p: JobEventPayload): void => {
        if (p.webhook) this.wake();
      };
      this.#unsubscribe = (['job:completed', 'job:failed', 'job:timed_out'] as const).map((name) =>
        this.#events!.on(name, wake),
      );
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
    await this.#filling.catch(() => undefined);
    await Promise.allSettled([...this.#inFlight]);
  }

  /**
   * Starts the calls due now that the caps allow (or does so right after the round under way), if
   * this replica holds the lease. Does not wait for the calls: each one's end wakes it again.
   */
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
          const now = this.#clock.now();
          await this.store.failInterrupted(now, this.config.maxAttempts, 'the server stopped during the last attempt');
          // The calls started run on their own; each settles its delivery and catches its errors.
          void (await this.#fillSerially(now));
          await this.#purgeOld(now);
        } while (this.#again && !this.#stopped);
      } catch (err) {
        this.#logger.warn({ err: (err as Error).message }, 'webhook dispatch pass failed; retrying on the next poll');
      } finally {
        this.#pumping = null;
      }
    })();
  }

  /**
   * Delivers every delivery due at `now`, within the caps; resolves when all the attempts it
   * started are recorded. Tests call it directly with a fake clock's `now`.
   */
  async dispatchDue(now: number = this.#clock.now()): Promise<DispatchResult> {
    const result: DispatchResult = { delivered: 0, retrying: 0, failed: 0 };
    const mine = new Set<Promise<void>>();
    result.failed += await this.store.failInterrupted(
      now,
      this.config.maxAttempts,
      'the server stopped during the last attempt',
    );
    while (!this.#stopped) {
      const started = await this.#fillSerially(now, (outcome) => result[outcome]++);
      for (const call of started) {
        const tracked = call.finally(() => mine.delete(tracked));
        mine.add(tracked);
      }
      if (started.length > 0) continue;
      // nothing more can start now: wait for a slot (or a cap) to free, unless nothing is ours
      if (mine.size === 0) break;
      await Promise.race(mine);
    }
    await Promise.all(mine);
    await this.#purgeOld(now);
    return result;
  }

  /** The deliveries of a job, oldest first, for its record. */
  deliveriesFor(jobId: string): Promise<WebhookDelivery[]> {
    return this.store.forJob(jobId);
  }

  #fillSerially(now: number, onOutcome?: (outcome: keyof DispatchResult) => void): Promise<Array<Promise<void>>> {
    const round = this.#filling.then(() => this.#fill(now, onOutcome));
    this.#filling = round.catch(() => undefined);
    return round;
  }

  /**
   * One claim round: while a slot is free, claims one due delivery of the account with the fewest
   * calls in flight (ties: the next in turn after the account served last), passing over
   * receivers at their cap, and starts its call. Answers the calls started.
   */
  async #fill(now: number, onOutcome?: (outcome: keyof DispatchResult) => void): Promise<Array<Promise<void>>> {
    const { concurrency, timeoutMs, maxAttempts } = this.config;
    const started: Array<Promise<void>> = [];
    if (this.#stopped || this.#inFlight.size >= concurrency) return started;
    const queue = this.#share.turnOrder(await this.store.dueAccounts(now));
    while (queue.length > 0 && this.#inFlight.size < concurrency && !this.#stopped) {
      const account = this.#share.takeNext(queue)!;
      const claim = {
        limit: 1,
        leaseUntil: now + timeoutMs + LEASE_MARGIN_MS,
        maxAttempts,
        skipReceivers: this.#share.fullReceivers(),
      };
      const [delivery] = await this.store.claimDueFor(account, now, claim);
      if (!delivery) continue; // nothing of this account can go now
      started.push(this.#track(delivery, now, onOutcome));
      if (this.#share.hasRoom(account)) queue.push(account);
    }
    return started;
  }

  /** Starts one claimed call, counted against its account's and receiver's caps until recorded. */
  #track(d: WebhookDelivery, claimedAt: number, onOutcome?: (outcome: keyof DispatchResult) => void): Promise<void> {
    this.#share.started(d.accountId, d.receiver);
    const call = this.#deliver(d, claimedAt)
      .then((outcome) => {
        if (!outcome) return;
        this.outcomes[outcome]++;
        onOutcome?.(outcome);
      })
      .catch((err: unknown) =>
        this.#logger.warn(
          { delivery: d.id, err: (err as Error).message },
          'recording a webhook attempt failed; it is retried after its lease',
        ),
      )
      .finally(() => {
        this.#share.ended(d.accountId, d.receiver);
        this.#inFlight.delete(call);
        // a slot is free: a started dispatcher fills it at once
        if (this.#timer) this.wake();
      });
    this.#inFlight.add(call);
    return call;
  }

  /** Calls in flight now. */
  get inFlight(): number {
    return this.#inFlight.size;
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
    const cause = outcome.cause ?? outcome.error;
    if (outcome.final || d.attempts >= this.config.maxAttempts) {
      await this.store.markFailed(d.id, outcome.error);
      this.#logger.warn(
        { ...log, error: cause },
        outcome.final ? 'webhook refused by the address policy' : 'webhook delivery failed; no attempts left',
      );
      return 'failed';
    }
    await this.store.markRetry(d.id, at + this.config.retryDelayMs, outcome.error);
    this.#logger.info(
      { ...log, error: cause, retryInMs: this.config.retryDelayMs },
      'webhook attempt failed; will retry',
    );
    return 'retrying';
  }

  async #post(d: WebhookDelivery): Promise<Outcome> {
    // claimed while stop() ran: give it back untried
    if (this.#shutdown.signal.aborted) return { ok: false, error: 'server shutdown', aborted: true, final: false };
    // One controller per call, held strongly by the shutdown signal's listener and by the timer,
    // so both aborts reach the call however little else refers to it (AbortSignal.any's sources
    // hold the combined signal only weakly).
    const call = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      call.abort(new DOMException(`no answer within ${this.config.timeoutMs} ms`, 'TimeoutError'));
    }, this.config.timeoutMs);
    const onShutdown = (): void => call.abort(this.#shutdown.signal.reason);
    this.#shutdown.signal.addEventListener('abort', onShutdown, { once: true });
    const signal = call.signal;
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
      return { ok: false, error: `the receiver answered HTTP ${res.status}`, aborted: false, final: false };
    } catch (err) {
      if (err instanceof WebhookAddressRefused) return { ok: false, error: err.message, aborted: false, final: true };
      if (this.#shutdown.signal.aborted) return { ok: false, error: 'server shutdown', aborted: true, final: false };
      const cause = timedOut
        ? `no answer within ${this.config.timeoutMs} ms`
        : `network error: ${describeNetworkError(err)}`;
      return { ok: false, error: UNREACHABLE, aborted: false, final: false, cause };
    } finally {
      clearTimeout(timer);
      this.#shutdown.signal.removeEventListener('abort', onShutdown);
    }
  }

  async #purgeOld(now: number): Promise<void> {
    if (now - this.#lastPurge < PURGE_EVERY_MS) return;
    this.#lastPurge = now;
    await this.store.purgeFinished(now - KEEP_FINISHED_MS, 1000).catch(() => undefined);
  }
}
