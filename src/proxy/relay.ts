/**
 * What the pod proxy and the load balancer do alike with an upgraded connection (a WebSocket):
 * join it to the upstream byte for byte.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * Joins an upgraded client connection to its upstream both ways until either side ends (an
 * upgraded connection is not half-closed: the listener's sockets allow half-open connections,
 * which would keep it open), or nothing moves for `idleTimeoutMs` (0: never). `ended` is called
 * once, with the bytes read from and written to the client since the upgrade (`head` included).
 */
export function joinUpgrade(
  socket: Duplex,
  upstream: Duplex,
  head: Buffer,
  idleTimeoutMs: number,
  ended: (bytesIn: number, bytesOut: number) => void,
): void {
  // read off the client's connection: a 'data' listener beside the pipes slows them
  const client = socket as Duplex & Partial<Pick<Socket, 'bytesRead' | 'bytesWritten' | 'setTimeout'>>;
  const readBefore = (client.bytesRead ?? 0) - head.length;
  const writtenBefore = client.bytesWritten ?? 0;
  let done = false;
  const end = (): void => {
    if (done) return;
    done = true;
    socket.destroy();
    upstream.destroy();
    ended((client.bytesRead ?? 0) - readBefore, (client.bytesWritten ?? 0) - writtenBefore);
  };
  for (const side of [socket, upstream]) {
    side.on('error', end);
    side.on('end', end);
    side.on('close', end);
  }
  if (socket.destroyed || upstream.destroyed) return end();
  if (head.length > 0) upstream.write(head);
  if (idleTimeoutMs > 0) client.setTimeout?.(idleTimeoutMs, end);
  upstream.pipe(socket);
  socket.pipe(upstream);
}
