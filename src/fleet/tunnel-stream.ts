/**
 * One stream of an agent's tunnel (tunnel-mux.ts), as a Duplex a caller reads and writes like a
 * TCP connection (the pod proxy's pools take it as their socket). Flow control is per stream, by
 * credit: each side may send a stream's data only up to the credit the other granted (the initial
 * window, then what the reader consumed), so a reader that stops holds at most a window of its own
 * stream and never the tunnel, which carries the other streams on. Data past the granted credit,
 * or a grant past the largest window, breaks the protocol (the tunnel ends).
 *
 * A window grows (when both sides speak flow version 2): a sender with data waiting and no credit
 * says so (a `blocked` frame). When its reader has kept up (it has taken all but less than a
 * quarter window) the round trip, not the reader, is what holds the stream: after two such in a
 * row the receiver doubles the window, up to its `maxWindow`, and grants the difference at once.
 * Over a link of round trip RTT one stream then carries up to `maxWindow` ÷ RTT rather than
 * 256 KiB ÷ RTT, while a reader that stops still holds at most its current window. Nothing is
 * allocated for a window: it is a count of bytes, and an idle stream holds none.
 */
import { Duplex } from 'node:stream';
import {
  MAX_TUNNEL_WINDOW,
  TUNNEL_FRAME,
  TunnelProtocolError,
  encodeTunnelFrame,
  windowFrame,
} from './tunnel-frames.js';

/** What a stream needs of its tunnel. */
export interface StreamCarrier {
  /** Sends a frame; false: the tunnel's connection is full (wait for `whenWritable`). */
  send(frame: Buffer): boolean;
  /** Sends a data frame of `payload` (not copied: written after its header, as one writev). */
  sendData(stream: number, payload: Buffer): boolean;
  /** Whether data may be sent now. */
  writable(): boolean;
  /** Calls the stream's `flush()` once the tunnel's connection drained. */
  whenWritable(stream: TunnelStream): void;
  /** The stream is over: its id is forgotten. */
  forget(stream: TunnelStream): void;
}

/** A stream's windows: where it starts (both sides assume it), and the most it grows to here. */
export interface StreamWindows {
  initial: number;
  max: number;
}

/** Bytes of data in one frame at most (a stream's bytes go in frames of this size, interleaved with the others'). */
const MAX_DATA_FRAME = 32 * 1024;
/** `blocked` frames in a row, each with the reader keeping up, before the window doubles. */
const BLOCKED_TO_GROW = 2;

export class TunnelStream extends Duplex {
  readonly id: number;
  readonly #carrier: StreamCarrier;
  /** the window this side grants now (it grows), and the most it may grow to */
  #window: number;
  readonly #initialWindow: number;
  readonly #maxWindow: number;
  /** the other side speaks flow version 2: it sends `blocked` frames and takes grants past the first window */
  #peerFlows = false;
  /** this side told the other it is out of credit (until credit comes) */
  #blockedSent = false;
  /** `blocked` frames in a row with the reader keeping up */
  #keptUp = 0;
  /** bytes this side may still send */
  #credit: number;
  /** bytes received, and of those the bytes granted back (consumed by the reader) */
  #received = 0;
  #granted = 0;
  /** of those, the bytes handed to the reader (granted back once they add up to a quarter window) */
  #delivered = 0;
  /** received, not yet handed to the reader */
  readonly #queue: Buffer[] = [];
  /** the reader asked for more (`_read`) and has not been handed enough since */
  #wanted = false;
  #pending: { chunk: Buffer; offset: number; callback: (error?: Error | null) => void } | null = null;
  #finishing: (() => void) | null = null;
  #sentClose = false;
  #remoteClosed = false;
  /** the other side reset it, or the tunnel ended: nothing more is sent */
  #silenced = false;
  /** the idle timeout the HTTP client sets on its sockets (0: none) */
  timeout = 0;
  #timer: NodeJS.Timeout | null = null;
  #timerMs = 0;

  constructor(id: number, carrier: StreamCarrier, windows: StreamWindows) {
    super({ allowHalfOpen: true });
    this.id = id;
    this.#carrier = carrier;
    this.#window = windows.initial;
    this.#initialWindow = windows.initial;
    this.#maxWindow = windows.max;
    this.#credit = windows.initial;
  }

  /** Bytes received and not yet read by this stream's reader. */
  get unread(): number {
    return this.#received - this.#delivered;
  }

  /** The window this side grants now (bytes of this stream it may hold unread). */
  get window(): number {
    return this.#window;
  }

  /** Whether the other side speaks flow version 2 (growing windows). */
  get peerFlows(): boolean {
    return this.#peerFlows;
  }

  /** The other side announced flow version 2: windows may grow both ways. */
  flows(): void {
    this.#peerFlows = true;
  }

  // --- frames from the other side (tunnel-mux.ts) ---------------------------------------------

