/**
 * One proxied request over a raw connection to a pod's port (pod-connections.ts), with the fewest
 * hops a byte can take in JavaScript: the request's head is written as text and its body as it
 * comes; the answer's head is read strictly (answer-head.ts) and written to the client through
 * Node's response (so the client's keep-alive, HEAD and HTTP/1.0 rules stay Node's); its body, by
 * its framing (a Content-Length count, chunked read by chunked-body.ts, or until the pod closes),
 * goes straight to the client's socket. A read is written before the next is taken: when the
 * client's socket does not take a write at once, the connection stops reading until it has, so
 * a slow client holds one read buffer, never more (backpressure), and the read buffer is never
 * overwritten while a write still points into it.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { MAX_HEAD_BYTES, headEnd, parseAnswerHead, type AnswerHead } from './answer-head.js';
import { ChunkedBody } from './chunked-body.js';
import { DialTimeout } from '../runtime/dial.js';
import type { ConnectionReader, PodConnection } from './pod-connections.js';
import { answerHeaders, setHeader, upgradeHead } from './proxy-headers.js';

export interface ExchangeSpec {
  req: IncomingMessage;
  res: ServerResponse;
  path: string;
  /** the request's headers for the pod (proxy-headers.ts `requestHeaders`) */
  headers: OutgoingHttpHeaders;
  /** `/{label}` under a path prefix, '' by Host (for the answer's headers) */
  prefix: string;
  idleTimeoutMs: number;
  /** headers the answer carries whatever the pod sent under their names (the balancer's `X-Runpod-Worker-Id`) */
  setHeaders?: Readonly<Record<string, string>>;
  /** the request body's bytes, as they go on; the caller may `abort()` the exchange from here */
  bytesIn(n: number): void;
  /** The answer's head was read (`status`), or why it cannot be passed on (`refused`, nothing sent yet). */
  head(status: number): void;
  /** Nothing of an answer was written and none will be: `err` says why (the caller answers a problem). */
  failed(err: Error | { refused: string }): void;
  /**
   * Instead of `failed`: a kept-alive connection ended with no byte of an answer under a request
   * that may go again (one without a body, of a method that changes nothing): the pod had closed
   * the idle connection as the request went. The caller may send it again on a new connection.
   */
  stale?(): void;
  /** The exchange is over; `reusable`: the connection may carry another. */
  finished(reusable: boolean): void;
}

const CRLF = Buffer.from('\r\n');
/** Methods a request may be sent again with (RFC 9110 9.2.2), when it carries no body. */
const REPEATABLE = new Set(['GET', 'HEAD', 'OPTIONS']);
const LAST_CHUNK = Buffer.from('0\r\n\r\n');

/** Whether the request carries a body (RFC 9112 6.3: only by Content-Length or Transfer-Encoding). */
const hasBody = (req: IncomingMessage): boolean =>
  req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;

export class UpstreamExchange implements ConnectionReader {
  readonly #s: ExchangeSpec;
  readonly #conn: PodConnection;
  readonly #upstream: Duplex;
  #headBytes: Buffer | null = null;
  #head: AnswerHead | null = null;
  /** Content-Length bytes still to come */
  #left = 0;
  #chunked: ChunkedBody | null = null;
  /** the client's socket, written directly (null: through the response, copying) */
  #direct: Socket | null = null;
  #writes = 0;
  #flushed = 0;
  #paused = false;
  /** the connection goes back once the client's socket has taken every write pointing into its buffer */
  #releaseWhenFlushed = false;
  /** body bytes read with the head, written once the answer's way to the client is known */
  readonly #pending: Buffer[] = [];
  #requestSent = false;
  #headFlushed = false;
  #over = false;
  /** a byte of the answer arrived */
  #answered = false;

  constructor(conn: PodConnection, spec: ExchangeSpec) {
    this.#s = spec;
    this.#conn = conn;
    this.#upstream = conn.socket!;
  }

