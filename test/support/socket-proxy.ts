/**
 * A unix socket that forwards every connection to another (the real engine's), which a test can
 * cut (the socket disappears and open connections break, as when an engine goes away) and restore.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export class UnixSocketProxy {
  readonly path: string;
  readonly #dir: string;
  readonly #target: string;
  readonly #sockets = new Set<Socket>();
  #server: Server | null = null;
  /** Request lines (`GET /containers/…/stats?… HTTP/1.1`) that went through, in order. */
  readonly requests: string[] = [];
  /** The last request line of each open connection. */
  readonly #lastRequest = new Map<Socket, string>();

  constructor(target: string) {
    this.#target = target;
    this.#dir = mkdtempSync(join(tmpdir(), 'gantry-engine-proxy-'));
    this.path = join(this.#dir, 'docker.sock');
  }

  /** Listens (again). */
  async start(): Promise<void> {
    if (this.#server) return;
    const server = createServer((client) => {
      const upstream = createConnection(this.#target);
      this.#sockets.add(client).add(upstream);
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
        this.#sockets.delete(client);
        this.#sockets.delete(upstream);
        this.#lastRequest.delete(client);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.on('data', (chunk: Buffer) => {
        // A request line starts a chunk in practice (small JSON calls); enough to count calls by path.
        for (const m of chunk
          .toString('latin1')
          .matchAll(/(?:^|\r\n)((?:GET|POST|PUT|DELETE|HEAD) \S+ HTTP\/1\.[01])\r\n/g)) {
          this.requests.push(m[1]!);
          this.#lastRequest.set(client, m[1]!);
        }
      });
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.path, () => resolve());
    });
    this.#server = server;
  }

  /** Open connections whose last request matches `pattern`: a streamed answer (a log follow) holds its connection. */
  openMatching(pattern: RegExp): number {
    let n = 0;
    for (const line of this.#lastRequest.values()) if (pattern.test(line)) n++;
    return n;
  }

  /** Stops listening (the socket file goes) and breaks every open connection. */
  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(this.path, { force: true });
  }

  async close(): Promise<void> {
    await this.cut();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
