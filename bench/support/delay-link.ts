// A stand-in for a long link, for benchmarks on one machine where `tc netem` is not available (its
// kernel module is absent here): a TCP relay that delivers each chunk `rttMs / 2` after it read it,
// in each direction, and lets at most `windowBytes` per direction be unacknowledged — a chunk's
// bytes count from when they are read until a full round trip later (delivered after half of it,
// its acknowledgement back after the other half), as a TCP connection over such a link is bounded
// by its window: at most windowBytes per rttMs. It is a model, not the kernel's TCP (no loss, no
// slow start, no congestion control): figures measured through it say what the round trip and
// the window cost a protocol, not what a real WAN would add.
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface DelayLink {
  /** Where clients connect (127.0.0.1). */
  port: number;
  close(): Promise<void>;
}

/** One direction of a relayed connection: `from` read, delivered to `to` half a round trip later. */
function carry(from: Socket, to: Socket, rttMs: number, windowBytes: number): void {
  let unacknowledged = 0;
  let paused = false;
  from.on('data', (chunk: Buffer) => {
    unacknowledged += chunk.length;
    if (unacknowledged >= windowBytes && !paused) {
      paused = true;
      from.pause();
    }
    setTimeout(() => {
      if (!to.destroyed) to.write(chunk);
    }, rttMs / 2);
    setTimeout(() => {
      unacknowledged -= chunk.length;
      if (paused && unacknowledged < windowBytes) {
        paused = false;
        from.resume();
      }
    }, rttMs);
  });
  // the end follows the last chunk across the link
  from.on('end', () => setTimeout(() => to.end(), rttMs / 2));
}

/** Starts a link to `target` (host, port) with the given round trip and window. */
export async function startDelayLink(
  target: { host: string; port: number },
  rttMs: number,
  windowBytes: number,
): Promise<DelayLink> {
  const sockets = new Set<Socket>();
  const server: Server = createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    // the connection itself crosses the link: it is made half a round trip later
    client.pause();
    setTimeout(() => {
      const upstream = connect({ host: target.host, port: target.port, allowHalfOpen: true, noDelay: true });
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      upstream.on('connect', () => {
        carry(client, upstream, rttMs, windowBytes);
        carry(upstream, client, rttMs, windowBytes);
        client.resume();
      });
    }, rttMs / 2);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
