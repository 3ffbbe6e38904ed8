/** A TCP connection for a runtime's `connect()` (runtime.ts), its failures in words a user can act on. */
import { connect, type OnReadOpts, type Socket } from 'node:net';

/** Thrown when the connection was not accepted within its time (the proxy answers 504). */
export class DialTimeout extends Error {}

/**
 * Connects to `host:port`, resolving once connected (no delay on small writes). `what` names the
 * target in the error: `port 8888 of instance "abc"`. `onread`: reads land in the caller's buffer
 * (`net.connect`'s option) rather than in a new one each time.
 */
export function dialTcp(
  host: string,
  port: number,
  what: string,
  { timeoutMs, onread }: { timeoutMs: number; onread?: OnReadOpts | undefined },
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, noDelay: true, ...(onread ? { onread } : {}) });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new DialTimeout(`${what} did not accept a connection within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      reject(
        new Error(
          err.code === 'ECONNREFUSED'
            ? `nothing listens on ${what} (the connection was refused): the application has not started yet, or listens on another port or only on its own loopback address (it must listen on 0.0.0.0)`
            : `${what} cannot be reached: ${err.code ?? err.message}`,
        ),
      );
    });
  });
}
