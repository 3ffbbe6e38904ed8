/**
 * What an agent's tunnel carries (docs/fleet.md "The tunnel"; tunnel-mux.ts multiplexes streams over
 * it): frames of `[type (1 byte), stream id (4 bytes), length (4 bytes), payload]`, big-endian.
 * Both sides decode what the other sent as untrusted input: a frame of an unknown type, a length
 * over the limit, a stream id of 0 or a payload its type does not allow ends the tunnel (a
 * {@link TunnelProtocolError}), never the process.
 */

export const TUNNEL_FRAME = {
  /** control plane → agent: `{ instanceId, port, flow? }`, open a connection to that port of that instance */
  open: 1,
  /** agent → control plane: the stream's connection is open (no payload, or `{ flow }` answering an open's) */
  opened: 2,
  /** agent → control plane: `{ reason, timeout? }`, the connection could not be opened */
  refused: 3,
  /** the stream's bytes (at most the credit the other side granted) */
  data: 4,
  /** 4 bytes: the sender may send this many more bytes of the stream */
  window: 5,
  /** the sender will send no more data on the stream (its half of it is closed) */
  close: 6,
  /** `{ reason }` or nothing: the stream is gone, both ways */
  reset: 7,
  /**
   * the sender has data waiting and no credit left (no payload): its round trip, not its reader,
   * holds the stream, so the receiver may grow the window (tunnel-stream.ts). Sent only to a peer
   * that announced it grows windows (`flow` in open / opened).
   */
  blocked: 8,
} as const;

/**
 * The flow control this side speaks, announced as `flow` in an open (control plane) and its
 * opened (agent): 2 = windows grow and `blocked` frames are understood. A peer that announces
 * nothing keeps the 256 KiB window of the first version, and is sent no `blocked` frame.
 */
export const TUNNEL_FLOW_VERSION = 2;
/** A stream's window at its start, both ways (both sides assume it: it is not negotiated). */
export const INITIAL_TUNNEL_WINDOW = 256 * 1024;
/** The most credit a side accepts on one stream: a grant past it breaks the protocol. */
export const MAX_TUNNEL_WINDOW = 16 * 1024 * 1024;

export type TunnelFrameType = (typeof TUNNEL_FRAME)[keyof typeof TUNNEL_FRAME];

export interface TunnelFrame {
  type: TunnelFrameType;
  stream: number;
  payload: Buffer;
}

/** A frame's header: type, stream id, length. */
const TUNNEL_HEADER_BYTES = 9;
/** The largest payload either side accepts (a data frame's bytes, a JSON body). */
export const MAX_TUNNEL_PAYLOAD = 64 * 1024;
/** The largest JSON payload (open, refused, reset). */
const MAX_JSON_PAYLOAD = 4 * 1024;
/** Stream ids are 1 … 2^31 - 1. */
export const MAX_STREAM_ID = 0x7fff_ffff;

/**
 * Why a tunnel broke its protocol, as the metric `gantry_fleet_tunnel_protocol_errors_total`
 * labels it (a fixed set: never text the peer sent).
 */
export type TunnelProtocolReason =
  /** bytes that are no frame: an unknown type, stream 0, a length its type may not carry, no JSON */
  | 'malformed'
  /** data past the credit granted, or a grant past the largest window */
  | 'credit'
  /** a frame naming a stream never opened, or a stream's frames out of order (data after its close, …) */
  | 'stream'
  /** the agent opened a stream, or answered an open that did not wait */
  | 'direction';

export const TUNNEL_PROTOCOL_REASONS: readonly TunnelProtocolReason[] = ['malformed', 'credit', 'stream', 'direction'];

/** The peer broke the protocol: the tunnel ends (its streams with it). */
export class TunnelProtocolError extends Error {
  readonly reason: TunnelProtocolReason;

  constructor(message: string, reason: TunnelProtocolReason = 'malformed') {
    super(message);
    this.reason = reason;
  }
}

const TYPES = new Set<number>(Object.values(TUNNEL_FRAME));

export function encodeTunnelFrame(type: TunnelFrameType, stream: number, payload?: Buffer | object): Buffer {
  const body =
    payload === undefined ? Buffer.alloc(0) : Buffer.isBuffer(payload) ? payload : Buffer.from(JSON.stringify(payload));
  const frame = Buffer.allocUnsafe(TUNNEL_HEADER_BYTES + body.length);
  writeHeader(frame, type, stream, body.length);
  body.copy(frame, TUNNEL_HEADER_BYTES);
  return frame;
}

/**
 * A data frame's header alone, for `payload` to be written right after it (corked together into
 * one writev, tunnel-mux.ts): the payload is not copied. It is the caller's written chunk (or a
 * part of it), which Node's streams leave to the writer once written, as a socket's write does.
 */
