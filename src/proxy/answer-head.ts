/**
 * The head of an answer a pod sends, read strictly (RFC 9112): the pod proxy talks to pods over
 * raw connections (upstream-exchange.ts) and what a pod sends is untrusted. Anything this does not
 * understand exactly — a status outside 100-599, a line not ended by CRLF, a header name that is
 * not a token, a control character in a value, a folded line, Content-Length values that differ or
 * are not digits, a Transfer-Encoding other than `chunked`, both framings at once — is refused with
 * why, and the proxy answers 502 rather than guess where the body ends.
 */

/** How the answer's body is framed. */
type BodyFraming =
  | { kind: 'none' }
  | { kind: 'length'; length: number }
  | { kind: 'chunked' }
  /** until the pod closes the connection */
  | { kind: 'close' };

export interface AnswerHead {
  status: number;
  reason: string;
  /** names and values as sent, `[name, value, name, value, …]` */
  rawHeaders: string[];
  /** the `Connection` header's value, lowercased ('' when absent) */
  connection: string;
  /** the `Content-Type` header's value ('' when absent) */
  contentType: string;
  framing: BodyFraming;
  /** the pod asked to close the connection after this answer (or spoke HTTP/1.0) */
  close: boolean;
  /** how long the pod keeps the connection open idle, as its `Keep-Alive: timeout=N` says (null: unsaid) */
  keepAliveMs: number | null;
}

/** An answer's head must fit in this many bytes (Node's own default `maxHeaderSize`). */
export const MAX_HEAD_BYTES = 16 * 1024;
const MAX_HEADERS = 200;

const STATUS_LINE = /^HTTP\/1\.([01]) ([0-9]{3})(?: ([\t\x20-\x7e\x80-\xff]*))?$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const DIGITS = /^[0-9]{1,15}$/;
const KEEP_ALIVE_TIMEOUT = /(?:^|,)\s*timeout\s*=\s*([0-9]{1,6})\s*(?:,|$)/i;

/** Where the head ends in `bytes` (the index just past its blank line), or -1 when it has not ended yet. */
export function headEnd(bytes: Buffer): number {
  const at = bytes.indexOf('\r\n\r\n', 0, 'latin1');
  return at === -1 ? -1 : at + 4;
}

/**
 * The head in `text` (latin1, through its blank line), for a request of `method`: the head, or
 * why it cannot be passed on. An interim answer (1xx other than 101) is a head too: the caller
 * skips it and reads the next.
 */
export function parseAnswerHead(text: string, method: string): AnswerHead | { refused: string } {
  if (!text.endsWith('\r\n\r\n')) return { refused: 'its head does not end with an empty line' };
  const lines = text.slice(0, -4).split('\r\n');
  const m = STATUS_LINE.exec(lines[0]!);
  if (!m)
    return {
      refused: `its status line is not HTTP/1.x with a 3-digit status (${JSON.stringify(lines[0]!.slice(0, 80))})`,
    };
  const status = Number(m[2]);
  if (status < 100 || status > 599) return { refused: `it answered status ${m[2]}` };
  if (lines.length - 1 > MAX_HEADERS) return { refused: `it sent more than ${MAX_HEADERS} headers` };
  const rawHeaders: string[] = [];
  let connection = '';
  let contentType = '';
  let length: string | null = null;
  let transfer: string | null = null;
  let keepAliveMs: number | null = null;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.includes('\n') || line.includes('\r')) return { refused: 'a header line is not ended by CRLF' };
    const colon = line.indexOf(':');
    const name = colon === -1 ? '' : line.slice(0, colon);
    if (!TOKEN.test(name))
      return { refused: `a header line is not "name: value" (${JSON.stringify(line.slice(0, 80))})` };
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    if (!VALUE.test(value)) return { refused: `header ${name} has a control character` };
    const lower = name.toLowerCase();
    if (lower === 'content-length') {
      if (!DIGITS.test(value))
        return { refused: `its Content-Length is not a number (${JSON.stringify(value.slice(0, 40))})` };
      if (length !== null && length !== value) return { refused: 'it sent two different Content-Length values' };
      length = value;
    } else if (lower === 'transfer-encoding') {
      transfer = transfer === null ? value : `${transfer}, ${value}`;
    } else if (lower === 'connection')
      connection = connection ? `${connection}, ${value.toLowerCase()}` : value.toLowerCase();
    else if (lower === 'content-type') contentType = value;
    else if (lower === 'keep-alive') {
      const timeout = KEEP_ALIVE_TIMEOUT.exec(value);
      if (timeout) keepAliveMs = Number(timeout[1]) * 1000;
    }
    rawHeaders.push(name, value);
  }
  if (transfer !== null && length !== null) return { refused: 'it sent both Content-Length and Transfer-Encoding' };
  if (transfer !== null && transfer.toLowerCase() !== 'chunked')
    return { refused: `its Transfer-Encoding is ${JSON.stringify(transfer.slice(0, 40))}, not chunked` };
  const http10 = m[1] === '0';
  const close = http10
    ? !/(?:^|,)\s*keep-alive\s*(?:,|$)/.test(connection)
    : /(?:^|,)\s*close\s*(?:,|$)/.test(connection);
  const framing: BodyFraming =
    method === 'HEAD' || status < 200 || status === 204 || status === 304
      ? { kind: 'none' }
      : transfer !== null
        ? { kind: 'chunked' }
        : length !== null
          ? { kind: 'length', length: Number(length) }
          : { kind: 'close' };
  return {
    status,
    reason: m[3] ?? '',
    rawHeaders,
    connection,
    contentType,
    framing,
    close: close || framing.kind === 'close',
    keepAliveMs,
  };
}
