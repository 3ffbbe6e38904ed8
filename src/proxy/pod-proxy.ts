/**
 * The pod HTTP proxy (docs/proxy.md): a request to the proxy listener names a pod's `<port>/http`
 * port (proxy-route.ts) and goes on to it through the runtime, streaming both ways — any method, any
 * body size, Server-Sent Events — and an upgrade (a WebSocket) is joined to the pod's port byte for
 * byte. What cannot go on is answered as problem+json: 404 for a name that reaches no pod port, 502
 * for a pod that does not run or does not answer, 504 when it takes too long to, 429 past the
 * per-pod and per-account limits. No request waits without a bound: dialling has
 * `connectTimeoutMs`, the answer's head `responseTimeoutMs`, and a connection on which nothing
 * moves either way `idleTimeoutMs`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OnReadOpts } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ApiError } from '../domain/errors.js';
import type { PodHttpTarget } from '../pods/pod-http-targets.js';
import type { PodEventSource } from '../pods/pod-events.js';
import type { Runtime } from '../runtime/runtime.js';
import { DialTimeout } from '../runtime/dial.js';
import { rawProblemResponse } from '../http/client-errors.js';
import { requestHeaders, upgradeHead } from './proxy-headers.js';
import { sendProblem } from './proxy-problem.js';
import { checkAccess, SESSION_COOKIE, type ProxyAccessDeps } from './proxy-access.js';
import { ProxyLimits } from './proxy-limits.js';
import { routeOf, type ProxyRoute } from './proxy-route.js';
import { joinUpgrade } from './relay.js';
import { PodConnections, type PodConnection } from './pod-connections.js';
import type { UpstreamExchange } from './upstream-exchange.js';
import { runExchange } from './exchange-run.js';
import type { PodProxySettings } from '../transport/proxy-settings.js';
import { NO_TRUSTED_PROXIES, type ForwardedClient, type TrustedProxies } from './forwarded-client.js';

/** What the proxy counts, for `/metrics` (docs/metrics.md). */
export interface ProxyMeter {
  /** an exchange ended: `kind` http or upgrade, its status (0: none was sent), bytes each way */
  exchange(kind: 'http' | 'upgrade', status: number, bytesIn: number, bytesOut: number): void;
  /** open exchanges changed by `by` */
  open(by: number): void;
}

export interface PodProxyDeps {
  targets: { resolve(label: string): Promise<PodHttpTarget> } & ProxyAccessDeps['targets'];
  /** with `requireKey`: the account of an API key (proxy-access.ts) */
  accountOf?: (key: string) => Promise<string | null>;
  now?: () => number;
  runtime: Pick<Runtime, 'connect' | 'name'>;
  events: PodEventSource;
  settings: PodProxySettings;
  logger: Pick<Logger, 'debug' | 'warn'>;
  meter?: ProxyMeter | null;
  /** Peers whose `X-Forwarded-*` are believed (`server.trustedProxies`); none by default. */
  trusted?: TrustedProxies;
}

/** What a failed dial or exchange answers. */
function upstreamProblem(err: unknown, target: PodHttpTarget): ApiError {
  if (err instanceof ApiError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof DialTimeout)
    return new ApiError('UPSTREAM_TIMEOUT', `Pod "${target.podId}": ${message}.`, { headers: { 'retry-after': '5' } });
  return new ApiError('UPSTREAM_UNAVAILABLE', `Pod "${target.podId}" could not be reached: ${message}.`);
}

/**
 * How long a label's target is believed without a read of the store. A change this replica makes
 * is heard at once; one another replica makes (PostgreSQL) is read within this long, and meanwhile
 * the runtime's dial of a stopped pod fails (502).
 */
const ROUTE_MEMORY_MS = 1_000;
const ROUTES_REMEMBERED = 4_096;

export class PodProxy {
  readonly #d: PodProxyDeps;
  readonly #limits: ProxyLimits;
  readonly #connections: PodConnections;
  /** pod id → the upgraded connections to it (both ends), ended when the pod stops */
  readonly #tunnels = new Map<string, Set<Duplex>>();
  readonly #unsubscribe: () => void;
  /** label → its target and until when it is believed without a read (`#resolve`) */
  readonly #routes = new Map<string, { target: PodHttpTarget; until: number }>();
  /** pod status changes heard so far */
  #statusChanges = 0;