  /** Sends the request and reads the answer. */
  start(): void {
    const { req, headers, path, idleTimeoutMs } = this.#s;
    const body = hasBody(req);
    const chunked = body && req.headers['content-length'] === undefined;
    if (chunked) headers['Transfer-Encoding'] = 'chunked';
    this.#conn.read(this);
    this.#conn.timeout(idleTimeoutMs);
    const upstream = this.#upstream;
    // latin1: header bytes go on as Node's parser read them
    upstream.write(upgradeHead(req.method, path, headers), 'latin1');
    if (!body) {
      this.#requestSent = true;
      return;
    }
    const resume = this.#resumeRequest;
    req.on('data', (chunk: Buffer) => {
      if (this.#over) return;
      this.#s.bytesIn(chunk.length);
      if (this.#over) return;
      let ok: boolean;
      if (chunked) {
        upstream.cork();
        upstream.write(`${chunk.length.toString(16)}\r\n`);
        upstream.write(chunk);
        ok = upstream.write(CRLF);
        upstream.uncork();
      } else ok = upstream.write(chunk);
      if (!ok) {
        req.pause();
        upstream.once('drain', resume);
      }
    });
    req.on('end', () => {
      if (this.#over) return;
      if (chunked) upstream.write(LAST_CHUNK);
      this.#requestSent = true;
    });
  }

  readonly #resumeRequest = (): void => void this.#s.req.resume();

  /** The client went away (or the exchange must stop): the connection cannot be reused. */
  abort(): void {
    if (this.#over) return;
    this.#over = true;
    this.#s.finished(false);
  }

  bytes(bytes: Uint8Array, start: number, end: number): boolean {
    if (this.#over) return false;
    this.#answered = true;
    if (this.#head === null) return this.#readHead(bytes, start, end);
    return this.#body(bytes, start, end);
  }

  ended(err: Error | null): void {
    if (this.#over) return;
    if (this.#head === null) {
      this.#over = true;
      const { req } = this.#s;
      // a timeout is no closed connection: the pod may be working on the request
      const again = this.#conn.reused && !this.#answered && !(err instanceof DialTimeout);
      if (again && this.#s.stale && !hasBody(req) && REPEATABLE.has(req.method ?? '')) {
        this.#s.finished(false);
        return this.#s.stale();
      }
      this.#s.failed(err ?? new Error('it closed the connection before answering'));
      this.#s.finished(false);
      return;
    }
    // an answer framed by the connection's end is whole; any other is cut short
    if (err === null && this.#head.framing.kind === 'close') {
      this.#finish(false);
      return;
    }
    this.#over = true;
    this.#s.finished(false);
    this.#s.res.destroy();
  }

  #readHead(bytes: Uint8Array, start: number, end: number): boolean {
    const piece = Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start);
    // copied: the connection's read buffer is reused
    const all = this.#headBytes ? Buffer.concat([this.#headBytes, piece]) : Buffer.from(piece);
    const at = headEnd(all);
    if (at === -1) {
      if (all.length > MAX_HEAD_BYTES) return this.#refuse(`its head is larger than ${MAX_HEAD_BYTES} bytes`);
      this.#headBytes = all;
      return true;
    }
    this.#headBytes = null;
    const head = parseAnswerHead(all.toString('latin1', 0, at), this.#s.req.method ?? 'GET');
    if ('refused' in head) return this.#refuse(head.refused);
    if (head.status === 101) return this.#refuse('it switched protocols for a request that asked for no upgrade');
    // an interim answer (100 Continue, 103 Early Hints): the final one follows
    if (head.status < 200) return at === all.length ? true : this.#readHead(all, at, all.length);
    return this.#answer(head, all, at);
  }

  /** The body's framing broke after its head went: the client's answer is cut short. */
  #cut(): boolean {
    this.#over = true;
    this.#s.finished(false);
    this.#upstream.destroy();
    this.#s.res.destroy();
    return false;
  }

  #refuse(why: string): boolean {
    this.#over = true;
    this.#s.failed({ refused: why });
    this.#s.finished(false);
    this.#upstream.destroy();
    return false;
  }

  /** Writes the answer's head; `rest[from…]` is what came after it (a copy, safe to keep). */
  #answer(head: AnswerHead, rest: Buffer, from: number): boolean {
    const { res } = this.#s;
    try {
      const headers = answerHeaders(head.rawHeaders, head.connection, this.#s.prefix);
      if (this.#s.setHeaders)
        for (const [name, value] of Object.entries(this.#s.setHeaders)) setHeader(headers, name, value);
      res.writeHead(head.status, head.reason, headers);
    } catch (err) {
      return this.#refuse((err as Error).message);
    }
    this.#head = head;
    this.#s.head(head.status);
    const framing = head.framing;
    if (framing.kind === 'none') {
      this.#finish(from === rest.length);
      return false;
    }
    if (framing.kind === 'length') {
      this.#left = framing.length;
      // the whole body came with the head: one write for both
      if (rest.length - from >= this.#left) {
        const exact = rest.length - from === this.#left;
        res.end(rest.subarray(from, from + this.#left));
        this.#left = 0;
        this.#release(exact);
        return false;
      }
    } else if (framing.kind === 'chunked') {
      this.#chunked = new ChunkedBody();
      // the whole body came with the head (a small answer): one write for both
      const pieces: Buffer[] = [];
      const read = this.#chunked.read(rest, from, rest.length, (a, b) => pieces.push(rest.subarray(a, b)));
      if (typeof read === 'number' && this.#chunked.done) {
        res.end(pieces.length === 1 ? pieces[0] : Buffer.concat(pieces));
        this.#release(from + read === rest.length);
        return false;
      }
      if (typeof read !== 'number') return this.#cut();
      from += read;
      for (const piece of pieces) this.#pending.push(piece);
    }
    // an event stream's head goes at once; any other goes with the first bytes of its body
    if (head.contentType.startsWith('text/event-stream')) {
      this.#headFlushed = true;
      res.flushHeaders();
    }
    const socket = res.socket;
    if (socket && !socket.destroyed) this.#direct = socket;
    // body bytes the chunked reader already took from what came with the head
    for (const piece of this.#pending.splice(0)) this.#put(piece, 0, piece.length);
    return from === rest.length ? this.#continue() : this.#body(rest, from, rest.length);
  }

  #body(bytes: Uint8Array, start: number, end: number): boolean {
    if (this.#chunked) {
      const read = this.#chunked.read(bytes, start, end, (from, to) => this.#put(bytes, from, to));
      if (typeof read !== 'number') return this.#cut();
      if (this.#chunked.done) {
        this.#finish(start + read === end);
        return false;
      }
    } else if (this.#head!.framing.kind === 'length') {
      const to = Math.min(end, start + this.#left);
      this.#put(bytes, start, to);
      this.#left -= to - start;
      if (this.#left === 0) {
        this.#finish(to === end);
        return false;
      }
    } else this.#put(bytes, start, end);
    return this.#continue();
  }

  /** Whether to read on: not while the client's socket holds a write (pointing into the read buffer). */
  #continue(): boolean {
    if (this.#direct ? this.#direct.writableLength > 0 : this.#s.res.writableNeedDrain) {
      this.#paused = true;
      if (!this.#direct) this.#s.res.once('drain', this.#onFlushed);
      return false;
    }
    return true;
  }

  /** Writes body bytes to the client. */
  #put(bytes: Uint8Array, from: number, to: number): void {
    if (from === to) return;
    const view = Buffer.from(bytes.buffer, bytes.byteOffset + from, to - from);
    const { res } = this.#s;
    const direct = this.#direct;
    if (direct === null) {
      res.write(Buffer.from(view));
      return;
    }
    direct.cork();
    if (!this.#headFlushed) {
      // the head goes with the first bytes, in one write (`headersSent` is already true after writeHead)
      this.#headFlushed = true;
      res.flushHeaders();
    }
    this.#writes++;
    if (res.chunkedEncoding) {
      direct.write(`${view.length.toString(16)}\r\n`, 'latin1');
      direct.write(view);
      direct.write(CRLF, this.#onFlushed);
    } else direct.write(view, this.#onFlushed);
    direct.uncork();
  }

  /** A write to the client's socket completed: once all have, reading goes on. */
  readonly #onFlushed = (): void => {
    if (this.#direct) this.#flushed++;
    if (this.#direct && this.#flushed < this.#writes) return;
    if (this.#releaseWhenFlushed) {
      this.#releaseWhenFlushed = false;
      this.#s.finished(true);
      return;
    }
    if (!this.#paused || this.#over) return;
    this.#paused = false;
    this.#conn.resume();
  };

  /** The answer is whole: the client gets its end, the connection goes back (`reusable`) or is closed. */
  #finish(reusable: boolean): void {
    this.#s.res.end();
    this.#release(reusable);
  }

  #release(reusable: boolean): void {
    this.#over = true;
    this.#upstream.off('drain', this.#resumeRequest);
    const keep = reusable && this.#requestSent && this.#head !== null && !this.#head.close;
    if (keep) this.#conn.serverKeepMs = this.#head!.keepAliveMs;
    this.#conn.timeout(0);
    // a write still pointing into the connection's read buffer: no read may land there before it is taken
    if (keep && this.#direct && this.#flushed < this.#writes) this.#releaseWhenFlushed = true;
    else this.#s.finished(keep);
  }
}
