/**
 * The agent's side of a stream (src/fleet/fleet-streams.ts): for a `stream` operation it dials
 * back `POST /agent/v1/streams/{session}` on the server the operation came from, then on the
 * others (the replica waiting for it answers, the rest say 404), upgrades the connection, and
 * carries the instance's output or a shell in it over frames (src/fleet/stream-frames.ts) until
 * either side ends. The operation is acknowledged once connected; a failure (no instance, no
 * server waiting) is acknowledged with why. The shell is opened before dialing, so a shell that
 * cannot start is told as the operation's error rather than as a stream that ends at once.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import {
  AGENT_API_PREFIX,
  STREAM_PROTOCOL,
  STREAM_SECRET_HEADER,
  TUNNEL_PROTOCOL,
  type Operation,
} from '../fleet/protocol.js';
import { encodeFrame, FRAME, frameJson, readFrames } from '../fleet/stream-frames.js';
import type { OutputLine, Runtime, ShellSession } from '../runtime/runtime.js';
import { agentTunnelLimits, type AgentTunnels } from './agent-tunnels.js';
import type { AppliedResult } from './applied-operations.js';
import { describeConnectFailure } from '../transport/tls-trust.js';

export type StreamOperation = Extract<Operation, { kind: 'stream' }>;

export interface StreamDialerDeps {
  runtime: Pick<Runtime, 'output' | 'shell'>;
  /** the control-plane URLs to try, the current one first */
  servers(): readonly string[];
  credential: string;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** A dial-back gives up after this long. @default 10000 */
  connectTimeoutMs?: number;
  /** Where a dialed-back tunnel is carried (agent-tunnels.ts). @default none: a tunnel is refused */
  tunnels?: Pick<AgentTunnels, 'refusal' | 'carry'>;
}

/** Lines of output sent in one frame at most… */
const LINES_PER_FRAME = 500;
/** …and bytes of them at most, JSON-encoded (a quarter of the frame limit). */
const BYTES_PER_FRAME = 256 * 1024;
/** A longer line is cut (the runtimes cut theirs shorter already). */
const MAX_LINE_CHARS = 64 * 1024;

class NotWaitingHere extends Error {}

export class StreamDialer {
  readonly #deps: StreamDialerDeps;
  readonly #open = new Set<Duplex>();

  constructor(deps: StreamDialerDeps) {
    this.#deps = deps;
  }

  /** Streams connected now. */
  get connected(): number {
    return this.#open.size;
  }

