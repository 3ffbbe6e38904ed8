/**
 * One follow of an instance's output however many readers watch it. A runtime's `output()` with
 * `follow` holds a reader of the instance's output for as long as it is read: on Docker an Engine
 * API connection (`/containers/{id}/logs?follow=1`), on a fleet a stream dialled back by the host's
 * agent, on the process runtime a reader of its stamped file. A thousand clients watching one pod
 * would hold a thousand of them; here they share one.
 *
 * - Each reader first reads what is kept, as it asked (`tail`, `sinceMs`), on its own (a short
 *   read that ends), then joins the instance's one follow just after the last line it read: the
 *   follow keeps its most recent lines, so a reader joining it is given those past its own last
 *   line, then the live ones as they come, in order, with nothing missed or repeated at the seam.
 *   A reader whose last line is older than what the follow keeps (the follow began, or forgot,
 *   after it) reads the lines in between on its own first, and tries again.
 * - Lines are placed by time and, among lines of one time, by their order (`ordinal`), as log
 *   cursors are (src/logs/log-cursor.ts): exact while the output's times never go back.
 * - Bounded: the follow keeps at most `recentLines`/`recentChars` for joiners, and each reader at
 *   most `readerLines`/`readerChars` waiting. The follow is read as fast as its fastest reader takes
 *   lines (it waits while even that one has half its room filled), so one slow reader never stalls
 *   the others; a reader that falls so far behind that its room is full is ended, after the lines
 *   it holds, with {@link OutputReaderBehind}. With a single reader nothing is ever dropped: the
 *   follow simply waits for it.
 * - The follow ends with the instance's output (it stopped: every reader ends after its lines) and
 *   is closed when its last reader leaves.
 */
import type { OutputLine, OutputQuery } from './runtime.js';

type ReadOutput = (id: string, query: OutputQuery) => AsyncIterable<OutputLine>;

export interface SharedOutputOptions {
  /** Lines of a follow kept for the readers that join it. @default 500 */
  recentLines?: number;
  /** Characters of those kept at most. @default 512 KiB */
  recentChars?: number;
  /** Lines a reader may have waiting; past them it is ended. @default 1000 */
  readerLines?: number;
  /** Characters a reader may have waiting; past them it is ended. @default 1 MiB */
  readerChars?: number;
}

/** A reader was ended: it fell too far behind the instance's live output, which other readers go on reading. */
export class OutputReaderBehind extends Error {
  override readonly name = 'OutputReaderBehind';

  constructor(readonly lines: number) {
    super(`this reader fell more than ${lines} lines behind the live output and was ended`);
  }
}

/** How often a joining reader reads the lines between its own and the follow's before giving up. */
const MAX_CATCH_UPS = 3;

/** Where a reader is: after the first `seen` lines at `ts` (undefined: before any line). */
interface Position {
  ts: number | undefined;
  seen: number;
}

interface Entry extends OutputLine {
  /** its index among the consecutive lines of its `ts` */
  ordinal: number;
}

interface Bounds {
  lines: number;
  chars: number;
}

export class SharedOutput {
  readonly #read: ReadOutput;
  readonly #recent: Bounds;
  readonly #reader: Bounds;
  readonly #follows = new Map<string, Follow>();

  constructor(read: ReadOutput, options: SharedOutputOptions = {}) {
    this.#read = read;
    this.#recent = { lines: options.recentLines ?? 500, chars: options.recentChars ?? 512 * 1024 };
    this.#reader = { lines: options.readerLines ?? 1000, chars: options.readerChars ?? 1024 * 1024 };
  }

  /** Follows open now (one per followed instance). */
  get follows(): number {
    return this.#follows.size;
  }

  /** The runtime port's `output()`: a read without `follow` is the runtime's own; a follow is shared. */
  read(id: string, query: OutputQuery): AsyncIterable<OutputLine> {
    return query.follow ? this.#follow(id, query) : this.#read(id, query);
  }

