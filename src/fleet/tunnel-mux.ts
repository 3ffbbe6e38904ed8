/**
 * Streams multiplexed over one agent's tunnel connection (docs/fleet.md "The tunnel"), both sides:
 * the control plane opens streams (`open()`: a connection to a port of an instance on the host),
 * the agent accepts them (`accept`), dials the port and answers `opened` or `refused`. Every stream
 * has credit windows of its own (tunnel-stream.ts), so a slow reader holds up only its own stream.
 *
 * Bounded: streams per tunnel (`maxStreams`; an open past it is refused), a frame's size
 * (tunnel-frames.ts), the bytes buffered per stream (its window). Whatever the other side sends is
 * untrusted: a malformed frame, data past a stream's credit, a frame naming a stream that was never
 * opened, or an agent trying to open a stream ends the tunnel and every stream on it, never the
 * process. Frames for a stream that ended a moment ago (in flight when it was reset) are dropped.
 */
import type { Duplex } from 'node:stream';
import { DialTimeout } from '../runtime/dial.js';
import {
  INITIAL_TUNNEL_WINDOW,
  MAX_STREAM_ID,
  TUNNEL_FLOW_VERSION,
  TUNNEL_FRAME,
  TunnelDecoder,
  TunnelProtocolError,
  creditOf,
  dataFrameHeader,
  encodeTunnelFrame,
  tunnelJson,
  type TunnelFrame,
  type TunnelProtocolReason,
} from './tunnel-frames.js';
import { TunnelStream, type StreamCarrier, type StreamWindows } from './tunnel-stream.js';

/** What a stream connects to: a port of an instance on the tunnel's host. */
export interface TunnelTarget {
  instanceId: string;
  port: number;
}

export interface TunnelMuxOptions {
  /** `control`: opens streams; `agent`: accepts them, with `accept`. */
  side: 'control' | 'agent';
  /** Agent side: a stream was asked for; answer it with `opened()` or `refuse()`. */
  accept?(stream: TunnelStream, target: TunnelTarget): void;
  /** Streams open at once at most. @default 8192 */
  maxStreams?: number;
  /**
   * A stream's initial credit, each way, in bytes: both sides assume it (it is not negotiated), so
   * only tests set it. @default 262144
   */
  window?: number;
  /** The most a stream's window grows to on this side (config `fleet.tunnels.maxWindowBytes`). @default 4194304 */
  maxWindow?: number;
  /** The tunnel ended (`err`: why, null when closed on purpose). */
  onClose?(err: Error | null): void;
  /** The other side broke the protocol (called before `onClose`), and how: a fixed set of reasons. */
  onProtocolError?(reason: TunnelProtocolReason): void;
}

/** @default 8192 */
const DEFAULT_MAX_TUNNEL_STREAMS = 8192;
/** @default 4194304 (4 MiB) */
const DEFAULT_MAX_WINDOW = 4 * 1024 * 1024;
/** An instance id longer than this is no instance's. */
const MAX_INSTANCE_ID = 128;
/** A refusal's reason is cut to this many characters (it reaches clients in a problem's detail). */
const MAX_REASON = 500;