  /** Opens the operation's stream; resolves with its acknowledgement once connected or failed. */
  async open(op: StreamOperation): Promise<AppliedResult> {
    const { runtime } = this.#deps;
    const request = op.request;
    let shell: ShellSession | null = null;
    if (request?.what === 'tunnel') return this.#openTunnel(op);
    if (request?.what === 'shell') {
      if (!runtime.shell) return { ok: false, error: 'this agent cannot open shells' };
      try {
        shell = await runtime.shell(op.instanceId, request.shell);
      } catch (err) {
        return { ok: false, error: (err as Error).message };
      }
    } else if (request?.what === 'output') {
      if (!runtime.output) return { ok: false, error: 'this agent cannot read output' };
    } else {
      return {
        ok: false,
        error: `unknown stream "${String((request as { what?: unknown } | undefined)?.what)}": update gantry agent on this host`,
      };
    }
    let socket: Duplex;
    let head: Buffer;
    try {
      ({ socket, head } = await this.#dial(op));
    } catch (err) {
      shell?.close();
      return { ok: false, error: (err as Error).message };
    }
    this.#open.add(socket);
    socket.once('close', () => this.#open.delete(socket));
    socket.on('error', () => undefined);
    if (shell) this.#carryShell(socket, head, shell);
    else
      void this.#carryOutput(socket, op.instanceId, request as Extract<StreamOperation['request'], { what: 'output' }>);
    return { ok: true };
  }

  close(): void {
    for (const s of this.#open) s.destroy();
  }

  /** The host's tunnel, which the control plane that asked keeps (agent-tunnels.ts carries it). */
  async #openTunnel(op: StreamOperation): Promise<AppliedResult> {
    const tunnels = this.#deps.tunnels;
    const limits = agentTunnelLimits((op.request as { limits?: Record<string, unknown> } | undefined)?.limits);
    const refused = tunnels ? tunnels.refusal(limits) : 'this agent opens no tunnels';
    if (refused !== null) return { ok: false, error: refused };
    try {
      const { socket, head } = await this.#dial(op, TUNNEL_PROTOCOL);
      socket.on('error', () => undefined);
      tunnels!.carry(socket, head, limits);
      return { ok: true };
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
  }

  async #dial(op: StreamOperation, protocol = STREAM_PROTOCOL): Promise<{ socket: Duplex; head: Buffer }> {
    const reasons: string[] = [];
    for (const server of this.#deps.servers()) {
      try {
        return await this.#dialOne(server, op, protocol);
      } catch (err) {
        // Not waiting there (another replica waits), or unreachable: the next server may take it.
        reasons.push(`${server}: ${(err as Error).message}`);
      }
    }
    throw new Error(`no control plane took the stream (${reasons.join('; ')})`);
  }

  #dialOne(server: string, op: StreamOperation, protocol: string): Promise<{ socket: Duplex; head: Buffer }> {
    const url = new URL(`${server.replace(/\/+$/, '')}${AGENT_API_PREFIX}/streams/${encodeURIComponent(op.session)}`);
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req: ClientRequest = request(url, {
        method: 'POST',
        headers: {
          connection: 'Upgrade',
          upgrade: protocol,
          authorization: `Bearer ${this.#deps.credential}`,
          [STREAM_SECRET_HEADER]: op.secret,
          'content-length': '0',
        },
        timeout: this.#deps.connectTimeoutMs ?? 10_000,
      });
      req.once('upgrade', (_res: IncomingMessage, socket: Duplex, head: Buffer) => resolve({ socket, head }));
      req.once('response', (res: IncomingMessage) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body = (body + c).slice(0, 2000)));
        res.on('end', () => {
          const detail = (() => {
            try {
              const given = (JSON.parse(body) as { detail?: unknown }).detail;
              return typeof given === 'string' ? given : '';
            } catch {
              return body.trim().split('\n')[0] ?? '';
            }
          })();
          const message = `answered ${res.statusCode}${detail ? `: ${detail}` : ''}`;
          reject(res.statusCode === 404 ? new NotWaitingHere(message) : new Error(message));
        });
      });
      req.once('timeout', () => req.destroy(new Error('did not answer in time')));
      req.once('error', (err: NodeJS.ErrnoException) =>
        reject(new Error(err.code ? describeConnectFailure(err.code) : err.message)),
      );
      req.end();
    });
  }

  async #carryOutput(
    socket: Duplex,
    instanceId: string,
    request: Extract<StreamOperation['request'], { what: 'output' }>,
  ): Promise<void> {
    const reading = new AbortController();
    socket.once('close', () => reading.abort());
    // The control plane sends nothing on an output stream; reading keeps the socket's end seen.
    socket.resume();
    const query = {
      follow: request.follow === true,
      signal: reading.signal,
      ...(isCount(request.sinceMs) ? { sinceMs: request.sinceMs } : {}),
      ...(isCount(request.tail) ? { tail: request.tail } : {}),
    };
    let batch: OutputLine[] = [];
    let batchChars = 0;
    const flush = async () => {
      if (batch.length === 0 || socket.destroyed) return;
      const frame = encodeFrame(FRAME.lines, batch);
      batch = [];
      batchChars = 0;
      if (!socket.write(frame))
        await new Promise<void>((resolve) => {
          socket.once('drain', resolve);
          socket.once('close', resolve);
        });
    };
    let timer: NodeJS.Timeout | null = null;
    try {
      for await (const line of this.#deps.runtime.output!(instanceId, query)) {
        const text = line.line.length > MAX_LINE_CHARS ? line.line.slice(0, MAX_LINE_CHARS) : line.line;
        batch.push(text === line.line ? line : { ts: line.ts, line: text });
        batchChars += text.length;
        // JSON takes at most 6 bytes a character (`\uXXXX`): the frame stays under the limit whatever is printed
        if (batch.length >= LINES_PER_FRAME || batchChars * 6 >= BYTES_PER_FRAME) await flush();
        // Lines that come together go together; a lone line goes within a few milliseconds.
        else
          timer ??= setTimeout(() => {
            timer = null;
            void flush();
          }, 5);
      }
      if (timer) clearTimeout(timer);
      await flush();
      socket.end();
    } catch (err) {
      if (timer) clearTimeout(timer);
      if (!socket.destroyed) socket.end(encodeFrame(FRAME.error, { message: (err as Error).message }));
    }
  }

  #carryShell(socket: Duplex, head: Buffer, shell: ShellSession): void {
    const { stream } = shell;
    stream.on('data', (chunk: Buffer) => {
      if (!socket.write(encodeFrame(FRAME.data, chunk))) {
        stream.pause();
        socket.once('drain', () => stream.resume());
      }
    });
    stream.on('error', () => undefined);
    void shell.exited.then((code) => {
      if (!socket.destroyed) socket.end(encodeFrame(FRAME.exit, { code }));
    });
    void (async () => {
      try {
        for await (const frame of readFrames(socket, head)) {
          if (frame.type === FRAME.data) {
            if (!stream.write(frame.payload)) await new Promise((resolve) => stream.once('drain', resolve));
          } else if (frame.type === FRAME.resize) {
            const size = frameJson(frame) as { cols?: unknown; rows?: unknown } | null;
            if (isCount(size?.cols) && isCount(size.rows)) shell.resize(size.cols, size.rows);
          }
        }
      } catch {
        // a broken connection ends the shell below
      } finally {
        shell.close();
        socket.destroy();
      }
    })();
  }
}

const isCount = (v: unknown): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 1_000_000_000_000_000;
