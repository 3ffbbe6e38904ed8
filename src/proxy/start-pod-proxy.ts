/**
 * Starts the pod HTTP proxy's listener (config `proxy`, docs/proxy.md): a server of its own on
 * `proxy.port` of `server.host`, so pods' pages never share the console's origin. Its limits: no
 * request timeout and no body cap (a proxied body streams for as long as it moves), the main
 * listener's header timeout and per-client connection cap, and `proxy.idleTimeoutMs` on
 * connections where nothing moves.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import type { Server as TlsServer } from 'node:tls';
import type { ServerCertificates } from '../http/tls-certificates.js';
import type { Logger } from 'pino';
import type { PodEventSource } from '../pods/pod-events.js';
import type { PodHttpTargets } from '../pods/pod-http-targets.js';
import type { Runtime } from '../runtime/runtime.js';
import { answerClientError } from '../http/client-errors.js';
import { ConnectionCap } from '../http/listener-limits.js';
import { followUnusedConnections } from '../http/unused-connections.js';
import { PodProxy, type ProxyMeter } from './pod-proxy.js';
import { LbProxy, type LbMeter, type LbProxyDeps } from './lb-proxy.js';
import type { ProxyListenerSettings } from '../transport/proxy-settings.js';
import { TrustedProxies } from './forwarded-client.js';

export interface PodProxyServices {
  config: {
    proxy: ProxyListenerSettings;
    server: {
      host: string;
      headersTimeoutMs: number;
      keepAliveTimeoutMs: number;
      maxConnectionsPerClient: number;
      /** peers whose `X-Forwarded-*` the proxy believes */
      trustedProxies: readonly string[];
    };
  };
  podHttpTargets: PodHttpTargets;
  accounts: { authenticate(key: string): Promise<{ accountId: string; scope: string } | null> };
  clock: { now(): number };
  runtime: Pick<Runtime, 'connect' | 'name'>;
  events: PodEventSource;
  logger: Logger;
  proxyMeter?: ProxyMeter | null;
  /** Load-balancing endpoints, served on the same listener (docs/load-balancing.md). */
  lb: LbProxyDeps['pool'];
  endpoints: LbProxyDeps['endpoints'];
  lbMeter?: LbMeter | null;
  /** Serve HTTPS with the server's certificates (`server.tls`; the wildcard names by SNI). */
  tls?: ServerCertificates | null;
}

export interface RunningPodProxy {
  proxy: PodProxy;
  server: Server;
  /** `http://host:port` (`https://` with TLS) it listens on */
  url: string;
  close(): Promise<void>;
}

/**
 * Listens, and records the port it got in `config.proxy` (for port 0) with `listening` set, which
 * makes pods' `httpProxy` URLs appear. Null when `proxy.enabled` is false, or when the default port
 * is taken (a warning says so; a port the config sets that is taken fails the start).
 */
export async function startPodProxy(services: PodProxyServices): Promise<RunningPodProxy | null> {
  const { config, logger } = services;
  const settings = config.proxy;
  if (!settings.enabled) return null;
  const trusted = new TrustedProxies(config.server.trustedProxies);
  const proxy = new PodProxy({
    targets: services.podHttpTargets,
    // a key of the account (read or write); a worker's key opens no pod
    accountOf: async (key) => {
      const principal = await services.accounts.authenticate(key);
      return principal && principal.scope !== 'worker' ? principal.accountId : null;
    },
    now: () => services.clock.now(),
    runtime: services.runtime,
    events: services.events,
    settings,
    logger: logger.child({ component: 'proxy' }),
    meter: services.proxyMeter ?? null,
    trusted,
  });
  const lb = new LbProxy({
    pool: services.lb,
    accountOf: async (key) => {
      const principal = await services.accounts.authenticate(key);
      return principal && principal.scope !== 'worker' ? principal.accountId : null;
    },
    endpoints: services.endpoints,
    runtime: services.runtime,
    settings,
    logger: logger.child({ component: 'load-balancer' }),
    meter: services.lbMeter ?? null,
    trusted,
  });
  // a large body moves in fewer, larger writes (the 16 KB default paused the pod's side at each chunk)
  const tls = services.tls ?? null;
  const options = { requestTimeout: 0, headersTimeout: config.server.headersTimeoutMs, highWaterMark: 1024 * 1024 };
  const server = tls
    ? (createHttpsServer({ ...options, ...tls.serverOptions(config.server.headersTimeoutMs) }) as unknown as Server)
    : createServer(options);
  if (tls) tls.attach(server as unknown as TlsServer);
  server.keepAliveTimeout = config.server.keepAliveTimeoutMs;
  server.timeout = settings.idleTimeoutMs;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const route = lb.routeOf(req);
    if (route) lb.handle(req, res, route);
    else proxy.handleRequest(req, res);
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const route = lb.routeOf(req);
    if (route) lb.handleUpgrade(req, socket, head, route);
    else proxy.handleUpgrade(req, socket, head);
  });
  server.on(
    'clientError',
    answerClientError({ requestTimeoutMs: 0, headersTimeoutMs: config.server.headersTimeoutMs }),
  );
  const unused = followUnusedConnections(server);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(settings.port, config.server.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    proxy.close();
    lb.close();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE' && !settings.portConfigured) {
      logger.warn(
        `the pod HTTP proxy is off: its default port ${settings.port} is taken (set proxy.port or GANTRY_PROXY_PORT to another port, or proxy.enabled: false)`,
      );
      return null;
    }
    throw new Error(
      `the pod HTTP proxy cannot listen on ${config.server.host}:${settings.port}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  new ConnectionCap(config.server.maxConnectionsPerClient).guard(server);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.port;
  settings.port = port;
  if (!settings.publicUrlConfigured) {
    const url = new URL(settings.publicUrl);
    url.port = String(port);
    settings.publicUrl = `${url.protocol}//${url.host}`;
  }
  settings.listening = true;
  const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host;
  return {
    proxy,
    server,
    url: `${tls ? 'https' : 'http'}://${host}:${port}`,
    close: async () => {
      settings.listening = false;
      proxy.close();
      lb.close();
      const closed = new Promise((resolve) => server.close(resolve));
      unused.closeUnused();
      server.closeAllConnections();
      await closed;
    },
  };
}