export function dataFrameHeader(stream: number, length: number): Buffer {
  const header = Buffer.allocUnsafe(TUNNEL_HEADER_BYTES);
  writeHeader(header, TUNNEL_FRAME.data, stream, length);
  return header;
}

function writeHeader(into: Buffer, type: TunnelFrameType, stream: number, length: number): void {
  if (length > MAX_TUNNEL_PAYLOAD)
    throw new RangeError(`a tunnel frame of ${length} bytes is over the ${MAX_TUNNEL_PAYLOAD}-byte limit`);
  into.writeUInt8(type, 0);
  into.writeUInt32BE(stream, 1);
  into.writeUInt32BE(length, 5);
}

/** A window frame granting `credit` more bytes of `stream`. */
export function windowFrame(stream: number, credit: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(credit, 0);
  return encodeTunnelFrame(TUNNEL_FRAME.window, stream, payload);
}

/** The credit a window frame grants. */
export function creditOf(frame: TunnelFrame): number {
  return frame.payload.readUInt32BE(0);
}

/** A JSON frame's object; a payload that is not a JSON object breaks the protocol. */
export function tunnelJson(frame: TunnelFrame): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(frame.payload.toString('utf8'));
  } catch {
    throw new TunnelProtocolError(`a frame of type ${frame.type} carries no JSON`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new TunnelProtocolError(`a frame of type ${frame.type} carries no JSON object`);
  return value as Record<string, unknown>;
}

/**
 * Splits what arrives into frames, whatever the chunks; throws {@link TunnelProtocolError} on a
 * malformed one. The chunks are kept as they came until a frame is whole, and its payload is then
 * copied out of them once: a frame split across socket reads (most are: a read is 64 KiB, a full
 * data frame 9 bytes more) costs no joining copy, and a payload kept by a slow reader never holds
 * the chunk it came in.
 */
export class TunnelDecoder {
  readonly #chunks: Buffer[] = [];
  #length = 0;

  /** The whole frames `chunk` completes, in order. */
  push(chunk: Buffer): TunnelFrame[] {
    if (chunk.length > 0) {
      this.#chunks.push(chunk);
      this.#length += chunk.length;
    }
    const frames: TunnelFrame[] = [];
    while (this.#length >= TUNNEL_HEADER_BYTES) {
      const head = this.#peekHeader();
      const type = head[0]!;
      const stream = head.readUInt32BE(1);
      const length = head.readUInt32BE(5);
      if (!TYPES.has(type)) throw new TunnelProtocolError(`a frame of unknown type ${type}`);
      if (stream === 0 || stream > MAX_STREAM_ID) throw new TunnelProtocolError(`a frame names stream ${stream}`);
      checkLength(type as TunnelFrameType, length);
      if (this.#length < TUNNEL_HEADER_BYTES + length) break;
      this.#take(TUNNEL_HEADER_BYTES, null);
      const payload = length === 0 ? EMPTY : this.#take(length, Buffer.allocUnsafe(length));
      frames.push({ type: type as TunnelFrameType, stream, payload });
    }
    return frames;
  }

  /** Bytes of a frame not yet whole. */
  get buffered(): number {
    return this.#length;
  }

  /** The next header's bytes (joined only when a read ended inside one). */
  #peekHeader(): Buffer {
    const first = this.#chunks[0]!;
    if (first.length >= TUNNEL_HEADER_BYTES) return first;
    const head = Buffer.allocUnsafe(TUNNEL_HEADER_BYTES);
    let at = 0;
    for (const c of this.#chunks) {
      at += c.copy(head, at, 0, Math.min(c.length, TUNNEL_HEADER_BYTES - at));
      if (at === TUNNEL_HEADER_BYTES) break;
    }
    return head;
  }

  /** Takes `n` bytes off the front, copied into `into` when given. */
  #take(n: number, into: Buffer | null): Buffer {
    let at = 0;
    while (at < n) {
      const c = this.#chunks[0]!;
      const k = Math.min(c.length, n - at);
      if (into) c.copy(into, at, 0, k);
      if (k === c.length) this.#chunks.shift();
      else this.#chunks[0] = c.subarray(k);
      at += k;
    }
    this.#length -= n;
    return into ?? EMPTY;
  }
}

const EMPTY = Buffer.alloc(0);

function checkLength(type: TunnelFrameType, length: number): void {
  const fits = (() => {
    switch (type) {
      case TUNNEL_FRAME.data:
        return length > 0 && length <= MAX_TUNNEL_PAYLOAD;
      case TUNNEL_FRAME.window:
        return length === 4;
      case TUNNEL_FRAME.close:
      case TUNNEL_FRAME.blocked:
        return length === 0;
      default:
        return length <= MAX_JSON_PAYLOAD;
    }
  })();
  if (!fits) throw new TunnelProtocolError(`a frame of type ${type} announces ${length} bytes, which it may not carry`);
}