interface Opening {
  stream: TunnelStream;
  resolve(stream: TunnelStream): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class TunnelMux implements StreamCarrier {
  readonly #socket: Duplex;
  readonly #options: TunnelMuxOptions;
  readonly #decoder = new TunnelDecoder();
  readonly #streams = new Map<number, TunnelStream>();
  readonly #opening = new Map<number, Opening>();
  /** streams waiting for the connection to drain */
  readonly #waiting = new Set<TunnelStream>();
  readonly #windows: StreamWindows;
  readonly #maxStreams: number;
  /** control: the next id to open; agent: the highest id opened so far */
  #nextId = 1;
  #highest = 0;
  #blocked = false;
  #closed = false;

  constructor(socket: Duplex, head: Buffer, options: TunnelMuxOptions) {
    this.#socket = socket;
    this.#options = options;
    const initial = options.window ?? INITIAL_TUNNEL_WINDOW;
    this.#windows = { initial, max: Math.max(initial, options.maxWindow ?? DEFAULT_MAX_WINDOW) };
    this.#maxStreams = options.maxStreams ?? DEFAULT_MAX_TUNNEL_STREAMS;
    socket.on('data', (chunk: Buffer) => this.#receive(chunk));
    socket.on('drain', () => {
      this.#blocked = false;
      const waiting = [...this.#waiting];
      this.#waiting.clear();
      for (const s of waiting) s.flush();
    });
    socket.on('error', (err: Error) => this.close(new Error(`the tunnel's connection failed: ${err.message}`)));
    socket.on('end', () => this.close(new Error('the tunnel was closed by the other side')));
    socket.on('close', () => this.close(new Error('the tunnel was closed')));
    if (head.length > 0) queueMicrotask(() => this.#receive(head));
  }

  /** Streams open (or being opened) now. */
  get streams(): number {
    return this.#streams.size;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Control side: a stream to `target`, once the agent opened it; rejects with the agent's reason,
   * or with a {@link DialTimeout} when it did not answer within `timeoutMs`.
   */
  open(target: TunnelTarget, timeoutMs: number): Promise<TunnelStream> {
    if (this.#options.side !== 'control') return Promise.reject(new Error('the agent side opens no streams'));
    if (this.#closed) return Promise.reject(new Error('the tunnel is closed'));
    if (this.#streams.size >= this.#maxStreams)
      return Promise.reject(new Error(`the tunnel already carries ${this.#maxStreams} streams`));
    if (this.#nextId > MAX_STREAM_ID) return Promise.reject(new Error('the tunnel ran out of stream ids'));
    const stream = new TunnelStream(this.#nextId++, this, this.#windows);
    this.#streams.set(stream.id, stream);
    return new Promise<TunnelStream>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#opening.delete(stream.id);
        const err = new DialTimeout(
          `port ${target.port} of instance "${target.instanceId}" did not accept a connection within ${timeoutMs} ms`,
        );
        stream.destroy();
        reject(err);
      }, timeoutMs);
      timer.unref();
      this.#opening.set(stream.id, { stream, resolve, reject, timer });
      // `flow`: this side grows windows (an older agent ignores it, and answers a bare `opened`)
      this.send(encodeTunnelFrame(TUNNEL_FRAME.open, stream.id, { ...target, flow: TUNNEL_FLOW_VERSION }));
    });
  }

  /** Agent side: the stream's connection is open (with `flow` when the open announced it). */
  opened(stream: TunnelStream): void {
    this.send(
      encodeTunnelFrame(TUNNEL_FRAME.opened, stream.id, stream.peerFlows ? { flow: TUNNEL_FLOW_VERSION } : undefined),
    );
  }

  /** Agent side: the stream cannot be opened, and why (`timeout`: the port did not answer in time). */
  refuse(stream: TunnelStream, reason: string, timeout = false): void {
    this.send(
      encodeTunnelFrame(TUNNEL_FRAME.refused, stream.id, {
        reason: reason.slice(0, MAX_REASON),
        ...(timeout ? { timeout } : {}),
      }),
    );
    stream.gone(null);
  }

  /** Ends the tunnel and every stream on it (`err`: why, for the streams' readers). */
  close(err: Error | null = null): void {
    if (this.#closed) return;
    this.#closed = true;
    const why = err ?? new Error('the tunnel was closed');
    const opening = [...this.#opening.values()];
    this.#opening.clear();
    for (const o of opening) {
      clearTimeout(o.timer);
      o.reject(why);
      // not handed out yet: nobody listens for its error
      o.stream.gone(null);
    }
    for (const s of [...this.#streams.values()]) s.gone(why);
    this.#streams.clear();
    this.#waiting.clear();
    this.#socket.destroy();
    this.#options.onClose?.(err);
  }

  // --- StreamCarrier --------------------------------------------------------------------------

  send(frame: Buffer): boolean {
    if (this.#closed) return false;
    if (!this.#socket.write(frame)) this.#blocked = true;
    return !this.#blocked;
  }

  sendData(stream: number, payload: Buffer): boolean {
    if (this.#closed) return false;
    // header and payload go out as one writev, the payload not copied
    this.#socket.cork();
    this.#socket.write(dataFrameHeader(stream, payload.length));
    if (!this.#socket.write(payload)) this.#blocked = true;
    this.#socket.uncork();
    return !this.#blocked;
  }

  writable(): boolean {
    return !this.#blocked && !this.#closed;
  }

  whenWritable(stream: TunnelStream): void {
    if (!this.#closed) this.#waiting.add(stream);
  }

  forget(stream: TunnelStream): void {
    if (this.#streams.get(stream.id) === stream) this.#streams.delete(stream.id);
    this.#waiting.delete(stream);
    const opening = this.#opening.get(stream.id);
    if (opening) {
      clearTimeout(opening.timer);
      this.#opening.delete(stream.id);
      opening.reject(new Error('the stream was closed before it opened'));
    }
  }

  // --- frames from the other side -------------------------------------------------------------

  #receive(chunk: Buffer): void {
    if (this.#closed) return;
    try {
      for (const frame of this.#decoder.push(chunk)) {
        this.#frame(frame);
        if (this.#closed) return;
      }
    } catch (err) {
      if (!(err instanceof TunnelProtocolError)) throw err;
      this.#options.onProtocolError?.(err.reason);
      this.close(new Error(`the tunnel broke its protocol: ${err.message}`));
    }
  }

  #frame(frame: TunnelFrame): void {
    if (frame.type === TUNNEL_FRAME.open) return this.#accept(frame);
    const stream = this.#streams.get(frame.stream);
    if (!stream) {
      // Ended here a moment ago: what was in flight is dropped. Never opened: a broken peer.
      const known = this.#options.side === 'control' ? frame.stream < this.#nextId : frame.stream <= this.#highest;
      if (!known)
        throw new TunnelProtocolError(`a frame names stream ${frame.stream}, which was never opened`, 'stream');
      return;
    }
    switch (frame.type) {
      case TUNNEL_FRAME.opened:
      case TUNNEL_FRAME.refused:
        return this.#answered(stream, frame);
      case TUNNEL_FRAME.data:
        return stream.received(frame.payload);
      case TUNNEL_FRAME.window:
        return stream.granted(creditOf(frame));
      case TUNNEL_FRAME.close:
        return stream.remoteClose();
      case TUNNEL_FRAME.blocked:
        return stream.peerBlocked();
      case TUNNEL_FRAME.reset: {
        const reason = frame.payload.length > 0 ? tunnelJson(frame).reason : undefined;
        this.#streams.delete(stream.id);
        const err = new Error(
          typeof reason === 'string' ? `the stream was reset: ${clean(reason)}` : 'the stream was reset',
        );
        const opening = this.#opening.get(stream.id);
        if (opening) {
          clearTimeout(opening.timer);
          this.#opening.delete(stream.id);
          opening.reject(err);
          return stream.gone(null);
        }
        return stream.gone(err);
      }
    }
  }

  #answered(stream: TunnelStream, frame: TunnelFrame): void {
    const opening = this.#opening.get(stream.id);
    if (this.#options.side !== 'control' || !opening)
      throw new TunnelProtocolError(`stream ${stream.id} was answered when no open waited`, 'direction');
    this.#opening.delete(stream.id);
    clearTimeout(opening.timer);
    if (frame.type === TUNNEL_FRAME.opened) {
      // an agent that grows windows says so; an older one answers no payload
      if (frame.payload.length > 0 && announcesFlow(tunnelJson(frame))) stream.flows();
      return opening.resolve(stream);
    }
    const body = tunnelJson(frame);
    const reason = typeof body.reason === 'string' ? clean(body.reason) : 'the agent refused the connection';
    this.#streams.delete(stream.id);
    const err = body.timeout === true ? new DialTimeout(reason) : new Error(reason);
    stream.gone(null);
    opening.reject(err);
  }

  #accept(frame: TunnelFrame): void {
    if (this.#options.side !== 'agent' || !this.#options.accept)
      throw new TunnelProtocolError('the agent may not open streams', 'direction');
    if (frame.stream <= this.#highest)
      throw new TunnelProtocolError(
        `stream ${frame.stream} was opened out of order (after ${this.#highest})`,
        'stream',
      );
    this.#highest = frame.stream;
    const body = tunnelJson(frame);
    const { instanceId, port } = body;
    if (typeof instanceId !== 'string' || instanceId.length === 0 || instanceId.length > MAX_INSTANCE_ID)
      throw new TunnelProtocolError('an open names no instance');
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535)
      throw new TunnelProtocolError('an open names no port');
    const stream = new TunnelStream(frame.stream, this, this.#windows);
    if (announcesFlow(body)) stream.flows();
    if (this.#streams.size >= this.#maxStreams) {
      this.refuse(stream, `the host's tunnel already carries ${this.#maxStreams} streams`);
      return;
    }
    this.#streams.set(stream.id, stream);
    this.#options.accept(stream, { instanceId, port });
  }
}

/** Whether an open's or opened's body announces growing windows (flow version 2 or later). */
const announcesFlow = (body: Record<string, unknown>): boolean =>
  typeof body.flow === 'number' && body.flow >= TUNNEL_FLOW_VERSION;

/** A reason from the other side, as one line of plain text. */
const clean = (text: string): string =>
  [...text.slice(0, MAX_REASON)]
    .map((c) => (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f ? ' ' : c))
    .join('')
    .trim();
