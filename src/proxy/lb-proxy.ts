/**
 * Load-balancing endpoints on the proxy listener (docs/load-balancing.md): a request to
 * `/lb/{endpointId}/…` or `{endpointId}.{proxy.loadBalancer.domain}` needs an API key of the
 * endpoint's account (`Authorization: Bearer`, never passed on), then goes, once, to the ready
 * worker of the endpoint holding the fewest requests (lb-pool.ts); with none ready it waits for
 * one, bounded (`workerWaitMs`, then 503 with Retry-After). Every answer from a worker carries
 * `X-Runpod-Worker-Id`; a request naming a ready worker in it goes to that one. Bodies stream both
 * ways; a body past `maxPayloadBytes` is 413, an answer not begun within `processingTimeoutMs` 504.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ApiError } from '../domain/errors.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { Runtime } from '../runtime/runtime.js';
import { DialTimeout } from '../runtime/dial.js';
import type { LbLease, LbPool } from '../serverless/lb-pool.js';
import { requestHeaders, upgradeHead } from './proxy-headers.js';
import { sendProblem } from './proxy-problem.js';
import { rawProblemResponse } from '../http/client-errors.js';
import { affinityOf, lbRouteOf, noneReady, noWorker, pinnedGone, tooLarge, type LbRoute } from './lb-route.js';
import { PodConnections } from './pod-connections.js';
import { forwardToWorker, type LbMeter } from './lb-forward.js';
import { joinUpgrade } from './relay.js';
import { ProxyLimits } from './proxy-limits.js';
import type { LbSettings, PodProxySettings } from '../transport/proxy-settings.js';
import { NO_TRUSTED_PROXIES, type TrustedProxies } from './forwarded-client.js';

/** The header naming the worker that answered, and the one a request may ask for. */
const WORKER_HEADER = 'x-runpod-worker-id';
/** How long an endpoint's lookup is reused (real, monotonic time): its settings change rarely. */
const ENDPOINT_TTL_MS = 1_000;
/** Workers a request is offered to when the ones before could not be reached (it reached none of them). */
const MAX_ATTEMPTS = 3;

export type { LbMeter } from './lb-forward.js';

export interface LbProxyDeps {
  pool: Pick<LbPool, 'acquire' | 'onRemove' | 'hostPortOf'>;
  /** The account of an API key (read or write scope), or null. */
  accountOf(key: string): Promise<string | null>;
  endpoints: { get(accountId: string, id: string): Promise<Endpoint> };
  runtime: Pick<Runtime, 'connect' | 'name'>;
  settings: Pick<
    PodProxySettings,
    'connectTimeoutMs' | 'idleTimeoutMs' | 'maxConnectionsPerPod' | 'maxConnectionsPerAccount'
  > & { loadBalancer: LbSettings };
  logger: Pick<Logger, 'warn'>;
  meter?: LbMeter | null;
  /** Peers whose `X-Forwarded-*` are believed (`server.trustedProxies`); none by default. */
  trusted?: TrustedProxies;
}

export class LbProxy {
  readonly #d: LbProxyDeps;
  /** raw keep-alive connections to workers' ports, as the pod proxy's to pods' */
  readonly #connections: PodConnections;
  /** Requests open (waiting or under way) per endpoint and per account, as the pod proxy's per pod. */
  readonly #limits: ProxyLimits;
  readonly #unsubscribe: () => void;
  /** By endpoint id: the endpoint as last looked up; a hit counts only for its own account. */
  readonly #endpoints = new Map<string, { endpoint: Endpoint; at: number }>();

