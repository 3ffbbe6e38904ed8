/**
 * Streams between the control plane and an agent (docs/fleet.md "Streams"): an instance's output
 * followed for a log stream, a shell for the SSH proxy. Agents connect outbound only, so the
 * control plane cannot call them: it queues a `stream` operation naming a one-time session and
 * secret, and the agent dials back `POST /agent/v1/streams/{session}` with its host credential and
 * the secret, asking to upgrade the connection to `gantry-stream.1`. The replica waiting for that
 * session pairs the connection with its reader; any other answers 404 and the agent tries its
 * other servers. From then on the connection carries frames (stream-frames.ts), with TCP's flow
 * control end to end: a reader that does not keep up stops the agent's reading of the engine.
 *
 * A session waits `connectTimeoutMs` for its dial-back, and fails at once when the agent
 * acknowledges its operation with an error (the instance is not there, the agent is too old).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Duplex, PassThrough } from 'node:stream';
import type { Logger } from 'pino';
import { newId } from '../domain/ids.js';
import type { OutputLine, OutputQuery, ShellRequest, ShellSession } from '../runtime/runtime.js';
import type { AckedOperation } from './fleet-events.js';
import {
  AGENT_API_PREFIX,
  STREAM_PROTOCOL,
  STREAM_SECRET_HEADER,
  TUNNEL_PROTOCOL,
  type NewOperation,
  type Operation,
  type StreamRequest,
  type AgentTunnelLimits,
} from './protocol.js';
import { encodeFrame, FRAME, frameJson, readFrames } from './stream-frames.js';

/** @default 15000 */
const DEFAULT_STREAM_CONNECT_TIMEOUT_MS = 15_000;
const STREAMS_PATH = `${AGENT_API_PREFIX}/streams/`;
const SESSION = /^[A-Za-z0-9_-]{8,64}$/;

export interface FleetStreamsDeps {
  enqueue(hostId: string, op: NewOperation): Promise<Operation>;
  /** The host a credential belongs to; throws when it is wrong or revoked. */
  authenticate(credential: string): Promise<{ hostId: string }>;
  logger: Pick<Logger, 'info' | 'warn'>;
  config?: { connectTimeoutMs?: number };
}

interface Waiting {
  hostId: string;
  /** the protocol the dial-back must upgrade to */
  protocol: string;
  secretHash: Buffer;
  opId: string | null;
  resolve(socket: Duplex, head: Buffer): void;
  reject(err: Error): void;
}

const hash = (secret: string): Buffer => createHash('sha256').update(secret).digest();

export class FleetStreams {
  readonly #deps: FleetStreamsDeps;
  readonly #waiting = new Map<string, Waiting>();
  /** operation id → session, for failing a session on its operation's failed ack */
  readonly #byOp = new Map<string, string>();
  /** connections paired and open */
  readonly #open = new Set<Duplex>();
  #closed = false;

  constructor(deps: FleetStreamsDeps) {
    this.#deps = deps;
  }

  /** Streams open now (paired connections). */
  get open(): number {
    return this.#open.size;
  }

