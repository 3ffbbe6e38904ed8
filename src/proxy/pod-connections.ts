/**
 * The pod proxy's raw connections to pods' ports (docs/proxy.md "How it forwards"), kept alive
 * between requests: one idle stack per pod port, each connection opened through the runtime
 * (`Runtime.connect`). A TCP connection reads into one buffer of its own, given to the runtime's
 * dial (`onread`), rather than into a new 64 KiB buffer at each read: a large answer then costs no
 * garbage for the collector, whose full collections in the server's large heap halved a download's
 * rate (bench/proxy.ts). A connection without it (a fleet tunnel's stream) is read by its `'data'`
 * events. Bytes are handed to the exchange reading the connection (upstream-exchange.ts); one that
 * arrives while the connection is idle means the pod cannot be trusted to frame its next answer, so
 * the connection is closed. A pod that stops has all its connections destroyed at once.
 */
import type { OnReadOpts, Socket } from 'node:net';
import { DialTimeout } from '../runtime/dial.js';
import type { Duplex } from 'node:stream';

/** What reads a connection: answers false to stop reading until `resume()`. */
export interface ConnectionReader {
  bytes(bytes: Uint8Array, start: number, end: number): boolean;
  /** The connection ended (the pod closed it, or it failed, or it was destroyed): `err` says why when it failed. */
  ended(err: Error | null): void;
}

export type RawDial = (podId: string, port: number, onread: OnReadOpts) => Promise<Duplex>;

/** Bytes each connection reads into, its own for its life. */
const READ_BUFFER_BYTES = 32 * 1024;
/** At most this many idle connections are kept per pod port. */
const MAX_IDLE_PER_PORT = 32;
/**
 * An idle connection is closed after this long: before the servers pods and workers commonly run
 * close it themselves (Node's and uvicorn's keep-alive is 5 s), so a request is seldom sent on a
 * connection its server is closing. One that is anyway: exchange-run.ts.
 */
const IDLE_KEPT_MS = 4_000;

/**
 * How long a connection is kept idle when its server said how long it keeps it (`Keep-Alive:
 * timeout=N`, e.g. Node's `timeout=5`): within that, by a margin for the time its last answer took
 * to reach the proxy (half of it, at most 1 s), so the server never closes it first. 0: not kept.
 */
export function keptIdleMs(serverKeepMs: number | null, ownMs = IDLE_KEPT_MS): number {
  if (serverKeepMs === null) return ownMs;
  return Math.max(0, Math.min(ownMs, serverKeepMs - Math.min(1000, serverKeepMs / 2)));
}

export class PodConnection {
  socket: Duplex | null = null;
  /** taken from the idle ones: it carried an exchange before */
  reused = false;
  /** how long its server keeps it open idle, as the last answer said (null: unsaid) */
  serverKeepMs: number | null = null;
  #reader: ConnectionReader | null = null;
  #ended = false;
  #idleTimer: NodeJS.Timeout | null = null;
  #timeoutMs = 0;
  #timing = false;

  constructor(
    readonly podId: string,
    readonly port: number,
  ) {}

  get usable(): boolean {
    return !this.#ended && this.socket !== null && !this.socket.destroyed;
  }

  /** `onread` for the dial: reads land in this connection's own buffer. */
  readonly onread: OnReadOpts = {
    buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
    callback: (bytes: number, buffer: Uint8Array) => this.#deliver(buffer, 0, bytes),
  };

