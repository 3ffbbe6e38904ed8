/**
 * The shared follow over an instance's output, driven line by line over an output in memory that
 * behaves as the runtime port says `output()` does (test/support/memory-output.ts), so each test
 * decides exactly when a line is written. The real outputs are shared the same way in their own
 * tests: the Docker engine's log in src/runtime/docker/docker-output.test.ts, a fleet host's in
 * src/fleet/fleet-output.docker.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryOutput } from '../../test/support/memory-output.js';
import type { OutputLine, OutputQuery } from './runtime.js';
import { OutputReaderBehind, SharedOutput } from './shared-output.js';

/** A reader of the shared output, pulled by the test: all at once, or one line at a time. */
class Reader {
  readonly got: OutputLine[] = [];
  readonly stop = new AbortController();
  error: unknown = null;
  done = false;
  readonly #it: AsyncIterator<OutputLine>;
  #pulling = false;

  constructor(shared: SharedOutput, query: Partial<OutputQuery>) {
    this.#it = shared.read('pod1', { follow: true, signal: this.stop.signal, ...query })[Symbol.asyncIterator]();
  }

  /** Takes lines as they come until the output ends or the reader is stopped. */
  readAll(): void {
    if (this.#pulling) return;
    this.#pulling = true;
    void (async () => {
      while (!this.done) await this.#next();
    })();
  }

  /** Takes one line (or the end). */
  async takeOne(): Promise<void> {
    await this.#next();
  }

  get lines(): string[] {
    return this.got.map((l) => l.line);
  }

  async #next(): Promise<void> {
    try {
      const r = await this.#it.next();
      if (r.done) this.done = true;
      else this.got.push(r.value);
    } catch (err) {
      this.error = err;
      this.done = true;
    }
  }
}

/** Waits until `check` holds, turning the event loop (no clock: every step here is a promise). */
async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (check()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.fail(`${what} did not happen`);
}

test('many readers of one instance share one follow of its output: each gets its own kept lines, then the live ones, in order, with nothing missed or repeated at the seam', async () => {
  const output = new MemoryOutput();
  const shared = new SharedOutput(output.read);
  output.append(1, 'a1', 'a2');
  output.append(2, 'b1', 'b2', 'b3');
  const readers: Array<{ reader: Reader; from: number }> = [];
  const open = async (query: Partial<OutputQuery>, expectKept: number): Promise<void> => {
    const reader = new Reader(shared, query);
    readers.push({ reader, from: output.lines.length - expectKept });
    reader.readAll();
    await until('its kept lines', () => reader.got.length >= expectKept);
  };
  await open({ tail: 2 }, 2);
  await open({ sinceMs: 2 }, 3);
  // A seam inside one millisecond: lines of time 3 before a reader joins and after.
  output.append(3, 'c1', 'c2');
  await until('the live lines reach the readers', () => readers.every((r) => r.reader.got.length >= 4));
  await open({ tail: 3 }, 3);
  output.append(3, 'c3');
  await open({}, output.lines.length);
  output.append(4, 'd1');
  await open({ tail: 1 }, 1);
  output.append(4, 'd2');
  output.append(5, 'e1', 'e2', 'e3');
  output.end();
  await until('every reader ends with the output', () => readers.every((r) => r.reader.done));
  for (const { reader, from } of readers)
    assert.deepEqual(
      reader.lines,
      output.lines.slice(from).map((l) => l.line),
      `a reader from line ${from}`,
    );
  assert.equal(output.followsOpened, 1, 'one follow of the output for all of them');
  assert.equal(shared.follows, 0, 'the follow is gone with the output');
});

test('a reader joining the follow after the lines it keeps for joiners reads the lines in between on its own first', async () => {
  const output = new MemoryOutput();
  const shared = new SharedOutput(output.read, { recentLines: 2 });
  output.append(1, 'old');
  const first = new Reader(shared, { tail: 1 });
  first.readAll();
  await until('the first reader reads', () => first.got.length === 1);
  for (let i = 0; i < 6; i++) output.append(10 + i, `new${i}`);
  await until('the first reader follows', () => first.got.length === 7);
  // Its last kept line (time 1) is older than what the follow still holds: it is read again on its own.
  const late = new Reader(shared, { sinceMs: 0, tail: 1 });
  late.readAll();
  await until('the late reader catches up', () => late.got.length === 1);
  output.append(20, 'live');
  output.end();
  await until('both end', () => first.done && late.done);
  assert.deepEqual(late.lines, ['new5', 'live']);
  assert.deepEqual(first.lines, ['old', 'new0', 'new1', 'new2', 'new3', 'new4', 'new5', 'live']);
  assert.equal(output.mostFollows, 1);
});

