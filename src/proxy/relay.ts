/**
 * What the pod proxy and the load balancer do alike once an exchange has its upstream: pass an
 * answer on (its head only when Node will write it: what a pod or worker sends is untrusted), and
 * join an upgraded connection (a WebSocket) to the upstream byte for byte.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * Writes the answer's head with `headers` and pipes its body to `res`; a head Node will not write
 * (a status outside 200-599, a reason or header it refuses) calls `refused` with why instead of
 * throwing. Answers the status passed on, or 0 when refused.
 */
export function passAnswer(
  res: ServerResponse,
  answer: IncomingMessage,
  headers: OutgoingHttpHeaders,
  refused: (why: string) => void,
): number {
  const code = answer.statusCode ?? 0;
  try {
    if (code < 200 || code > 599) throw new Error(`it answered status ${code}`);
    res.writeHead(code, answer.statusMessage, headers);
  } catch (err) {
    refused((err as Error).message);
    return 0;
  }
  // An event stream's head goes at once (its first event may be long in coming); any other head
  // goes with the first bytes of its body, in one write. Bodies go on as they come.
  if (answer.headers['content-type']?.startsWith('text/event-stream')) res.flushHeaders();
  answer.pipe(res);
  answer.on('error', () => res.destroy());
  answer.on('aborted', () => res.destroy());
  return code;
}

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
