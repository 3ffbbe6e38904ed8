import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import { ApiError } from '../domain/errors.js';
import { clientKey } from './client-address.js';
import { rawProblemResponse } from './client-errors.js';

/** `config.server`'s limits on what one connection and one client may hold. */
export interface ListenerLimits {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnectionsPerClient: number;
}

/**
 * How often Node looks for requests past their timeouts: a slow client is cut between its
 * timeout and the timeout plus this. A quarter of the shortest timeout, at most a second (Node's
 * 30 s default let a 10 s header timeout hold for 40 s); each check walks the open requests only.
 */
export function checkingIntervalMs(limits: Pick<ListenerLimits, 'requestTimeoutMs' | 'headersTimeoutMs'>): number {
  const shortest = Math.min(...[limits.requestTimeoutMs, limits.headersTimeoutMs].filter((ms) => ms > 0));
  return Number.isFinite(shortest) ? Math.min(1000, Math.max(10, Math.floor(shortest / 4))) : 30_000;
}

/**
 * Applies the request timeouts to a listener before it listens. Node's `requestTimeout` and
 * `headersTimeout` run until the request has been *received*, so long-polls (job-take, runsync,
 * status-sync, stream), which wait on the response, are not cut by them; nothing here limits how
 * long a response may take. Node answers a timeout through `clientError` (see client-errors.ts).
 */
export function applyRequestTimeouts(server: Server, limits: ListenerLimits): void {
  server.requestTimeout = limits.requestTimeoutMs;
  // Node expects headers to be due no later than the whole request.
  server.headersTimeout =
    limits.requestTimeoutMs > 0 && limits.headersTimeoutMs > 0
      ? Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs)
      : limits.headersTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // read by Node when the server starts listening
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = checkingIntervalMs(limits);
}

/** A refused connection is closed after this long if the client does not close it first. */
const REFUSED_GRACE_MS = 1000;

/**
 * Caps the connections one client holds across the listeners it guards (the main and the job
 * listener share one count). A client is an IPv4 address or an IPv6 /64 (client-address.ts). A connection over the cap is answered 429 TOO_MANY_CONNECTIONS
 * at once, before any request is read (no parser or timer is spent on it), and closed. The
 * address is the socket's peer: behind a reverse proxy every client shares the proxy's, so there
 * the cap should be off (0) or sized for the proxy. On an HTTPS listener a connection over the cap
 * is closed before its handshake: an answer would first cost the handshake the cap exists to spare.
 */
export class ConnectionCap {
  readonly #open = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Open connections of the client at `address` right now (for tests and diagnostics). */
  openFor(address: string): number {
    return this.#open.get(clientKey(address)) ?? 0;
  }

  /** Guards `server`; call it once it listens, so every connection listener it has is wrapped. */
  guard(server: Server): void {
    if (this.max <= 0) return;
    const handlers = server.listeners('connection') as Array<(socket: Socket) => void>;
    server.removeAllListeners('connection');
    const secure = server instanceof TlsServer;
    server.on('connection', (socket: Socket) => {
      if (socket.remoteAddress === undefined) return socket.destroy();
      const client = clientKey(socket.remoteAddress);
      const open = this.#open.get(client) ?? 0;
      if (open >= this.max) return secure ? void socket.destroy() : this.#refuse(socket);
      this.#open.set(client, open + 1);
      socket.once('close', () => {
        const left = (this.#open.get(client) ?? 1) - 1;
        if (left > 0) this.#open.set(client, left);
        else this.#open.delete(client);
      });
      for (const handler of handlers) handler.call(server, socket);
    });
  }

  #refuse(socket: Socket): void {
    const problem = new ApiError(
      'TOO_MANY_CONNECTIONS',
      `This client (its IPv4 address, or its IPv6 /64) already holds ${this.max} open connections, the most the server allows one client; reuse them (keep-alive) or close some.`,
    );
    socket.on('error', () => socket.destroy());
    // What the client sends is read and dropped, and the socket kept until the client closes it
    // (or the grace ends): closing with unread data would reset the connection and could lose
    // the answer before the client reads it.
    socket.on('end', () => socket.destroy());
    socket.setTimeout(REFUSED_GRACE_MS, () => socket.destroy());
    socket.resume();
    socket.end(rawProblemResponse(problem));
  }
}
