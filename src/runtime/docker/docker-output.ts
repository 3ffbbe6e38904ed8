/**
 * The Docker runtime's `output()`: the engine's container log (`/containers/{id}/logs` with
 * `timestamps=1`, `follow=1` to follow), its frames decoded as they arrive (raw text for a
 * container with a TTY), each line's RFC3339Nano time parsed. The engine keeps the log: with the
 * json-file driver, Gantry creates containers with `max-size` = `logMaxBytes` (10 MiB) and
 * `max-file` 2 (container-config.ts), so a container keeps at most ~20 MiB of output; the `local`
 * driver rotates by default. A stopped container's log stays readable until it is removed.
 *
 * Read at the reader's pace: the response is consumed only as lines are taken, so a slow reader
 * leaves the bytes in the socket (TCP backpressure to the engine), not in memory.
 */
import type { Readable } from 'node:stream';
import type { OutputLine, OutputQuery } from '../runtime.js';
import type { DockerClient } from './docker-client.js';

const STREAMS = 3;

/** A line the engine split (past 16 KiB) or never ended is cut here. */
const MAX_LINE_BYTES = 64 * 1024;

export async function* containerOutput(
  client: Pick<DockerClient, 'inspectContainer' | 'containerLogStream'>,
  container: string,
  query: OutputQuery,
): AsyncGenerator<OutputLine> {
  const info = await client.inspectContainer(container).catch(() => null);
  if (!info || query.signal.aborted) return;
  const tty = (info.Config as { Tty?: boolean }).Tty === true;
  // The engine applies `tail` before `since`; the port's tail is of the lines since: cut here then.
  const engineTail = query.sinceMs === undefined ? query.tail : undefined;
  const clientTail = query.sinceMs !== undefined && !query.follow ? query.tail : undefined;
  let body: Readable;
  try {
    body = await client.containerLogStream(
      container,
      {
        follow: query.follow,
        ...(engineTail !== undefined ? { tail: engineTail } : {}),
        ...(query.sinceMs !== undefined ? { sinceMs: query.sinceMs } : {}),
      },
      query.signal,
    );
  } catch {
    return;
  }
  const lines = linesOf(body, tty);
  try {
    if (clientTail === undefined) {
      for await (const l of lines) {
        if (query.signal.aborted) return;
        if (query.sinceMs !== undefined && l.ts < query.sinceMs) continue;
        yield l;
      }
      return;
    }
    const ring: OutputLine[] = [];
    for await (const l of lines) {
      if (query.sinceMs !== undefined && l.ts < query.sinceMs) continue;
      ring.push(l);
      if (ring.length > clientTail) ring.shift();
    }
    yield* ring;
  } catch {
    // the reader left (abort) or the engine went away: the iteration ends
  } finally {
    body.destroy();
  }
}

/** The lines of a log body, frame by frame (or raw with a TTY), per stream. */
async function* linesOf(body: AsyncIterable<Buffer>, tty: boolean): AsyncGenerator<OutputLine> {
  let pending: Buffer = Buffer.alloc(0);
  const partial: Buffer[] = Array.from({ length: STREAMS }, () => Buffer.alloc(0));
  const take = function* (stream: number, data: Buffer): Generator<OutputLine> {
    let bytes = partial[stream]!.length > 0 ? Buffer.concat([partial[stream]!, data]) : data;
    for (let nl = bytes.indexOf(10); nl !== -1; nl = bytes.indexOf(10)) {
      const line = parseLine(bytes.toString('utf8', 0, nl));
      if (line) yield line;
      bytes = bytes.subarray(nl + 1);
    }
    if (bytes.length > MAX_LINE_BYTES) {
      const line = parseLine(bytes.toString('utf8'));
      if (line) yield line;
      bytes = Buffer.alloc(0);
    }
    partial[stream] = Buffer.from(bytes);
  };
  for await (const chunk of body) {
    if (tty) {
      yield* take(1, chunk);
      continue;
    }
    pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    let at = 0;
    while (at + 8 <= pending.length) {
      const size = pending.readUInt32BE(at + 4);
      if (at + 8 + size > pending.length) break;
      const stream = pending[at]!;
      yield* take(stream < STREAMS ? stream : 1, pending.subarray(at + 8, at + 8 + size));
      at += 8 + size;
    }
    pending = Buffer.from(pending.subarray(at));
  }
  for (const rest of partial) {
    const line = rest.length > 0 ? parseLine(rest.toString('utf8')) : null;
    if (line) yield line;
  }
}

/** `<RFC3339Nano> <text>`: the engine's time, to ms (its nanoseconds cut), and the line (a trailing CR dropped). */
export function parseLine(text: string): OutputLine | null {
  const space = text.indexOf(' ');
  const stamp = space === -1 ? text : text.slice(0, space);
  const ts = Date.parse(stamp.replace(/(\.\d{3})\d+/, '$1'));
  if (!Number.isFinite(ts)) return null;
  let line = space === -1 ? '' : text.slice(space + 1);
  if (line.endsWith('\r')) line = line.slice(0, -1);
  return { ts, line };
}
