/**
 * Connections on which no request ever began (a client's pool opening one ahead of need, a load
 * balancer's pre-opened connections, a port check). Node counts such a connection as active, not
 * idle, so closing the listener would wait for it until the client leaves or the headers timeout
 * ends it (a minute or more). On shutdown they are closed at once: nothing was asked on them, so
 * nothing is lost; connections serving a request finish it, and idle keep-alive ones are closed by
 * the listener's own close.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';

export interface UnusedConnections {
  /** Destroys the connections that have carried no request yet. */
  closeUnused(): void;
}

/** Follows `server`'s connections; call before anything wraps its `connection` listeners (ConnectionCap.guard). */
export function followUnusedConnections(server: Server): UnusedConnections {
  const unused = new Set<Socket>();
  // Over HTTPS a request's socket is the TLS one, made once the handshake ends (one that never
  // ends is cut by the handshake timeout).
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  server.on('request', (request: { socket: Socket }) => unused.delete(request.socket));
  return {
    closeUnused() {
      for (const socket of unused) socket.destroy();
      unused.clear();
    },
  };
}
