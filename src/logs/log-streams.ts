/**
 * An instance's log stream (docs/logs.md): the `container` source (its own output, through the
 * runtime port's `output()`) and the `system` source (the platform's lines, src/logs/system-log.ts),
 * merged in time order. First what is kept (the last `tail` lines, or those since a time or after a
 * resume cursor), then, while the instance runs or is about to, new lines as they come, until it
 * stops or the reader leaves.
 *
 * Bounded: each source is read only as fast as the reader takes lines (a small queue between them),
 * so a slow reader holds the sources, never a growing buffer.
 */
import type { Clock } from '../domain/clock.js';
import type { Runtime } from '../runtime/runtime.js';
import { keptTail, OutputReaderBehind } from '../runtime/shared-output.js';
import type { SystemLogRow } from '../store/system-log-store.js';
import { BoundedChannel } from './bounded-channel.js';
import { formatEventId, type LogCursor } from './log-cursor.js';
import { LogStreamSlots, type LogStreamSlot } from './log-stream-slots.js';
import type { SystemLog } from './system-log.js';

export type LogSource = 'container' | 'system';
export const LOG_SOURCES: readonly LogSource[] = ['container', 'system'];

export interface LogEntry {
  /** ms epoch */
  ts: number;
  source: LogSource;
  line: string;
}

export interface LogEvent extends LogEntry {
  /** `<ts>/<ordinal>` (log-cursor.ts) */
  id: string;
}

/** Where the stream begins (the OpenAPI's precedence: a resume cursor, else `since`, else `tail`). */
export type LogStart = { tail: number } | { sinceMs: number } | { after: LogCursor };

/** What is streamed: an instance, and whether it runs or is about to (the stream follows while it does). */
export interface LogTarget {
  instanceId: string;
  alive(): Promise<boolean>;
}

export interface LogStreamRequest {
  /** @default both */
  sources?: readonly LogSource[];
  start: LogStart;
  /** Ends the stream (the reader left). */
  signal: AbortSignal;
}

export interface LogStreamsDeps {
  runtime: Pick<Runtime, 'output'>;
  systemLog: Pick<SystemLog, 'read' | 'changed' | 'version'>;
  clock: Clock;
  /** Lines queued between the sources and a reader. @default 256 */
  bufferLines?: number;
  /**
   * How often a follower looks again for an instance that has no output (yet): launching, restarting,
   * a placeholder. A launch writes system lines, which wake it at once; this is the fallback. @default 5000
   */
  recheckMs?: number;
  /** SSE keep-alive comment interval of the HTTP route. @default 15000 */
  keepAliveMs?: number;
  /** Streams one account may hold open at once on this replica (config `quotas.logStreams`). @default 100 */
  maxStreamsPerAccount?: number;
}

/** A source's position: its last line read, and how many it read at that `ts`. */
interface SourceCursor {
  ts: number | undefined;
  seen: number;
}

export class LogStreams {
  readonly #d: LogStreamsDeps;
  /** The open streams' stops (a server shutdown ends them, or its close would wait for them). */
  readonly #open = new Set<AbortController>();
  readonly #slots: LogStreamSlots;
  #closed = false;

  constructor(deps: LogStreamsDeps) {
    this.#d = deps;
    this.#slots = new LogStreamSlots(deps.maxStreamsPerAccount ?? 100);
  }

  /**
   * A slot for one more stream of `accountId`, taken before the stream is answered and released
   * once it ends (log-stream-slots.ts). @throws ApiError TOO_MANY_LOG_STREAMS (429) at the cap
   */
  admit(accountId: string): LogStreamSlot {
    return this.#slots.take(accountId);
  }

  /** Streams `accountId` holds open on this replica. */
  heldBy(accountId: string): number {
    return this.#slots.held(accountId);
  }

  get keepAliveMs(): number {
    return this.#d.keepAliveMs ?? 15_000;
  }