  constructor(deps: LbProxyDeps) {
    this.#d = deps;
    this.#limits = new ProxyLimits(deps.settings);
    this.#connections = new PodConnections((workerId, port, onread) => {
      const { runtime, settings } = this.#d;
      if (!runtime.connect) return Promise.reject(new Error(`runtime ${runtime.name} cannot reach a worker's port`));
      return runtime.connect(workerId, port, {
        timeoutMs: settings.connectTimeoutMs,
        hostPort: this.#d.pool.hostPortOf(workerId, port),
        onread,
      });
    });
    // a stopped worker's kept connections go with it
    this.#unsubscribe = deps.pool.onRemove((workerId) => this.#connections.drop(workerId));
  }

  /** The request's load-balancing route, or null when it is the pod proxy's. */
  routeOf(req: IncomingMessage): LbRoute | null {
    return lbRouteOf(req.headers.host, req.url ?? '/', this.#d.settings.loadBalancer.domain);
  }

  close(): void {
    this.#unsubscribe();
    this.#connections.close();
  }

  /** Answers a request `routeOf` found a route for. */
  handle(req: IncomingMessage, res: ServerResponse, route: LbRoute): void {
    void this.#handle(req, res, route).catch((err: unknown) => {
      this.#d.logger.warn({ err }, 'the load balancer could not answer a request');
      sendProblem(res, new ApiError('INTERNAL', 'The load balancer failed to forward the request.'));
    });
  }

  async #endpoint(req: IncomingMessage, route: LbRoute): Promise<Endpoint | ApiError> {
    const key = req.headers.authorization?.trim().replace(/^bearer\s+/i, '') ?? '';
    if (!key)
      return new ApiError(
        'UNAUTHORIZED',
        "A load-balancing endpoint needs an API key of its account: send 'Authorization: Bearer <key>'.",
      );
    const accountId = await this.#d.accountOf(key);
    if (accountId === null)
      return new ApiError('UNAUTHORIZED', 'This API key is not valid (a worker key opens no endpoint).');
    const hit = this.#endpoints.get(route.endpointId);
    let endpoint: Endpoint;
    if (hit && hit.endpoint.accountId === accountId && performance.now() - hit.at < ENDPOINT_TTL_MS)
      endpoint = hit.endpoint;
    else
      try {
        // another account's endpoint is not found, as under /v2
        endpoint = await this.#d.endpoints.get(accountId, route.endpointId);
        if (this.#endpoints.size >= 10_000) this.#endpoints.clear();
        this.#endpoints.set(endpoint.id, { endpoint, at: performance.now() });
      } catch (err) {
        if (err instanceof ApiError) return err;
        throw err;
      }
    if (endpoint.type !== 'LB')
      return new ApiError(
        'NOT_FOUND',
        `Endpoint "${endpoint.id}" is queue-based: send its jobs to /v2/${endpoint.id}/run or /runsync on the API, not to the load balancer.`,
      );
    return endpoint;
  }

  async #handle(req: IncomingMessage, res: ServerResponse, route: LbRoute): Promise<void> {
    const started = performance.now();
    const limits = this.#d.settings.loadBalancer;
    const endpoint = await this.#endpoint(req, route);
    const refuse = (problem: ApiError): void => {
      // the body is not wanted: the connection closes after the answer rather than read it
      res.shouldKeepAlive = false;
      sendProblem(res, problem);
    };
    if (endpoint instanceof ApiError) return refuse(endpoint);
    const meter = this.#d.meter ?? null;
    const counted = (status: number): void => meter?.request(endpoint.id, status, (performance.now() - started) / 1000);
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > limits.maxPayloadBytes) {
      counted(413);
      return refuse(tooLarge(limits.maxPayloadBytes));
    }
    if (endpoint.workersMax <= 0) {
      counted(503);
      return refuse(noWorker(endpoint));
    }
    let slot: () => void;
    try {
      slot = this.#limits.acquire({ podId: endpoint.id, accountId: endpoint.accountId }, 'endpoint');
    } catch (err) {
      counted((err as ApiError).status);
      return refuse(err as ApiError);
    }
    res.once('close', slot);
    const lease = await this.#lease(req, res, endpoint);
    if (lease === null) return;
    if (lease instanceof ApiError) {
      counted(lease.status);
      return refuse(lease);
    }
    return this.#forward(req, res, route, endpoint, lease, counted, 1);
  }

  /** Another worker for a request none of which reached the one before (its port refused it). */
  async #again(
    req: IncomingMessage,
    res: ServerResponse,
    route: LbRoute,
    endpoint: Endpoint,
    counted: (status: number) => void,
    attempt: number,
  ): Promise<void> {
    const lease = await this.#lease(req, res, endpoint);
    if (lease === null) return;
    if (lease instanceof ApiError) {
      counted(lease.status);
      res.shouldKeepAlive = false;
      return sendProblem(res, lease);
    }
    return this.#forward(req, res, route, endpoint, lease, counted, attempt);
  }

  /**
   * Joins a WebSocket (an upgrade `routeOf` found a route for) to a ready worker's PORT, byte for
   * byte, held as one of that worker's requests until either side ends. The key is checked and
   * taken off as for a request; the worker's 101 goes to the client as it sent it.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: LbRoute): void {
    socket.on('error', () => socket.destroy());
    void this.#upgrade(req, socket, head, route).catch((err: unknown) => {
      this.#d.logger.warn({ err }, 'the load balancer could not join an upgrade');
      socket.destroy();
    });
  }

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: LbRoute): Promise<void> {
    const started = performance.now();
    const endpoint = await this.#endpoint(req, route);
    if (endpoint instanceof ApiError) return void socket.end(rawProblemResponse(endpoint));
    const meter = this.#d.meter ?? null;
    const counted = (status: number): void => meter?.request(endpoint.id, status, (performance.now() - started) / 1000);
    const refuse = (problem: ApiError): void => {
      counted(problem.status);
      socket.end(rawProblemResponse(problem));
    };
    if (endpoint.workersMax <= 0) return refuse(noWorker(endpoint));
    let slot: () => void;
    try {
      slot = this.#limits.acquire({ podId: endpoint.id, accountId: endpoint.accountId }, 'endpoint');
    } catch (err) {
      return refuse(err as ApiError);
    }
    const lease = await this.#lease(req, socket, endpoint);
    if (lease === null || lease instanceof ApiError) {
      slot();
      return lease ? refuse(lease) : void socket.destroy();
    }
    const { runtime, settings } = this.#d;
    let upstream: Duplex;
    try {
      if (!runtime.connect) throw new Error(`runtime ${runtime.name} cannot reach a worker's port`);
      upstream = await runtime.connect(lease.workerId, lease.port, {
        timeoutMs: settings.connectTimeoutMs,
        hostPort: this.#d.pool.hostPortOf(lease.workerId, lease.port),
      });
    } catch (err) {
      lease.release();
      slot();
      const timeout = err instanceof DialTimeout;
      return refuse(
        new ApiError(
          timeout ? 'UPSTREAM_TIMEOUT' : 'UPSTREAM_UNAVAILABLE',
          `Worker "${lease.workerId}" of endpoint "${endpoint.id}": ${(err as Error).message}.`,
        ),
      );
    }
    meter?.inFlight(endpoint.id, 1);
    const headers = requestHeaders(req, {
      ...(this.#d.trusted ?? NO_TRUSTED_PROXIES).clientOf(req),
      prefix: route.prefix,
      upgrade: true,
      dropAuthorization: true,
    });
    upstream.write(upgradeHead(req.method, route.path, headers));
    joinUpgrade(socket, upstream, head, settings.idleTimeoutMs, () => {
      lease.release();
      slot();
      meter?.inFlight(endpoint.id, -1);
      counted(101);
    });
  }

  /** A ready worker, waiting for one when there is none; null when the client left meanwhile. */
  async #lease(
    req: IncomingMessage,
    closes: { once(event: 'close', fn: () => void): unknown; off(event: 'close', fn: () => void): unknown },
    endpoint: Endpoint,
  ): Promise<LbLease | ApiError | null> {
    const waitMs = this.#d.settings.loadBalancer.workerWaitMs;
    const gone = new AbortController();
    const onClose = (): void => gone.abort();
    closes.once('close', onClose);
    const affinity = affinityOf(req.headers[WORKER_HEADER]);
    const { preferred, strict } = affinity;
    const waitStarted = performance.now();
    let waited = false;
    const lease = await this.#d.pool.acquire(endpoint.id, {
      waitMs,
      ...affinity,
      signal: gone.signal,
      onWait: () => (waited = true),
    });
    closes.off('close', onClose);
    if (lease === 'gone' || lease === 'suspended') return pinnedGone(preferred!, endpoint, lease === 'suspended');
    const seconds = (performance.now() - waitStarted) / 1000;
    const outcome = lease ? 'served' : gone.signal.aborted ? 'gone' : 'timeout';
    if (waited) this.#d.meter?.waited(endpoint.id, outcome, seconds);
    if (lease && gone.signal.aborted) {
      lease.release();
      return null;
    }
    if (outcome === 'gone') return null;
    if (lease) return lease;
    return noneReady(endpoint, waitMs, strict ? preferred : null);
  }

  #forward(
    req: IncomingMessage,
    res: ServerResponse,
    route: LbRoute,
    endpoint: Endpoint,
    lease: LbLease,
    counted: (status: number) => void,
    attempt: number,
  ): Promise<void> {
    const { settings } = this.#d;
    return forwardToWorker({
      req,
      res,
      route,
      endpoint,
      lease,
      counted,
      connections: this.#connections,
      headers: requestHeaders(req, {
        ...(this.#d.trusted ?? NO_TRUSTED_PROXIES).clientOf(req),
        prefix: route.prefix,
        upgrade: false,
        // the key the balancer checked never reaches the worker
        dropAuthorization: true,
      }),
      idleTimeoutMs: settings.idleTimeoutMs,
      limits: settings.loadBalancer,
      meter: this.#d.meter ?? null,
      // nothing of the request left: another worker may take it whole
      again: attempt < MAX_ATTEMPTS ? () => this.#again(req, res, route, endpoint, counted, attempt + 1) : null,
    });
  }
}
