/**
 * The server's own log lines, written to their destination a batch at a time.
 *
 * At the default level every request leaves one line ("request completed"). Written one by one,
 * each line is a write to stdout, and whatever reads stdout (a terminal, `docker logs`, journald,
 * the process that started the server) is woken for it: on a 2-core machine that wake-up competes
 * with the server and its clients for the cores. Measured with the worker in its own process
 * (bench/runsync-latency.ts --only deployed), the line-per-request writes cost ~120–150 µs of
 * server CPU per request and doubled warm `/runsync`'s p50 on a machine where waking a process is
 * dear. Here lines wait at most `maxDelayMs` (or until `maxChars` characters are waiting), then go out in one
 * write; a line at `urgentLevel` or above (warn, error, fatal) goes out at once with everything
 * before it, so a problem is never late and the order of lines is kept. At exit whatever waits is
 * written synchronously.
 */

import pino from 'pino';

/** Where batches go: pino's destination (sonic-boom) in the server, a recorder in tests. */
export interface LogSink {
  write(text: string): unknown;
  /** Calls back once what the sink holds is written (pino's `logger.flush(cb)`). */
  flush?(done: (err?: Error) => void): void;
  /** Writes whatever the sink itself still holds, synchronously (at exit). */
  flushSync?(): void;
}

/** How the batch's timer is set; tests pass a scheduler they fire themselves. */
export interface LogFlushScheduler {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export interface CoalescedOutputOptions {
  /** Longest a line waits, ms. @default 100 */
  maxDelayMs?: number;
  /** Characters waiting that start a write at once. @default 16384 */
  maxChars?: number;
  /** pino level at and above which a line is written at once (40 = warn). @default 40 */
  urgentLevel?: number;
  scheduler?: LogFlushScheduler;
}

const unrefTimers: LogFlushScheduler = {
  set: (fn, ms) => setTimeout(fn, ms).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

const LEVEL_PREFIX = '{"level":';

/**
 * The numeric level pino writes first on each line (`{"level":30,…`), or Infinity when the line
 * does not start that way (not pino's JSON: written at once, never held back).
 */
export function lineLevel(line: string): number {
  if (!line.startsWith(LEVEL_PREFIX)) return Infinity;
  let level = 0;
  let i = LEVEL_PREFIX.length;
  for (; i < line.length; i++) {
    const digit = line.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) break;
    level = level * 10 + digit;
  }
  return i === LEVEL_PREFIX.length ? Infinity : level;
}

/** A pino destination stream that batches lines into few writes (see the top of this file). */
export class CoalescedOutput {
  readonly #sink: LogSink;
  readonly #maxDelayMs: number;
  readonly #maxChars: number;
  readonly #urgentLevel: number;
  readonly #scheduler: LogFlushScheduler;
  #lines: string[] = [];
  #chars = 0;
  #timer: unknown = null;

  constructor(sink: LogSink, options: CoalescedOutputOptions = {}) {
    this.#sink = sink;
    this.#maxDelayMs = options.maxDelayMs ?? 100;
    this.#maxChars = options.maxChars ?? 16_384;
    this.#urgentLevel = options.urgentLevel ?? 40;
    this.#scheduler = options.scheduler ?? unrefTimers;
  }

  write(line: string): void {
    this.#lines.push(line);
    this.#chars += line.length;
    if (this.#chars >= this.#maxChars || lineLevel(line) >= this.#urgentLevel) return this.flush();
    if (this.#timer === null)
      this.#timer = this.#scheduler.set(() => {
        this.#timer = null;
        this.flush();
      }, this.#maxDelayMs);
  }

  /** Lines waiting to be written. */
  get waiting(): number {
    return this.#lines.length;
  }

  /**
   * Writes the waiting lines now, in one write; `done` (pino's `logger.flush(cb)`) is called once
   * the sink has written them too.
   */
  flush(done?: (err?: Error) => void): void {
    if (this.#timer !== null) {
      this.#scheduler.clear(this.#timer);
      this.#timer = null;
    }
    if (this.#lines.length > 0) {
      const text = this.#lines.length === 1 ? this.#lines[0]! : this.#lines.join('');
      this.#lines = [];
      this.#chars = 0;
      this.#sink.write(text);
    }
    if (!done) return;
    if (this.#sink.flush) this.#sink.flush(done);
    else done();
  }

  /** Writes the waiting lines and whatever the sink holds, synchronously: for exit. */
  flushSync(): void {
    this.flush();
    this.#sink.flushSync?.();
  }
}

let stdoutOutput: CoalescedOutput | null = null;

/**
 * The process's standard output as a coalesced log destination: one per process, over pino's own
 * destination (which drops lines once stdout is a closed pipe and flushes at exit), written out at
 * exit too.
 */
export function stdoutLogOutput(): CoalescedOutput {
  if (stdoutOutput) return stdoutOutput;
  const output = new CoalescedOutput(pino.destination({ dest: 1, sync: false }));
  process.once('exit', () => {
    try {
      output.flushSync();
    } catch {
      // exiting, with stdout gone: nowhere left to say so
    }
  });
  stdoutOutput = output;
  return output;
}

/** Writes the standard-output log's waiting lines now (before printing beside them); nothing when there is none. */
export const flushStdoutLog = (): void => stdoutOutput?.flush();