  /** Ends every open stream, and those opened after at once (server shutdown). */
  close(): void {
    this.#closed = true;
    for (const stop of this.#open) stop.abort();
  }

  /** The stream: kept lines, then (while the target is alive) new ones, each with its id. */
  async *open(target: LogTarget, request: LogStreamRequest): AsyncGenerator<LogEvent> {
    const ended = new AbortController();
    const onAbort = (): void => ended.abort();
    request.signal.addEventListener('abort', onAbort, { once: true });
    this.#open.add(ended);
    // A reader gone already (or a server closing) gets nothing: no 'abort' event comes for it.
    if (this.#closed || request.signal.aborted) ended.abort();
    try {
      yield* this.#stream(target, request.start, request.sources, ended.signal);
    } finally {
      request.signal.removeEventListener('abort', onAbort);
      this.#open.delete(ended);
      ended.abort();
    }
  }

  async *#stream(
    target: LogTarget,
    start: LogStart,
    sources: readonly LogSource[] | undefined,
    signal: AbortSignal,
  ): AsyncGenerator<LogEvent> {
    const want = new Set(sources ?? LOG_SOURCES);
    const wantContainer = want.has('container') && this.#d.runtime.output !== undefined;
    const wantSystem = want.has('system');
    const id = target.instanceId;
    const now = this.#d.clock.now();
    const lowerMs =
      'tail' in start ? (start.tail === 0 ? now : undefined) : 'sinceMs' in start ? start.sinceMs : start.after.ts;
    const tail = 'tail' in start && start.tail > 0 ? start.tail : undefined;
    // Live only: what is already there at `now` is read too, only to start after it.
    const liveOnly = 'tail' in start && start.tail === 0;
    const alive = await target.alive();

    let system: SystemLogRow[] = [];
    if (wantSystem) system = await this.#d.systemLog.read(id, range(lowerMs, tail));
    const systemEntries = system.map((r): LogEntry => ({ ts: r.ts, source: 'system', line: r.line }));
    // The container's kept lines, its cursor following what was read.
    const containerCursor: SourceCursor = { ts: lowerMs, seen: 0 };
    const runtimeOutput = this.#d.runtime.output?.bind(this.#d.runtime);
    const containerEntries = async function* (): AsyncGenerator<LogEntry> {
      if (!wantContainer || !runtimeOutput) return;
      try {
        // A tail's place is counted whole, even when it begins inside one millisecond's lines.
        const lines =
          tail !== undefined
            ? await keptTail(
                runtimeOutput,
                id,
                { tail, follow: false, signal, ...range(lowerMs, tail) },
                containerCursor,
              )
            : runtimeOutput(id, { ...range(lowerMs, tail), follow: false, signal });
        for await (const l of lines) {
          if (tail === undefined) advance(containerCursor, l.ts);
          yield { ts: l.ts, source: 'container', line: l.line };
        }
      } catch (err) {
        if (signal.aborted) return;
        // The output cannot be read now (its host's agent is away): the reader is told why, in a
        // platform line of this stream only, rather than left with a stream that ends unexplained.
        yield {
          ts: Math.max(now, containerCursor.ts ?? 0),
          source: 'system',
          line: `container output unavailable: ${(err as Error).message}`,
        };
      }
    };

    const ids = new EventIds('after' in start ? start.after : null);
    if (tail !== undefined || liveOnly) {
      // At most `tail` lines of each source: merged in memory, the last `tail` kept.
      const container: LogEntry[] = [];
      for await (const e of containerEntries()) container.push(e);
      const merged = liveOnly ? [] : mergeByTs(systemEntries, container).slice(-(tail ?? 0));
      for (const e of merged) {
        if (signal.aborted) return;
        yield ids.next(e);
      }
    } else {
      // Since a time or a cursor: the container's lines stream through, the (bounded) system lines merged in.
      const after = 'after' in start ? afterCursorFilter(start.after) : () => true;
      for await (const e of mergeStream(systemEntries, containerEntries())) {
        if (signal.aborted) return;
        if (after(e)) yield ids.next(e);
      }
    }
    if (!alive || signal.aborted) return;

    let systemAfter = system.length > 0 ? system[system.length - 1]!.seq : undefined;
    const systemSince = systemAfter === undefined ? lowerMs : undefined;

    const channel = new BoundedChannel<LogEntry>(this.#d.bufferLines ?? 256);
    const stop = new AbortController();
    const onAbort = (): void => {
      stop.abort();
      channel.close();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    let running = 0;
    const run = (producer: () => Promise<void>): void => {
      running++;
      void producer()
        .catch(() => undefined)
        .finally(() => {
          if (--running === 0) channel.close();
        });
    };
    if (wantContainer) run(() => this.#followContainer(target, containerCursor, channel, stop.signal));
    if (wantSystem)
      run(async () => {
        let since = systemSince;
        for (;;) {
          const version = this.#d.systemLog.version;
          const rows = await this.#d.systemLog.read(
            id,
            systemAfter !== undefined ? { afterSeq: systemAfter } : since !== undefined ? { sinceMs: since } : {},
          );
          for (const r of rows) if (!(await channel.push({ ts: r.ts, source: 'system', line: r.line }))) return;
          if (rows.length > 0) systemAfter = rows[rows.length - 1]!.seq;
          since = undefined;
          if (stop.signal.aborted) return;
          if (!(await target.alive())) {
            // The line saying why it stopped may be written just after the status.
            await this.#d.systemLog.changed(id, stop.signal, 300);
            const last = await this.#d.systemLog.read(id, systemAfter !== undefined ? { afterSeq: systemAfter } : {});
            for (const r of last) await channel.push({ ts: r.ts, source: 'system', line: r.line });
            return;
          }
          await this.#d.systemLog.changed(id, stop.signal, undefined, version);
        }
      });
    if (running === 0) channel.close();
    try {
      for await (const e of channel) {
        if (signal.aborted) return;
        yield ids.next(e);
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      stop.abort();
      channel.close();
    }
  }

  /** The instance's output from the cursor on, reopened while the instance is alive (a launch, a restart). */
  async #followContainer(
    target: LogTarget,
    cursor: SourceCursor,
    channel: BoundedChannel<LogEntry>,
    signal: AbortSignal,
  ): Promise<void> {
    const output = this.#d.runtime.output!.bind(this.#d.runtime);
    while (!signal.aborted) {
      const version = this.#d.systemLog.version;
      let skip = cursor.seen;
      try {
        for await (const l of output(target.instanceId, {
          ...(cursor.ts !== undefined ? { sinceMs: cursor.ts } : {}),
          follow: true,
          signal,
        })) {
          if (cursor.ts !== undefined && l.ts < cursor.ts) continue;
          if (l.ts === cursor.ts && skip > 0) {
            skip--;
            continue;
          }
          advance(cursor, l.ts);
          if (!(await channel.push({ ts: l.ts, source: 'container', line: l.line }))) return;
        }
      } catch (err) {
        if (!(err instanceof OutputReaderBehind)) throw err;
        // The output's one follow is shared (shared-output.ts): a reader that falls that far behind
        // is ended rather than hold the others back or its lines without bound. Its last event says so.
        channel.finish({
          ts: Math.max(this.#d.clock.now(), cursor.ts ?? 0),
          source: 'system',
          line: `log stream ended: this reader fell more than ${err.lines} lines behind the container's output; reconnect with Last-Event-ID to resume where it stopped`,
        });
        return;
      }
      if (signal.aborted || !(await target.alive())) return;
      await this.#d.systemLog.changed(target.instanceId, signal, this.#d.recheckMs ?? 5_000, version);
    }
  }
}

const range = (sinceMs: number | undefined, tail: number | undefined) => ({
  ...(sinceMs !== undefined ? { sinceMs } : {}),
  ...(tail !== undefined ? { tail } : {}),
});

/** Both sources, each oldest first, into one list by time; at equal times system lines come first. */
export function mergeByTs(system: readonly LogEntry[], container: readonly LogEntry[]): LogEntry[] {
  const out: LogEntry[] = [];
  let i = 0;
  let j = 0;
  while (i < system.length || j < container.length) {
    if (j >= container.length || (i < system.length && system[i]!.ts <= container[j]!.ts)) out.push(system[i++]!);
    else out.push(container[j++]!);
  }
  return out;
}

/** The lines after a resume cursor: later times, and at its time those past its ordinal. */
export function afterCursor(lines: readonly LogEntry[], cursor: LogCursor): LogEntry[] {
  return lines.filter(afterCursorFilter(cursor));
}

/** A filter, in stream order, of the lines after a resume cursor. */
function afterCursorFilter(cursor: LogCursor): (l: LogEntry) => boolean {
  let atCursor = 0;
  return (l) => {
    if (l.ts !== cursor.ts) return l.ts > cursor.ts;
    return cursor.ordinal !== null && atCursor++ > cursor.ordinal;
  };
}

/** {@link mergeByTs} over a stream of container lines: only the system lines (bounded) are held. */
async function* mergeStream(system: readonly LogEntry[], container: AsyncIterable<LogEntry>): AsyncGenerator<LogEntry> {
  let i = 0;
  for await (const c of container) {
    while (i < system.length && system[i]!.ts <= c.ts) yield system[i++]!;
    yield c;
  }
  while (i < system.length) yield system[i++]!;
}

/** A line at `ts` was read from the source. */
function advance(cursor: SourceCursor, ts: number): void {
  if (ts === cursor.ts) cursor.seen++;
  else {
    cursor.ts = ts;
    cursor.seen = 1;
  }
}

/**
 * Ids in stream order: `<ts>/<ordinal>`. A live line older than the one before it (two sources
 * racing) takes the previous line's time in its id, so ids never go back and a resume repeats nothing.
 */
class EventIds {
  #ts = -Infinity;
  #ordinal = 0;

  /** A resumed stream goes on numbering from its cursor. */
  constructor(from: LogCursor | null) {
    if (from?.ordinal != null) {
      this.#ts = from.ts;
      this.#ordinal = from.ordinal;
    }
  }

  next(e: LogEntry): LogEvent {
    if (e.ts > this.#ts) {
      this.#ts = e.ts;
      this.#ordinal = 0;
    } else this.#ordinal++;
    return { ...e, id: formatEventId(this.#ts, this.#ordinal) };
  }
}