test('a slow reader does not stall the others: once it falls a full room behind it is ended, after the lines it holds, with OutputReaderBehind', async () => {
  const output = new MemoryOutput();
  const shared = new SharedOutput(output.read, { readerLines: 10 });
  const fast = new Reader(shared, { tail: 0 });
  const slow = new Reader(shared, { tail: 0 });
  fast.readAll();
  // The slow one joins, then reads no more.
  const joined = slow.takeOne();
  await until('both follow', () => shared.follows === 1);
  for (let i = 0; i < 100; i++) output.append(i, `line ${i}`);
  await until('the fast reader has every line', () => fast.got.length === 100);
  await joined;
  while (!slow.done) await slow.takeOne();
  assert.ok(slow.error instanceof OutputReaderBehind, String(slow.error));
  assert.match((slow.error as Error).message, /fell more than 10 lines behind/);
  assert.ok(slow.got.length >= 1 && slow.got.length <= 11, `the slow reader got what it held: ${slow.got.length}`);
  assert.deepEqual(slow.lines, fast.lines.slice(0, slow.got.length), 'in order, up to where it was ended');
  fast.stop.abort();
  await until('the follow closes with its last reader', () => output.follows === 0 && shared.follows === 0);
});

test('a lone reader never loses a line however slowly it reads: the follow waits for it, holding at most its room', async () => {
  const output = new MemoryOutput();
  const shared = new SharedOutput(output.read, { readerLines: 4 });
  const reader = new Reader(shared, { tail: 0 });
  const first = reader.takeOne();
  await until('it follows', () => shared.follows === 1);
  for (let i = 0; i < 50; i++) output.append(i, `line ${i}`);
  await first;
  while (reader.got.length < 50) {
    await reader.takeOne();
    // Taken from the output but not yet by the reader: never more than its room.
    assert.ok(output.taken - reader.got.length <= 4, `${output.taken - reader.got.length} lines held`);
  }
  assert.equal(reader.error, null);
  assert.deepEqual(
    reader.lines,
    output.lines.map((l) => l.line),
  );
  reader.stop.abort();
  await reader.takeOne();
  assert.equal(reader.done, true);
});

test('the follow is closed when its last reader leaves, and a later reader opens a new one', async () => {
  const output = new MemoryOutput();
  const shared = new SharedOutput(output.read);
  output.append(1, 'a');
  const a = new Reader(shared, {});
  const b = new Reader(shared, {});
  a.readAll();
  b.readAll();
  await until('both follow', () => a.got.length === 1 && b.got.length === 1 && output.follows === 1);
  a.stop.abort();
  await until('a is gone', () => a.done);
  assert.equal(output.follows, 1, 'b still follows');
  output.append(2, 'b');
  await until('b reads on', () => b.got.length === 2);
  b.stop.abort();
  await until('the follow is closed', () => output.follows === 0 && shared.follows === 0);
  const c = new Reader(shared, { tail: 1 });
  c.readAll();
  await until('c follows', () => c.got.length === 1 && output.follows === 1);
  output.append(3, 'c');
  await until('c reads the new line', () => c.got.length === 2);
  assert.deepEqual(c.lines, ['b', 'c']);
  assert.equal(output.followsOpened, 2);
  shared.close();
  await until('close ends every follow', () => c.done && output.follows === 0);
});

test('only new lines (tail 0) start after the last kept line; a read without follow is the output as it is', async () => {
  const output = new MemoryOutput();
  const shared = new SharedOutput(output.read);
  output.append(1, 'kept1', 'kept2');
  const live = new Reader(shared, { tail: 0 });
  live.readAll();
  await until('it follows', () => output.follows === 1);
  output.append(2, 'new');
  await until('the new line', () => live.got.length === 1);
  assert.deepEqual(live.lines, ['new']);
  const once: string[] = [];
  for await (const l of shared.read('pod1', { follow: false, signal: new AbortController().signal })) once.push(l.line);
  assert.deepEqual(once, ['kept1', 'kept2', 'new']);
  assert.equal(output.followsOpened, 1);
  live.stop.abort();
});
