import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { buildApp } from '../http/app.js';
import { createJobListener } from '../http/job-listener.js';
import { ConnectionCap } from '../http/listener-limits.js';
import { followUnusedConnections } from '../http/unused-connections.js';
import type { Readiness } from '../http/readiness.js';
import type { ServerCertificates } from '../http/tls-certificates.js';

export interface Listeners {
  app: FastifyInstance;
  url: string;
  /** The job listener's URL, when `server.jobPort` is set. */
  jobUrl: string | null;
  /** Ends what keeps a close waiting (idle connections, log streams), then closes both listeners. */
  close(): Promise<void>;
}

/** The HTTP(S) listener over `buildApp`, the optional job-only listener, and the agents' stream upgrades. */
export async function openListeners(
  services: Services,
  readiness: Readiness,
  tls: ServerCertificates | null = null,
): Promise<Listeners> {
  const { config } = services;
  const app = await buildApp(services, { logger: services.logger, readiness, ...(tls ? { tls } : {}) });
  await app.listen({ port: config.server.port, host: config.server.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.server.port;
  const urlOf = (p: number): string =>
    `${tls ? 'https' : 'http'}://${config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host}:${p}`;
  const url = urlOf(port);
  // One count per client address across both listeners.
  const unusedConnections = followUnusedConnections(app.server);
  const connectionCap = new ConnectionCap(config.server.maxConnectionsPerClient);
  connectionCap.guard(app.server);
  const jobListener = config.server.jobPort === null ? null : createJobListener(app, config.server, tls ?? undefined);
  let jobUrl: string | null = null;
  const close = async (): Promise<void> => {
    // agents' long-polls answer now (empty) rather than hold the shutdown
    if (jobListener?.listening) {
      const stopped = new Promise((resolve) => jobListener.close(resolve));
      jobListener.closeAllConnections();
      await stopped;
    }
    // a connection that never carried a request would hold the close until its headers timeout
    unusedConnections.closeUnused();
    // log streams follow until the client leaves: end them, or the close waits for them
    services.logs.close();
    await app.close();
  };
  if (jobListener) {
    try {
      await new Promise<void>((resolve, reject) => {
        jobListener.once('error', reject);
        jobListener.listen(config.server.jobPort!, config.server.host, () => resolve());
      });
    } catch (err) {
      await close();
      throw err;
    }
    const jobAddress = jobListener.address();
    jobUrl = urlOf(typeof jobAddress === 'object' && jobAddress ? jobAddress.port : config.server.jobPort!);
    connectionCap.guard(jobListener);
  }
  // Agents dial back for streams (fleet-streams.ts) on either listener.
  const streams = services.fleetStreams;
  if (streams) {
    const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
      if (!streams.handleUpgrade(req, socket, head))
        socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    };
    app.server.on('upgrade', upgrade);
    jobListener?.on('upgrade', upgrade);
  }
  // Port 0 asked the system for a port: the derived public URLs learn it now (an explicit URL is kept).
  config.server.publicUrl = withBoundPort(config.server.publicUrl, port);
  config.server.publicJobUrl = withBoundPort(
    config.server.publicJobUrl,
    jobListener ? Number(new URL(jobUrl!).port) : port,
  );
  return { app, url, jobUrl, close };
}

/** `url` with `port` in place of a port 0 (which no client can dial); any other URL as it is. */
function withBoundPort(url: string, port: number): string {
  try {
    const parsed = new URL(url);
    if (parsed.port !== '0') return url;
    parsed.port = String(port);
    return parsed.toString().replace(/\/+$/, '');
  } catch {
    return url;
  }
}
