/**
 * The engine's two stream formats: newline-delimited JSON (pull progress, events) and the 8-byte
 * framed stdout/stderr multiplexing of a container's logs when it has no TTY.
 */

/** Yields each JSON value of a newline-delimited stream, as it arrives; blank lines are skipped. */
export async function* ndjson<T>(chunks: AsyncIterable<Buffer | string>): AsyncGenerator<T> {
  let pending = '';
  for await (const chunk of chunks) {
    pending += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line) yield JSON.parse(line) as T;
      newline = pending.indexOf('\n');
    }
  }
  const rest = pending.trim();
  if (rest) yield JSON.parse(rest) as T;
}

export interface LogFrame {
  stream: 'stdin' | 'stdout' | 'stderr';
  data: Buffer;
}

const STREAMS = ['stdin', 'stdout', 'stderr'] as const;

/**
 * Splits a multiplexed log body into its frames: each is a header `[stream, 0, 0, 0, size (4 bytes,
 * big-endian)]` and `size` bytes of output. A body cut short keeps the frames that are whole and
 * the part that arrived of the last one.
 */
export function decodeLogFrames(body: Buffer): LogFrame[] {
  const frames: LogFrame[] = [];
  let at = 0;
  while (at + 8 <= body.length) {
    const kind = body[at]!;
    const size = body.readUInt32BE(at + 4);
    const stream = STREAMS[kind];
    if (stream === undefined || body[at + 1] !== 0 || body[at + 2] !== 0 || body[at + 3] !== 0) {
      // Not a framed body (a container with a TTY writes raw output): take the rest as it is.
      frames.push({ stream: 'stdout', data: body.subarray(at) });
      return frames;
    }
    frames.push({ stream, data: body.subarray(at + 8, Math.min(at + 8 + size, body.length)) });
    at += 8 + size;
  }
  if (at < body.length && frames.length === 0) frames.push({ stream: 'stdout', data: body.subarray(at) });
  return frames;
}

/**
 * The last `lines` lines of `text`, at most `maxChars` characters (cut at the start), trailing
 * blank lines dropped; '' for none. The same shape the process runtime puts in a reason.
 */
export function tailLines(text: string, { lines = 20, maxChars = 2048 } = {}): string {
  const trimmed = text.replace(/\r\n/g, '\n').replace(/\s+$/, '');
  if (trimmed === '') return '';
  const kept = trimmed.split('\n').slice(-lines).join('\n');
  return kept.length > maxChars ? `…${kept.slice(kept.length - maxChars + 1)}` : kept;
}