  /** Takes the dialled socket: its bytes, end and errors go to the reader from now on. */
  attach(socket: Duplex, ended: () => void): void {
    this.socket = socket;
    // a connection that honours no `onread` (a tunnel stream) gives its bytes as `'data'`
    socket.on('data', (chunk: Buffer) => {
      if (!this.#deliver(chunk, 0, chunk.length)) socket.pause();
    });
    const end = (err: Error | null): void => {
      if (this.#ended) return;
      this.#ended = true;
      this.#clearIdle();
      socket.destroy();
      ended();
      const reader = this.#reader;
      this.#reader = null;
      reader?.ended(err);
    };
    socket.on('error', (err: Error) => end(err));
    socket.on('end', () => end(null));
    socket.on('close', () => end(null));
  }

  /**
   * Closes the connection as timed out (504 before an answer's head) once nothing moved on it for
   * `ms` (0: never). One listener for the connection's life: one per exchange would keep every
   * exchange's objects alive on a kept-alive connection.
   */
  timeout(ms: number): void {
    const socket: (Duplex & Partial<Pick<Socket, 'setTimeout'>>) | null = this.socket;
    if (!socket?.setTimeout || ms === this.#timeoutMs) return;
    this.#timeoutMs = ms;
    if (!this.#timing) {
      this.#timing = true;
      socket.on('timeout', () =>
        socket.destroy(new DialTimeout(`nothing moved for ${this.#timeoutMs} ms (proxy.idleTimeoutMs)`)),
      );
    }
    socket.setTimeout(ms);
  }

  /** Hands the connection to `reader` (null: idle). */
  read(reader: ConnectionReader | null): void {
    this.#reader = reader;
    if (reader) this.#clearIdle();
  }

  resume(): void {
    this.socket?.resume();
  }

  /** Idle from now: closed after `ms` unless taken again. */
  idle(ms: number, close: () => void): void {
    this.#reader = null;
    this.#idleTimer = setTimeout(close, ms);
    this.#idleTimer.unref();
    // read on while idle: the pod closing it (or speaking unasked) is seen at once
    this.socket?.resume();
  }

  destroy(): void {
    this.socket?.destroy();
  }

  #clearIdle(): void {
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = null;
  }

  #deliver(bytes: Uint8Array, start: number, end: number): boolean {
    const reader = this.#reader;
    if (reader) {
      // an exchange that ended in this read and gave the connection back: it reads on, idle
      return reader.bytes(bytes, start, end) || (this.#reader === null && this.#idleTimer !== null);
    }
    // a pod that speaks unasked: its next answer's framing cannot be trusted
    this.socket?.destroy();
    return false;
  }
}

export class PodConnections {
  /** `{podId}:{port}` → idle connections, the most recently used last */
  readonly #idle = new Map<string, PodConnection[]>();
  /** pod id → its open connections, idle or in use */
  readonly #open = new Map<string, Set<PodConnection>>();

  /** `keptMs`: how long an idle connection is kept at most (a test's, longer than its slowest step) */
  constructor(
    private readonly dial: RawDial,
    private readonly keptMs = IDLE_KEPT_MS,
  ) {}

  /** An idle connection to the pod's port, or a new one (always, when `fresh`). */
  async take(podId: string, port: number, fresh = false): Promise<PodConnection> {
    const idle = fresh ? undefined : this.#idle.get(`${podId}:${port}`);
    while (idle && idle.length > 0) {
      const conn = idle.pop()!;
      if (!conn.usable) continue;
      conn.reused = true;
      return conn;
    }
    const conn = new PodConnection(podId, port);
    const socket = await this.dial(podId, port, conn.onread);
    let open = this.#open.get(podId);
    if (!open) this.#open.set(podId, (open = new Set()));
    open.add(conn);
    conn.attach(socket, () => this.#forget(conn));
    return conn;
  }

  /** Gives a connection whose exchange ended cleanly back, to be reused. */
  give(conn: PodConnection): void {
    const key = `${conn.podId}:${conn.port}`;
    const idle = this.#idle.get(key) ?? [];
    const keepMs = keptIdleMs(conn.serverKeepMs, this.keptMs);
    if (!conn.usable || !this.#open.get(conn.podId)?.has(conn) || idle.length >= MAX_IDLE_PER_PORT || keepMs === 0) {
      conn.destroy();
      return;
    }
    this.#idle.set(key, idle);
    idle.push(conn);
    conn.idle(keepMs, () => conn.destroy());
  }

  /** Destroys every connection to the pod, idle or in use. */
  drop(podId: string): void {
    const open = this.#open.get(podId);
    if (!open) return;
    this.#open.delete(podId);
    for (const conn of open) conn.destroy();
  }

  /** Pods with an open connection now. */
  get size(): number {
    return this.#open.size;
  }

  close(): void {
    for (const podId of [...this.#open.keys()]) this.drop(podId);
  }

  #forget(conn: PodConnection): void {
    const key = `${conn.podId}:${conn.port}`;
    const idle = this.#idle.get(key);
    if (idle) {
      const at = idle.indexOf(conn);
      if (at !== -1) idle.splice(at, 1);
      if (idle.length === 0) this.#idle.delete(key);
    }
    const open = this.#open.get(conn.podId);
    open?.delete(conn);
    if (open?.size === 0) this.#open.delete(conn.podId);
  }
}
