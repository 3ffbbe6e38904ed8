/**
 * The process runtime's `output()`: a child writes its stdout and stderr straight to
 * `output.log` (output-log.ts) with no times. One shared timer reads the new bytes of every live
 * instance's `output.log` and appends them, one line each with the time it was read, to
 * `output.stamped.log` in the instance's folder; readers read that file and follow it.
 *
 * Why a second file rather than stamping through a pipe: the child keeps writing to a file of its
 * own, so its output still costs the server nothing per line and survives a server crash, and the
 * times are as close as the interval (250 ms by default). The stamped file is rotated to
 * `output.stamped.log.1` past `maxBytes` (two files kept), like `output.log`; both stay when the
 * instance stops (its output stays readable) and go with its folder on `remove()`.
 */
import { EventEmitter } from 'node:events';
import { appendFile, open, rename, stat, type FileHandle } from 'node:fs/promises';
import {
  fileAt,
  lastLineEnd,
  linesOf,
  readLinesBackward,
  readLinesFrom,
  readRange,
  stampLine,
} from './stamped-lines.js';
import { join } from 'node:path';
import type { Clock } from '../../domain/clock.js';
import type { OutputLine, OutputQuery } from '../runtime.js';
import { DEFAULT_MAX_LOG_BYTES } from './output-log.js';
import { instanceDirOf } from './orphans.js';

/** A live instance's output.log, as the runtime holds it; a new object is a new run. */
export interface StampedLog {
  logPath: string;
  /** where this run's output begins in output.log */
  logOffset: number;
}

export interface OutputStamperOptions {
  dataDir: string;
  clock: Clock;
  /** @default 250 */
  intervalMs?: number;
  /** The stamped file is rotated past this size. @default 10 MiB */
  maxBytes?: number;
}

/** A line longer than this is cut into pieces (a process printing without newlines). */
const MAX_LINE_BYTES = 16 * 1024;
/** Most bytes of one instance stamped per pass: a flood is stamped over several passes, never held whole. */
const MAX_PASS_BYTES = 4 * 1024 * 1024;

interface Tracked {
  run: StampedLog;
  /** next byte of output.log to read */
  offset: number;
  /** an unfinished line */
  partial: Buffer;
}

export const stampedPathOf = (dataDir: string, id: string): string =>
  join(instanceDirOf(dataDir, id), 'output.stamped.log');

export class OutputStamper {
  readonly #o: OutputStamperOptions;
  readonly #live: () => Iterable<[string, StampedLog]>;
  readonly #tracked = new Map<string, Tracked>();
  readonly #events = new EventEmitter();
  #timer: NodeJS.Timeout | null = null;
  #ticking: Promise<void> | null = null;
  /** Counts stamps and ends, so a reader that looked before one waits for nothing. */
  #version = 0;

  /** `live`: the live instances with a process, by id. */
  constructor(options: OutputStamperOptions, live: () => Iterable<[string, StampedLog]>) {
    this.#o = options;
    this.#live = live;
    this.#events.setMaxListeners(0);
  }