  /** The instance's output on `hostId`, through its agent (the runtime port's `output()`). */
  async *output(hostId: string, instanceId: string, query: OutputQuery): AsyncGenerator<OutputLine> {
    const request: StreamRequest = {
      what: 'output',
      follow: query.follow,
      ...(query.sinceMs !== undefined ? { sinceMs: query.sinceMs } : {}),
      ...(query.tail !== undefined ? { tail: query.tail } : {}),
    };
    const { socket, head } = await this.#connect(hostId, instanceId, request, query.signal);
    const stop = () => socket.destroy();
    query.signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const frame of readFrames(socket, head)) {
        if (frame.type === FRAME.lines) {
          const lines = frameJson(frame);
          if (!Array.isArray(lines)) continue;
          for (const l of lines as Array<Partial<OutputLine>>) {
            // The reader left: nothing more of the frame under way.
            if (query.signal.aborted) return;
            if (typeof l?.ts === 'number' && typeof l.line === 'string') yield { ts: l.ts, line: l.line };
          }
        } else if (frame.type === FRAME.error) {
          const message = (frameJson(frame) as { message?: unknown } | null)?.message;
          throw new Error(typeof message === 'string' ? message : 'the agent ended the stream');
        }
      }
    } catch (err) {
      if (query.signal.aborted) return;
      throw err;
    } finally {
      query.signal.removeEventListener('abort', stop);
      socket.destroy();
    }
  }

  /** A shell in the instance on `hostId`, through its agent (the runtime port's `shell()`). */
  async shell(hostId: string, instanceId: string, request: ShellRequest): Promise<ShellSession> {
    const { socket, head } = await this.#connect(hostId, instanceId, { what: 'shell', shell: request }, null);
    // What the shell prints is read from `output`; what is typed goes to the agent as data frames.
    const output = new PassThrough();
    let exitCode: number | null = null;
    let resolveExit!: (code: number | null) => void;
    const exited = new Promise<number | null>((resolve) => (resolveExit = resolve));
    const stream = new ShellStream(output, socket);
    void (async () => {
      try {
        for await (const frame of readFrames(socket, head)) {
          if (frame.type === FRAME.data) {
            if (!output.write(frame.payload)) await new Promise((resolve) => output.once('drain', resolve));
          } else if (frame.type === FRAME.exit) {
            const code = (frameJson(frame) as { code?: unknown } | null)?.code;
            exitCode = typeof code === 'number' ? code : null;
          } else if (frame.type === FRAME.error) {
            const message = (frameJson(frame) as { message?: unknown } | null)?.message;
            output.write(`\r\n${typeof message === 'string' ? message : 'the shell ended'}\r\n`);
          }
        }
      } catch {
        // the connection broke: the shell is gone with it
      } finally {
        output.end();
        socket.destroy();
        resolveExit(exitCode);
      }
    })();
    return {
      stream,
      resize: (cols, rows) => {
        if (!socket.destroyed) socket.write(encodeFrame(FRAME.resize, { cols, rows }));
      },
      exited,
      close: () => socket.destroy(),
    };
  }

  /**
   * A connection the host's agent dialed back upgrading to the tunnel's protocol (fleet-tunnels.ts
   * multiplexes streams over it), once it did; `signal` gives up waiting.
   */
  tunnel(hostId: string, signal: AbortSignal, limits?: AgentTunnelLimits): Promise<{ socket: Duplex; head: Buffer }> {
    return this.#connect(hostId, '', { what: 'tunnel', ...(limits ? { limits } : {}) }, signal);
  }

  /** Operations acknowledged (every replica hears them): a stream operation that failed fails its session. */
  acked(acks: readonly AckedOperation[]): void {
    for (const ack of acks) {
      if (ack.kind !== 'stream') continue;
      const session = this.#byOp.get(ack.opId);
      this.#byOp.delete(ack.opId);
      if (ack.ok || session === undefined) continue;
      this.#waiting.get(session)?.reject(new Error(ack.error ?? 'the agent could not open the stream'));
    }
  }

  /**
   * An HTTP upgrade request reached the server: answers whether it is a stream's dial-back (then
   * this took the socket, pairing it or answering an error); false leaves the socket to others.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = (req.url ?? '').split('?')[0]!;
    if (!path.startsWith(STREAMS_PATH)) return false;
    socket.on('error', () => undefined);
    void this.#accept(req, socket, head, path.slice(STREAMS_PATH.length));
    return true;
  }

  close(): void {
    this.#closed = true;
    for (const w of this.#waiting.values()) w.reject(new Error('the control plane is shutting down'));
    for (const s of this.#open) s.destroy();
  }

  async #accept(req: IncomingMessage, socket: Duplex, head: Buffer, session: string): Promise<void> {
    const refuse = (status: number, title: string, detail: string) => {
      const body = JSON.stringify({ type: 'about:blank', title, status, detail });
      socket.end(
        `HTTP/1.1 ${status} ${title}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    };
    const waiting = SESSION.test(session) ? this.#waiting.get(session) : undefined;
    const secret = req.headers[STREAM_SECRET_HEADER];
    const protocol = String(req.headers.upgrade ?? '').toLowerCase();
    if (req.method !== 'POST' || (protocol !== STREAM_PROTOCOL && protocol !== TUNNEL_PROTOCOL))
      return refuse(
        400,
        'Bad Request',
        `a stream's dial-back is a POST asking to upgrade to ${STREAM_PROTOCOL} (a tunnel's to ${TUNNEL_PROTOCOL})`,
      );
    if (!waiting || typeof secret !== 'string' || !timingSafeEqual(hash(secret), waiting.secretHash))
      return refuse(
        404,
        'Not Found',
        'no stream waits for this session here (it ended, timed out, or waits on another replica)',
      );
    const auth = req.headers.authorization ?? '';
    let hostId: string;
    try {
      ({ hostId } = await this.#deps.authenticate(auth.replace(/^Bearer\s+/i, '')));
    } catch {
      return refuse(401, 'Unauthorized', 'the host credential is missing, wrong or revoked');
    }
    if (hostId !== waiting.hostId || this.#waiting.get(session) !== waiting || protocol !== waiting.protocol)
      return refuse(404, 'Not Found', 'no stream waits for this session here');
    this.#waiting.delete(session);
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: ${protocol}\r\nconnection: Upgrade\r\n\r\n`);
    waiting.resolve(socket, head);
  }

  async #connect(
    hostId: string,
    instanceId: string,
    request: StreamRequest,
    signal: AbortSignal | null,
  ): Promise<{ socket: Duplex; head: Buffer }> {
    if (this.#closed) throw new Error('the control plane is shutting down');
    const session = newId(24);
    const secret = randomBytes(24).toString('base64url');
    const timeoutMs = this.#deps.config?.connectTimeoutMs ?? DEFAULT_STREAM_CONNECT_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const paired = new Promise<{ socket: Duplex; head: Buffer }>((resolve, reject) => {
      const waiting: Waiting = {
        hostId,
        protocol: request.what === 'tunnel' ? TUNNEL_PROTOCOL : STREAM_PROTOCOL,
        secretHash: hash(secret),
        opId: null,
        resolve: (socket, head) => resolve({ socket, head }),
        reject: (err) => {
          if (this.#waiting.get(session) === waiting) this.#waiting.delete(session);
          reject(err);
        },
      };
      this.#waiting.set(session, waiting);
      timer = setTimeout(
        () =>
          waiting.reject(
            new Error(`host ${hostId} did not open the stream within ${timeoutMs} ms (is its agent connected?)`),
          ),
        timeoutMs,
      );
      timer.unref();
      if (signal) {
        onAbort = () => waiting.reject(new Error('the reader left'));
        signal.addEventListener('abort', onAbort, { once: true });
      }
    });
    // It may fail (the reader left, the timeout) while the operation is still being queued, before
    // anything awaits it: handled from the start, or the process would die of an unhandled rejection.
    paired.catch(() => undefined);
    try {
      const op = await this.#deps.enqueue(hostId, { kind: 'stream', instanceId, session, secret, request });
      const waiting = this.#waiting.get(session);
      if (waiting) {
        waiting.opId = op.id;
        this.#byOp.set(op.id, session);
      }
      const pair = await paired;
      this.#open.add(pair.socket);
      pair.socket.once('close', () => this.#open.delete(pair.socket));
      if (waiting?.opId) this.#byOp.delete(waiting.opId);
      return pair;
    } catch (err) {
      this.#waiting.get(session)?.reject(err as Error);
      throw err;
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** The shell's terminal as one duplex: writes go to the agent, reads come from what it printed. */
class ShellStream extends Duplex {
  readonly #output: PassThrough;
  readonly #socket: Duplex;

  constructor(output: PassThrough, socket: Duplex) {
    super();
    this.#output = output;
    this.#socket = socket;
    output.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) output.pause();
    });
    output.on('end', () => this.push(null));
  }

  override _read(): void {
    this.#output.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.#socket.destroyed) return callback();
    // Keystrokes wait while the connection to the agent is full.
    if (this.#socket.write(encodeFrame(FRAME.data, chunk))) callback();
    else this.#socket.once('drain', () => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#socket.end();
    callback();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.#socket.destroy();
    callback(err);
  }
}