  /** Ends every follow (the runtime closes); their readers end after the lines they hold. */
  close(): void {
    for (const follow of this.#follows.values()) follow.stop.abort();
    this.#follows.clear();
  }

  async *#follow(id: string, query: OutputQuery): AsyncGenerator<OutputLine> {
    const { signal } = query;
    const at: Position = { ts: query.sinceMs, seen: 0 };
    if (query.tail === 0) {
      // None of what is kept, only new lines: after the last kept line, and any of its time (a line
      // written in that same millisecond after the read is taken for one written before).
      for await (const l of this.#read(id, { follow: false, signal, tail: 1 })) {
        at.ts = l.ts;
        at.seen = Number.MAX_SAFE_INTEGER;
      }
    } else if (query.tail !== undefined) {
      for (const l of await keptTail(this.#read, id, { ...query, tail: query.tail }, at)) {
        if (signal.aborted) return;
        yield l;
      }
    } else
      // Since a time, or everything: every line of each time is there, each counted.
      for await (const l of this.#read(id, { ...query, follow: false })) {
        if (signal.aborted) return;
        advance(at, l.ts);
        yield l;
      }
    for (let attempt = 0; ; attempt++) {
      if (signal.aborted) return;
      const reader = this.#join(id, at);
      if (reader) {
        yield* reader.lines(signal);
        return;
      }
      // Output flooding faster than the lines in between can be read: this reader cannot join.
      if (attempt >= MAX_CATCH_UPS) throw new OutputReaderBehind(this.#recent.lines);
      // The follow under way began (or forgot) after this reader's last line: the lines in between first.
      const from = at.ts;
      let skip = at.seen;
      for await (const l of this.#read(id, {
        follow: false,
        signal,
        ...(from !== undefined ? { sinceMs: from } : {}),
      })) {
        if (signal.aborted) return;
        if (from !== undefined && (l.ts < from || (l.ts === from && skip-- > 0))) continue;
        advance(at, l.ts);
        yield l;
      }
    }
  }

  /** A reader of the instance's follow from `position`, starting the follow if none runs; null when the one running cannot give it every line after `position`. */
  #join(id: string, position: Position): Reader | null {
    let follow = this.#follows.get(id);
    if (follow && !follow.covers(position)) return null;
    if (!follow) {
      const started = new Follow(position, this.#recent, () => {
        if (this.#follows.get(id) === started) this.#follows.delete(id);
      });
      this.#follows.set(id, started);
      void this.#pump(id, started, position);
      follow = started;
    }
    return follow.join(position, this.#reader);
  }

  /** Reads the instance's output into its follow, at the pace of its fastest reader, until it ends or is closed. */
  async #pump(id: string, follow: Follow, from: Position): Promise<void> {
    let error: unknown = null;
    try {
      const query: OutputQuery = {
        follow: true,
        signal: follow.stop.signal,
        ...(from.ts !== undefined ? { sinceMs: from.ts } : {}),
      };
      for await (const line of this.#read(id, query)) {
        if (follow.stop.signal.aborted) break;
        follow.add(line);
        await follow.room();
      }
    } catch (err) {
      if (!follow.stop.signal.aborted) error = err;
    } finally {
      follow.end(error);
    }
  }
}

/** One instance's follow: its readers, and the recent lines kept for readers to come. */
class Follow {
  readonly stop = new AbortController();
  readonly #readers = new Set<Reader>();
  readonly #recent: Entry[] = [];
  #recentChars = 0;
  readonly #bounds: Bounds;
  readonly #gone: () => void;
  /** Every line at or after this time is in `#recent` or still to come. */
  #coveredFrom: number;
  #lastTs: number | undefined;
  #atLastTs = 0;
  #roomWake: (() => void) | null = null;
  #ended = false;

  constructor(from: Position, bounds: Bounds, gone: () => void) {
    this.#bounds = bounds;
    this.#gone = gone;
    this.#coveredFrom = from.ts ?? -Infinity;
  }

  /** Whether every line after `position` is kept here or still to come. */
  covers(position: Position): boolean {
    return position.ts === undefined ? this.#coveredFrom === -Infinity : position.ts >= this.#coveredFrom;
  }

