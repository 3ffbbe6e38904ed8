/**
 * Follows an engine's container events for one namespace, across engine outages.
 *
 * The engine keeps only recent events, so events alone cannot tell what happened while nobody
 * listened. After every (re)connect the follower first subscribes (the engine queues what happens
 * from then on), then has the runtime list and reconcile (`onConnected`), and only then reads the
 * queued events: nothing that happens around a reconnect is missed, and the listing, not the
 * event history, is the truth about the gap.
 *
 * When the stream breaks it reconnects at once; when that fails, the engine is unreachable: the
 * outage is reported once (`onOutage`), and connecting is retried with a capped backoff until it
 * succeeds. Retry timers are real: this follows a real engine, not domain time.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../domain/clock.js';
import { isUnreachable } from './engine-connection.js';
import type { DockerClient } from './docker-client.js';
import { namespaceFilter } from './docker-names.js';
import type { EngineEvent } from './engine-types.js';

export interface Outage {
  /** when it began, on the runtime's clock (for the reason) */
  since: number;
  /** when it began, by the wall clock the engine's own timestamps are on */
  sinceWallMs: number;
  /** `the Docker Engine at … is unreachable since <ISO time>: <cause>` */
  reason: string;
}

export interface EngineEventsOptions {
  client: DockerClient;
  namespace: string;
  clock: Clock;
  logger: Logger;
  /** Runs after each (re)connect, before any event is read; `outage` is the one just ended (or null). A throw counts as a failed connect. */
  onConnected(outage: Outage | null): Promise<void>;
  onEvent(event: EngineEvent): void;
  /** Called once per outage, when it begins. */
  onOutage(outage: Outage): void;
  /** @default { initialMs: 250, maxMs: 10000 } */
  backoff?: { initialMs: number; maxMs: number };
}

export class EngineEvents {
  readonly #o: EngineEventsOptions;
  #running = false;
  #closed = false;
  #outage: Outage | null = null;
  #abort: AbortController | null = null;
  #wake: (() => void) | null = null;

  constructor(options: EngineEventsOptions) {
    this.#o = options;
  }

  /** The outage under way, or null. */
  get outage(): Outage | null {
    return this.#outage;
  }

  /** Begins following (once; later calls do nothing). */
  start(): void {
    if (this.#running || this.#closed) return;
    this.#running = true;
    void this.#run();
  }

  /**
   * Another call found the engine unreachable: the outage begins now if it has not already, and
   * the stream (if it still seems up) is reconnected to find out for sure.
   */
  reportUnreachable(err: unknown): void {
    if (this.#closed) return;
    this.#beginOutage(err);
    this.#abort?.abort();
    this.#wake?.();
    this.start();
  }

  close(): void {
    this.#closed = true;
    this.#abort?.abort();
    this.#wake?.();
  }

  async #run(): Promise<void> {
    const { initialMs, maxMs } = this.#o.backoff ?? { initialMs: 250, maxMs: 10_000 };
    let delay = 0;
    let failures = 0;
    /** when the last working stream broke (wall clock): an outage began then, if it is one */
    let droppedAt: { clock: number; wall: number } | null = null;
    while (!this.#closed) {
      if (delay > 0) await this.#sleep(delay);
      if (this.#closed) break;
      let cause: unknown;
      let wasUp = false;
      const abort = new AbortController();
      this.#abort = abort;
      try {
        const events = await this.#o.client.events(
          { filters: { type: ['container'], ...namespaceFilter(this.#o.namespace) } },
          abort.signal,
        );
        const ended = this.#outage;
        await this.#o.onConnected(ended);
        if (ended && this.#outage === ended) {
          this.#outage = null;
          this.#o.logger.info(
            { engine: this.#o.client.address, since: new Date(ended.since).toISOString() },
            'the Docker Engine is reachable again',
          );
        }
        wasUp = true;
        failures = 0;
        droppedAt = null;
        for await (const event of events) {
          try {
            this.#o.onEvent(event);
          } catch (err) {
            this.#o.logger.error({ err, event: event.Action }, 'handling an engine event failed; following carries on');
          }
        }
        cause = new Error('the engine closed its event stream');
      } catch (err) {
        cause = err;
      } finally {
        abort.abort();
        this.#abort = null;
      }
      if (this.#closed) break;
      if (wasUp) droppedAt = { clock: this.#o.clock.now(), wall: Date.now() };
      failures += 1;
      // A stream that was working and broke is retried at once: it can end for reasons of its own
      // (a proxy in between restarting) while the engine answers fine. Anything else is an outage.
      const retryAtOnce = wasUp && !this.#outage;
      if (!retryAtOnce) this.#beginOutage(cause, droppedAt);
      delay = retryAtOnce ? 0 : Math.min(maxMs, initialMs * 2 ** Math.min(failures - 1, 16));
      if (!isUnreachable(cause))
        this.#o.logger.debug(
          { err: cause, engine: this.#o.client.address },
          'the Docker Engine event stream ended; reconnecting',
        );
    }
    this.#running = false;
  }

  #beginOutage(err: unknown, droppedAt: { clock: number; wall: number } | null = null): void {
    if (this.#outage) return;
    const since = droppedAt?.clock ?? this.#o.clock.now();
    const cause = isUnreachable(err) ? err.cause.message : err instanceof Error ? err.message : String(err);
    const outage: Outage = {
      since,
      sinceWallMs: droppedAt?.wall ?? Date.now(),
      reason: `the Docker Engine at ${this.#o.client.address} is unreachable since ${new Date(since).toISOString()}: ${cause}`,
    };
    this.#outage = outage;
    this.#o.logger.warn({ engine: this.#o.client.address, cause }, 'the Docker Engine is unreachable');
    this.#o.onOutage(outage);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = (): void => {
        this.#wake = null;
        done();
      };
    });
  }
}