  constructor(deps: PodProxyDeps) {
    this.#d = deps;
    this.#limits = new ProxyLimits(deps.settings);
    this.#connections = new PodConnections((podId, port, onread) => this.#dial(podId, port, onread));
    this.#unsubscribe = deps.events.on('pod:status', ({ podId, from, to }) => {
      this.#forgetRoutes(podId);
      if (from === 'RUNNING' && to !== 'RUNNING') this.#podStopped(podId);
    });
  }

  /** Open exchanges of a pod right now. */
  openFor(podId: string): number {
    return this.#limits.openFor(podId);
  }

  /** The listener's `request` handler. */
  handleRequest = (req: IncomingMessage, res: ServerResponse): void => {
    void this.#request(req, res).catch((err: unknown) => {
      this.#d.logger.warn({ err }, 'the pod proxy could not answer a request');
      sendProblem(res, new ApiError('INTERNAL', 'The proxy failed to forward the request.'));
    });
  };

  /** The listener's `upgrade` handler (WebSockets). */
  handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    void this.#upgrade(req, socket, head).catch((err: unknown) => {
      this.#d.logger.warn({ err }, 'the pod proxy could not join an upgrade');
      socket.destroy();
    });
  };

  close(): void {
    this.#unsubscribe();
    this.#connections.close();
    for (const podId of [...this.#tunnels.keys()]) this.#podStopped(podId);
  }

  /** The route of a request; a problem (or a redirect) already answered when null. */
  async #target(req: IncomingMessage): Promise<{ route: ProxyRoute; target: PodHttpTarget } | ApiError | string> {
    const route = routeOf(req.headers.host, req.url ?? '/', this.#d.settings.domain);
    if (route === null)
      return new ApiError(
        'NOT_FOUND',
        `This is Gantry's pod HTTP proxy: a pod's HTTP port is at ${this.#d.settings.publicUrl}/{podId}-{port}-{token}/ (each pod lists its URLs in \`httpProxy\`).`,
      );
    if ('redirect' in route) return route.redirect;
    try {
      return { route, target: await this.#resolve(route.label) };
    } catch (err) {
      if (err instanceof ApiError) return err;
      throw err;
    }
  }

  /**
   * The target of a label: remembered for `ROUTE_MEMORY_MS` so a busy port's requests cost no read
   * of the store, and forgotten at once when this replica hears its pod change status. A lookup
   * that began before such a change is not remembered (it may have read the old status).
   */
  async #resolve(label: string): Promise<PodHttpTarget> {
    const now = (this.#d.now ?? Date.now)();
    const known = this.#routes.get(label);
    if (known && known.until > now) return known.target;
    const changes = this.#statusChanges;
    const target = await this.#d.targets.resolve(label);
    if (changes === this.#statusChanges) {
      if (this.#routes.size >= ROUTES_REMEMBERED) this.#routes.clear();
      this.#routes.set(label, { target, until: now + ROUTE_MEMORY_MS });
    }
    return target;
  }

  #forgetRoutes(podId: string): void {
    this.#statusChanges++;
    for (const [label, known] of this.#routes) if (known.target.podId === podId) this.#routes.delete(label);
  }

  async #request(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const found = await this.#target(req);
    if (typeof found === 'string') {
      res.writeHead(308, { location: found, 'content-length': 0 });
      res.end();
      return;
    }
    if (found instanceof ApiError) {
      // the request body is not wanted: drop it rather than leave it in the socket
      req.resume();
      this.#d.meter?.exchange('http', found.status, 0, 0);
      return sendProblem(res, found);
    }
    const { route, target } = found;
    const access = this.#d.settings.requireKey ? await this.#access(req, route, target) : null;
    if (access instanceof ApiError) {
      req.resume();
      this.#d.meter?.exchange('http', access.status, 0, 0);
      return sendProblem(res, access);
    }
    if (access !== null) {
      req.resume();
      res.writeHead(303, {
        location: access.redirect,
        'set-cookie': access.setCookie,
        'cache-control': 'no-store',
        'content-length': 0,
      });
      res.end();
      return;
    }
    let release: () => void;
    try {
      release = this.#limits.acquire(target);
    } catch (err) {
      req.resume();
      this.#d.meter?.exchange('http', (err as ApiError).status, 0, 0);
      return sendProblem(res, err as ApiError);
    }
    const { settings, meter } = this.#d;
    meter?.open(1);
    // The answer's bytes are read off the client's connection (its head included), not counted
    // chunk by chunk. A request body is counted as it comes.
    const client = req.socket;
    const writtenBefore = client.bytesWritten;
    let bytesIn = 0;
    let status = 0;
    let over = false;
    let exchange: UpstreamExchange | null = null;
    let conn: PodConnection | null = null;
    const done = (): void => {
      if (over) return;
      over = true;
      clearTimeout(responseTimer);
      release();
      meter?.open(-1);
      meter?.exchange('http', status, bytesIn, client.bytesWritten - writtenBefore);
    };
    const fail = (err: unknown): void => {
      if (res.headersSent) return void res.destroy();
      status = err instanceof DialTimeout ? 504 : 502;
      sendProblem(res, upstreamProblem(err, target));
    };
    const responseTimer = setTimeout(() => {
      const late = new DialTimeout(
        `it sent no answer within ${settings.responseTimeoutMs} ms (proxy.responseTimeoutMs)`,
      );
      exchange?.abort();
      conn?.destroy();
      fail(late);
    }, settings.responseTimeoutMs);
    // the client left before the answer ended: so does the exchange with the pod
    res.once('close', () => {
      done();
      if (!res.writableFinished) exchange?.abort();
    });
    try {
      conn = await this.#connections.take(target.podId, target.port);
    } catch (err) {
      req.resume();
      if (!res.headersSent && !res.destroyed) fail(err);
      return;
    }
    if (res.destroyed || res.writableEnded) {
      // answered meanwhile (the answer's time ran out) or the client left: the connection was not used
      this.#connections.give(conn);
      return;
    }
    runExchange(
      this.#connections,
      conn,
      {
        req,
        res,
        path: route.path,
        headers: requestHeaders(req, {
          ...this.#client(req),
          prefix: route.prefix,
          upgrade: false,
          ...this.#dropped(),
        }),
        prefix: route.prefix,
        idleTimeoutMs: settings.idleTimeoutMs,
        bytesIn: (n) => (bytesIn += n),
        head: (code) => {
          clearTimeout(responseTimer);
          status = code;
        },
        failed: (err) => {
          clearTimeout(responseTimer);
          if ('refused' in err) {
            status = 502;
            sendProblem(
              res,
              new ApiError(
                'UPSTREAM_UNAVAILABLE',
                `Pod "${target.podId}" sent an answer that cannot be passed on (${err.refused}).`,
              ),
            );
          } else fail(err);
        },
      },
      (started) => (exchange = started),
    );
  }

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const found = await this.#target(req);
    if (typeof found === 'string' || found instanceof ApiError) {
      const err =
        typeof found === 'string'
          ? new ApiError('NOT_FOUND', `A WebSocket must name the pod's path with its slash: ${found}.`)
          : found;
      this.#d.meter?.exchange('upgrade', err.status, 0, 0);
      socket.end(rawProblemResponse(err));
      return;
    }
    const { route, target } = found;
    const access = await this.#access(req, route, target);
    if (access instanceof ApiError) {
      this.#d.meter?.exchange('upgrade', access.status, 0, 0);
      socket.end(rawProblemResponse(access));
      return;
    }
    let release: () => void;
    try {
      release = this.#limits.acquire(target);
    } catch (err) {
      this.#d.meter?.exchange('upgrade', (err as ApiError).status, 0, 0);
      socket.end(rawProblemResponse(err as ApiError));
      return;
    }
    const { settings, meter } = this.#d;
    meter?.open(1);
    let upstream: Duplex;
    try {
      upstream = await this.#dial(target.podId, target.port);
    } catch (err) {
      release();
      meter?.open(-1);
      const problem = upstreamProblem(err, target);
      meter?.exchange('upgrade', problem.status, 0, 0);
      if (!socket.destroyed) socket.end(rawProblemResponse(problem));
      return;
    }
    if (socket.destroyed) {
      upstream.destroy();
      release();
      meter?.open(-1);
      return;
    }
    const headers = requestHeaders(req, {
      ...this.#client(req),
      prefix: route.prefix,
      upgrade: true,
      ...this.#dropped(),
    });
    upstream.write(upgradeHead(req.method, route.path, headers));
    const tunnel = this.#tunnels.get(target.podId) ?? new Set<Duplex>();
    this.#tunnels.set(target.podId, tunnel);
    tunnel.add(socket);
    tunnel.add(upstream);
    joinUpgrade(socket, upstream, head, settings.idleTimeoutMs, (bytesIn, bytesOut) => {
      tunnel.delete(socket);
      tunnel.delete(upstream);
      if (tunnel.size === 0 && this.#tunnels.get(target.podId) === tunnel) this.#tunnels.delete(target.podId);
      release();
      meter?.open(-1);
      meter?.exchange('upgrade', 101, bytesIn, bytesOut);
    });
  }

  /** null: let through; a redirect that sets the session cookie; or the refusal (proxy-access.ts). */
  async #access(
    req: IncomingMessage,
    route: ProxyRoute,
    target: PodHttpTarget,
  ): Promise<null | { redirect: string; setCookie: string } | ApiError> {
    if (!this.#d.settings.requireKey) return null;
    const access = await checkAccess(req, route, target, {
      targets: this.#d.targets,
      accountOf: this.#d.accountOf ?? (async () => null),
      now: this.#d.now ?? Date.now,
    });
    return 'ok' in access ? null : access;
  }

  /** With `requireKey`, what the pod never gets: the session cookie, and the key that was checked. */
  #dropped(): { dropCookie?: string; dropAuthorization?: boolean } {
    return this.#d.settings.requireKey ? { dropCookie: SESSION_COOKIE, dropAuthorization: true } : {};
  }

  #dial(podId: string, port: number, onread?: OnReadOpts): Promise<Duplex> {
    const { runtime, settings } = this.#d;
    if (!runtime.connect)
      return Promise.reject(
        new ApiError(
          'UPSTREAM_UNAVAILABLE',
          `Pod "${podId}" runs on runtime ${runtime.name}, which the pod HTTP proxy cannot reach yet; reach its port ${port} at its host's published port instead.`,
        ),
      );
    return runtime.connect(podId, port, { timeoutMs: settings.connectTimeoutMs, onread });
  }

  #podStopped(podId: string): void {
    this.#connections.drop(podId);
    const tunnel = this.#tunnels.get(podId);
    if (!tunnel) return;
    this.#tunnels.delete(podId);
    for (const end of tunnel) end.destroy();
  }

  #client(req: IncomingMessage): ForwardedClient {
    return (this.#d.trusted ?? NO_TRUSTED_PROXIES).clientOf(req);
  }
}