  /** Takes up the instances started since the last pass (so one that ends at once is stamped too), and starts the timer unless it runs. */
  watch(): void {
    void this.tick();
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.tick(), this.#o.intervalMs ?? 250);
    this.#timer.unref();
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** One pass: stamps what every live instance wrote since the last; finishes the instances that ended. */
  tick(): Promise<void> {
    this.#ticking ??= this.#pass().finally(() => (this.#ticking = null));
    return this.#ticking;
  }

  /** A full pass after any under way: an instance gone by now has all its output stamped once this resolves. */
  async finish(): Promise<void> {
    await this.#ticking;
    await this.tick();
  }

  async #pass(): Promise<void> {
    const live = new Map(this.#live());
    for (const [id, run] of live) {
      let t = this.#tracked.get(id);
      if (!t || t.run !== run) this.#tracked.set(id, (t = { run, offset: run.logOffset, partial: Buffer.alloc(0) }));
      await this.#stamp(id, t, false).catch(() => undefined);
    }
    for (const [id, t] of this.#tracked) {
      if (live.has(id)) continue;
      await this.#stamp(id, t, true).catch(() => undefined);
      this.#tracked.delete(id);
      this.#signal(id);
    }
  }

  /** Whether the instance is live or its last output is still to be stamped. */
  #following(id: string): boolean {
    if (this.#tracked.has(id)) return true;
    for (const [live] of this.#live()) if (live === id) return true;
    return false;
  }

  async #stamp(id: string, t: Tracked, final: boolean): Promise<void> {
    const path = t.run.logPath;
    let size = (await stat(path).catch(() => null))?.size ?? 0;
    const chunks: Buffer[] = [];
    if (size < t.offset) {
      // output.log was copy-truncated: the rest of what we had not read is in output.log.1.
      chunks.push(await readRange(`${path}.1`, t.offset, t.offset + MAX_PASS_BYTES));
      t.offset = 0;
    }
    if (size > t.offset) {
      const end = Math.min(size, t.offset + MAX_PASS_BYTES);
      chunks.push(await readRange(path, t.offset, end));
      t.offset = end;
    }
    const bytes = Buffer.concat([t.partial, ...chunks]);
    const now = this.#o.clock.now();
    let text = '';
    let from = 0;
    for (
      let nl = bytes.indexOf(10, from);
      nl !== -1 || bytes.length - from > MAX_LINE_BYTES;
      nl = bytes.indexOf(10, from)
    ) {
      const end = nl === -1 || nl - from > MAX_LINE_BYTES ? from + MAX_LINE_BYTES : nl;
      text += stampLine(now, bytes.subarray(from, end));
      from = end === nl ? nl + 1 : end;
    }
    t.partial = Buffer.from(bytes.subarray(from));
    if (final && t.partial.length > 0) {
      text += stampLine(now, t.partial);
      t.partial = Buffer.alloc(0);
    }
    if (text === '') return;
    const stamped = stampedPathOf(this.#o.dataDir, id);
    await appendFile(stamped, text);
    size = (await stat(stamped)).size;
    if (size > (this.#o.maxBytes ?? DEFAULT_MAX_LOG_BYTES)) await rename(stamped, `${stamped}.1`);
    this.#signal(id);
  }

  /** The instance's stamped output (the runtime port's `output()`). */
  async *read(id: string, query: OutputQuery): AsyncGenerator<OutputLine> {
    const path = stampedPathOf(this.#o.dataDir, id);
    // Up to the current file's last whole line; the rest is read when following.
    let position = await fileAt(path);
    position = { ...position, size: await lastLineEnd(path, position.size) };
    if (query.tail === undefined && query.sinceMs === undefined) {
      // Everything kept, oldest first, a chunk at a time.
      for await (const line of readLinesFrom(`${path}.1`, 0, query.signal)) if (!query.signal.aborted) yield line;
      for await (const line of readLinesFrom(path, 0, query.signal, position.size))
        if (!query.signal.aborted) yield line;
    } else {
      // The newest lines first, back to `tail` lines or to `sinceMs` (lines are in time order):
      // what is held is what is answered, never the whole file.
      const newest: OutputLine[] = [];
      const enough = (line: OutputLine): boolean =>
        (query.sinceMs !== undefined && line.ts < query.sinceMs) ||
        (query.tail !== undefined && newest.length >= query.tail);
      let done = false;
      for (const [file, end] of [
        [path, position.size],
        [`${path}.1`, Infinity],
      ] as const) {
        if (done) break;
        for await (const line of readLinesBackward(file, end)) {
          if (enough(line)) {
            done = true;
            break;
          }
          newest.push(line);
        }
      }
      for (let i = newest.length - 1; i >= 0; i--) {
        if (query.signal.aborted) return;
        yield newest[i]!;
      }
    }
    if (!query.follow) return;

    while (!query.signal.aborted) {
      const version = this.#version;
      const following = this.#following(id);
      const now = await fileAt(path);
      let handle: FileHandle | null = null;
      try {
        if (now.ino !== position.ino && position.ino !== 0) {
          // Rotated: the rest of the file we were reading is now `.1`.
          for await (const line of readLinesFrom(`${path}.1`, position.size, query.signal))
            if (!query.signal.aborted) yield line;
          position = { ino: now.ino, size: 0 };
        }
        if (now.size > position.size) {
          handle = await open(path, 'r');
          let read = 0;
          for await (const line of linesOf(handle, position.size, now.size, (n) => (read = n), query.signal))
            if (!query.signal.aborted) yield line;
          position = { ino: now.ino, size: position.size + read };
          continue;
        }
      } finally {
        await handle?.close();
      }
      if (!following) return;
      // each stamp and each end wakes it; the timeout is a fallback
      if (version === this.#version) await this.#changed(id, query.signal, 30_000);
    }
  }

  #signal(id: string): void {
    this.#version++;
    this.#events.emit(id);
  }

  #changed(id: string, signal: AbortSignal, maxMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#events.off(id, done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, maxMs);
      this.#events.on(id, done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