  join(position: Position, bounds: Bounds): Reader {
    const reader = new Reader(this, position, bounds);
    for (const e of this.#recent) reader.offer(e);
    if (this.#ended) reader.end(null);
    else this.#readers.add(reader);
    return reader;
  }

  add(line: OutputLine): void {
    if (line.ts === this.#lastTs) this.#atLastTs++;
    else {
      this.#lastTs = line.ts;
      this.#atLastTs = 0;
    }
    const entry: Entry = { ts: line.ts, line: line.line, ordinal: this.#atLastTs };
    this.#recent.push(entry);
    this.#recentChars += entry.line.length;
    while (
      this.#recent.length > this.#bounds.lines ||
      (this.#recentChars > this.#bounds.chars && this.#recent.length > 1)
    ) {
      const gone = this.#recent.shift()!;
      this.#recentChars -= gone.line.length;
      this.#coveredFrom = Math.max(this.#coveredFrom, gone.ts + 1);
    }
    for (const reader of this.#readers) if (!reader.offer(entry)) this.#readers.delete(reader);
  }

  /** Waits while every reader has half its room filled: the follow goes at its fastest reader's pace. */
  async room(): Promise<void> {
    while (!this.stop.signal.aborted && this.#readers.size > 0 && [...this.#readers].every((r) => r.halfFull()))
      await new Promise<void>((resolve) => (this.#roomWake = resolve));
  }

  /** A reader took a line or left: the follow may go on. */
  wake(): void {
    const wake = this.#roomWake;
    this.#roomWake = null;
    wake?.();
  }

  leave(reader: Reader): void {
    this.#readers.delete(reader);
    if (this.#readers.size === 0 && !this.#ended) {
      this.#ended = true;
      this.#gone();
      this.stop.abort();
    }
    this.wake();
  }

  /** The output ended (or failed, `error`): every reader ends after its lines. */
  end(error: unknown): void {
    this.#ended = true;
    this.#gone();
    const failure =
      error === null || error instanceof Error ? error : new Error('the output could not be read', { cause: error });
    for (const reader of this.#readers) reader.end(failure);
    this.#readers.clear();
    this.wake();
  }
}

/** One reader of a follow: the lines waiting for it, bounded. */
class Reader {
  readonly #follow: Follow;
  readonly #after: Position;
  readonly #bounds: Bounds;
  readonly #waiting: Entry[] = [];
  #chars = 0;
  #ended = false;
  #error: Error | null = null;
  #wake: (() => void) | null = null;

  constructor(follow: Follow, after: Position, bounds: Bounds) {
    this.#follow = follow;
    this.#after = after;
    this.#bounds = bounds;
  }

  halfFull(): boolean {
    return this.#waiting.length * 2 >= this.#bounds.lines || this.#chars * 2 >= this.#bounds.chars;
  }

  /** A line of the follow: taken unless this reader has it already; false when it is full and ended. */
  offer(e: Entry): boolean {
    if (this.#ended) return false;
    const after = this.#after;
    if (after.ts !== undefined && (e.ts < after.ts || (e.ts === after.ts && e.ordinal < after.seen))) return true;
    if (this.#waiting.length + 1 > this.#bounds.lines || this.#chars + e.line.length > this.#bounds.chars) {
      this.end(new OutputReaderBehind(this.#bounds.lines));
      return false;
    }
    this.#waiting.push(e);
    this.#chars += e.line.length;
    this.#wakeUp();
    return true;
  }

  end(error: Error | null): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    this.#wakeUp();
  }

  async *lines(signal: AbortSignal): AsyncGenerator<OutputLine> {
    const onAbort = (): void => this.#wakeUp();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        if (signal.aborted) return;
        const e = this.#waiting.shift();
        if (e) {
          this.#chars -= e.line.length;
          this.#follow.wake();
          yield { ts: e.ts, line: e.line };
          continue;
        }
        if (this.#ended) {
          if (this.#error) throw this.#error;
          return;
        }
        await new Promise<void>((resolve) => (this.#wake = resolve));
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.#ended = true;
      this.#follow.leave(this);
    }
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}

/**
 * The last `tail` lines kept (of those since `sinceMs`), with `at` placed after the last of them.
 * A tail that begins inside the lines of one millisecond does not say how many of that millisecond
 * came before it: when all its lines share one time, that millisecond is read whole instead (the
 * same tail, as of a moment later), so `at` counts every line of it.
 */
export async function keptTail(
  read: ReadOutput,
  id: string,
  query: OutputQuery & { tail: number },
  at: Position,
): Promise<OutputLine[]> {
  const kept: OutputLine[] = [];
  for await (const l of read(id, { ...query, follow: false })) kept.push(l);
  const first = kept[0];
  if (first === undefined || kept.length < query.tail || first.ts !== kept[kept.length - 1]!.ts) {
    for (const l of kept) advance(at, l.ts);
    return kept;
  }
  let whole: OutputLine[] = [];
  at.ts = undefined;
  at.seen = 0;
  for await (const l of read(id, { follow: false, signal: query.signal, sinceMs: first.ts })) {
    advance(at, l.ts);
    whole.push(l);
    if (whole.length >= 2 * query.tail) whole = whole.slice(-query.tail);
  }
  return whole.slice(-query.tail);
}

/** A line at `ts` was read. */
function advance(at: Position, ts: number): void {
  if (ts === at.ts) at.seen++;
  else {
    at.ts = ts;
    at.seen = 1;
  }
}