  /** A data frame: throws when it is past the credit this side granted. */
  received(payload: Buffer): void {
    if (this.#remoteClosed) throw new TunnelProtocolError(`data on stream ${this.id} after its close`, 'stream');
    if (this.#received - this.#granted + payload.length > this.#window)
      throw new TunnelProtocolError(`stream ${this.id} was sent more than the credit it was granted`, 'credit');
    this.#received += payload.length;
    this.#touch();
    if (this.destroyed) return;
    this.#queue.push(payload);
    if (this.#wanted) this.#deliver();
  }

  /** A window frame: throws when it grants more than the largest window this side accepts. */
  granted(credit: number): void {
    const most = this.#peerFlows ? MAX_TUNNEL_WINDOW : this.#initialWindow;
    if (credit === 0 || this.#credit + credit > most)
      throw new TunnelProtocolError(`stream ${this.id} was granted credit past its window`, 'credit');
    this.#credit += credit;
    this.#blockedSent = false;
    this.flush();
  }

  /**
   * A `blocked` frame: the sender waits for credit. When the reader kept up (less than a quarter
   * window of what came waits for it, here or in its buffer), twice in a row, the window doubles
   * (up to `maxWindow`) and the difference is granted now.
   */
  peerBlocked(): void {
    if (this.#remoteClosed) throw new TunnelProtocolError(`stream ${this.id} was blocked after its close`, 'stream');
    if (!this.#peerFlows || this.#silenced || this.#window >= this.#maxWindow) return;
    if (this.unread + this.readableLength >= this.#window / 4) {
      this.#keptUp = 0;
      return;
    }
    if (++this.#keptUp < BLOCKED_TO_GROW) return;
    this.#keptUp = 0;
    const more = Math.min(this.#window, this.#maxWindow - this.#window);
    this.#window += more;
    this.#carrier.send(windowFrame(this.id, more));
  }

  /** The other side sends no more. */
  remoteClose(): void {
    if (this.#remoteClosed) throw new TunnelProtocolError(`stream ${this.id} was closed twice`, 'stream');
    this.#remoteClosed = true;
    if (this.#queue.length === 0) this.push(null);
  }

  /** The other side reset it, or the tunnel ended: it ends with `err` (null: quietly), sending nothing. */
  gone(err: Error | null): void {
    this.#silenced = true;
    this.destroy(err ?? undefined);
  }

  /** Sends what waits, as far as the credit and the tunnel allow. */
  flush(): void {
    const p = this.#pending;
    if (p && !this.#silenced) {
      while (p.offset < p.chunk.length && this.#credit > 0) {
        if (!this.#carrier.writable()) return this.#carrier.whenWritable(this);
        const n = Math.min(this.#credit, MAX_DATA_FRAME, p.chunk.length - p.offset);
        this.#carrier.sendData(this.id, p.chunk.subarray(p.offset, p.offset + n));
        p.offset += n;
        this.#credit -= n;
      }
      if (p.offset < p.chunk.length) {
        // out of credit with bytes waiting: a peer that grows windows is told, once per wait
        if (this.#peerFlows && !this.#blockedSent) {
          this.#blockedSent = true;
          this.#carrier.send(encodeTunnelFrame(TUNNEL_FRAME.blocked, this.id));
        }
        return;
      }
      this.#pending = null;
      p.callback();
    }
    if (!this.#pending && this.#finishing) {
      const finish = this.#finishing;
      this.#finishing = null;
      finish();
    }
  }

  // --- the Duplex -----------------------------------------------------------------------------

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.#silenced) return callback(new Error('the stream is gone'));
    this.#touch();
    this.#pending = { chunk, offset: 0, callback };
    this.flush();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#finishing = () => {
      if (!this.#silenced) {
        this.#sentClose = true;
        this.#carrier.send(encodeTunnelFrame(TUNNEL_FRAME.close, this.id));
      }
      callback();
    };
    this.flush();
  }

  override _read(): void {
    this.#wanted = true;
    this.#deliver();
  }

  /**
   * Hands the reader what was received, while it wants more; what it took goes back to the sender
   * as credit. What waits here is at most the window; the reader's own buffer, its high-water mark.
   */
  #deliver(): void {
    let moved = 0;
    while (this.#wanted && this.#queue.length > 0) {
      const chunk = this.#queue.shift()!;
      moved += chunk.length;
      if (!this.push(chunk)) this.#wanted = false;
    }
    if (this.#queue.length === 0 && this.#remoteClosed) this.push(null);
    this.#delivered += moved;
    // Granted in quarters of the window, not a frame per chunk: a sender out of credit has a whole
    // window outstanding, so a quarter of it is always reached once its reader reads.
    const grant = this.#delivered - this.#granted;
    if (grant < this.#window / 4 || this.#silenced || this.#remoteClosed) return;
    this.#granted = this.#delivered;
    this.#carrier.send(windowFrame(this.id, grant));
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    if (this.#timer) clearTimeout(this.#timer);
    if (!this.#silenced && !(this.#sentClose && this.#remoteClosed)) {
      this.#silenced = true;
      this.#carrier.send(encodeTunnelFrame(TUNNEL_FRAME.reset, this.id, err ? { reason: err.message } : undefined));
    }
    this.#pending?.callback(err ?? new Error('the stream was closed'));
    this.#pending = null;
    this.#carrier.forget(this);
    callback(err);
  }

  // --- what the HTTP client asks of a socket ---------------------------------------------------

  /** Emits `timeout` after `ms` with no byte either way (0: never), as a socket does. */
  setTimeout(ms: number, callback?: () => void): this {
    this.timeout = ms;
    if (callback) this.once('timeout', callback);
    this.#touch();
    return this;
  }

  #touch(): void {
    if (this.timeout > 0 && !this.destroyed) {
      // the same timer moved on, not a new one per frame
      if (this.#timer && this.#timerMs === this.timeout) this.#timer.refresh();
      else {
        if (this.#timer) clearTimeout(this.#timer);
        this.#timerMs = this.timeout;
        this.#timer = setTimeout(() => this.emit('timeout'), this.timeout);
        this.#timer.unref();
      }
    } else if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
  }

  setKeepAlive(): this {
    return this;
  }

  setNoDelay(): this {
    return this;
  }

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }
}
