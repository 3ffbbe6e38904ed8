/**
 * The stamped output file's format and its reads (output-stamper.ts): one line per output line,
 * `<ms epoch> <text>\n`, read forward a chunk at a time, or back from the end for a tail.
 */
import { open, stat, type FileHandle } from 'node:fs/promises';
import type { OutputLine } from '../runtime.js';

/** Bytes read at a time, by the stamper and by a reader. */
const CHUNK = 64 * 1024;

/** `<ms> <text>\n`: the time the line was read, then the line as written (a trailing CR dropped). */
export function stampLine(ts: number, bytes: Buffer): string {
  let text = bytes.toString('utf8');
  if (text.endsWith('\r')) text = text.slice(0, -1);
  return `${ts} ${text}\n`;
}

function* parseLines(bytes: Buffer): Generator<OutputLine> {
  let from = 0;
  for (let nl = bytes.indexOf(10); nl !== -1; nl = bytes.indexOf(10, from)) {
    const text = bytes.toString('utf8', from, nl);
    from = nl + 1;
    const space = text.indexOf(' ');
    const ts = Number(text.slice(0, space));
    if (space > 0 && Number.isFinite(ts)) yield { ts, line: text.slice(space + 1) };
  }
}

export async function fileAt(path: string): Promise<{ ino: number; size: number }> {
  const s = await stat(path).catch(() => null);
  return s ? { ino: s.ino, size: s.size } : { ino: 0, size: 0 };
}

export async function readRange(path: string, from: number, to: number): Promise<Buffer> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch {
    return Buffer.alloc(0);
  }
  try {
    const end = Math.min(to, (await handle.stat()).size);
    if (end <= from) return Buffer.alloc(0);
    const buffer = Buffer.alloc(end - from);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, from);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

export async function* readLinesFrom(
  path: string,
  from: number,
  signal: AbortSignal,
  to = Infinity,
): AsyncGenerator<OutputLine> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch {
    return;
  }
  try {
    yield* linesOf(handle, from, Math.min(to, (await handle.stat()).size), () => undefined, signal);
  } finally {
    await handle.close();
  }
}

/** Just past the last newline before `size` (0 for none): where the whole lines end. */
export async function lastLineEnd(path: string, size: number): Promise<number> {
  let end = size;
  while (end > 0) {
    const from = Math.max(0, end - CHUNK);
    const bytes = await readRange(path, from, end);
    const nl = bytes.lastIndexOf(10);
    if (nl !== -1) return from + nl + 1;
    end = from;
  }
  return 0;
}

/** The whole lines before `end`, newest first, a chunk at a time from the end. */
export async function* readLinesBackward(path: string, end: number): AsyncGenerator<OutputLine> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch {
    return;
  }
  try {
    let at = Math.min(end, (await handle.stat()).size);
    let rest = Buffer.alloc(0);
    while (at > 0) {
      const from = Math.max(0, at - CHUNK);
      const buffer = Buffer.alloc(at - from);
      await handle.read(buffer, 0, buffer.length, from);
      at = from;
      const bytes = Buffer.concat([buffer, rest]);
      // the part before the first newline may be the end of a line that starts further back
      const first = at > 0 ? bytes.indexOf(10) + 1 : 0;
      if (at > 0 && first === 0) {
        rest = bytes;
        continue;
      }
      rest = Buffer.from(bytes.subarray(0, first));
      const lines = [...parseLines(bytes.subarray(first))];
      for (let i = lines.length - 1; i >= 0; i--) yield lines[i]!;
    }
  } finally {
    await handle.close();
  }
}

/** Whole lines between `from` and `to`, a chunk at a time (the reader's pace sets the reads); `consumed` hears the bytes taken. */
export async function* linesOf(
  handle: FileHandle,
  from: number,
  to: number,
  consumed: (n: number) => void,
  signal: AbortSignal,
): AsyncGenerator<OutputLine> {
  let at = from;
  let rest = Buffer.alloc(0);
  while (at < to && !signal.aborted) {
    const buffer = Buffer.alloc(Math.min(CHUNK, to - at));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, at);
    if (bytesRead === 0) break;
    at += bytesRead;
    const bytes = Buffer.concat([rest, buffer.subarray(0, bytesRead)]);
    const cut = bytes.lastIndexOf(10) + 1;
    rest = Buffer.from(bytes.subarray(cut));
    consumed(at - from - rest.length);
    for (const line of parseLines(bytes.subarray(0, cut))) yield line;
  }
}
