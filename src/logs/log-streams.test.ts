import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../domain/clock.js';
import type { OutputLine, OutputQuery } from '../runtime/runtime.js';
import type { SystemLogRow } from '../store/system-log-store.js';
import { parseEventId } from './log-cursor.js';
import { LogStreams, afterCursor, mergeByTs, type LogEntry, type LogEvent, type LogTarget } from './log-streams.js';
import { SharedOutput } from '../runtime/shared-output.js';
import { MemoryOutput } from '../../test/support/memory-output.js';
import { settle } from '../../test/support/fake-timers.js';

/** A system log with no lines that never wakes a follower before its timeout. */
const quietSystemLog = {
  version: 0,
  read: async (): Promise<SystemLogRow[]> => [],
  changed: (_id: string, signal: AbortSignal, maxWaitMs = 15_000) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, maxWaitMs);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    }),
};
const alive: LogTarget = { instanceId: 'pod1', alive: async () => true };

describe('log streams', () => {
  test('a reader that stops taking lines stops the source: at most the queue is read ahead, not the whole output', async () => {
    let produced = 0;
    const runtime = {
      async *output(_id: string, q: OutputQuery): AsyncGenerator<OutputLine> {
        if (!q.follow) return;
        // an instance printing far more than the queue holds, then nothing until the reader leaves
        while (!q.signal.aborted && produced < 10_000) {
          produced++;
          yield { ts: 1_000 + produced, line: `line ${produced}` };
        }
        if (!q.signal.aborted) await new Promise((r) => q.signal.addEventListener('abort', r, { once: true }));
      },
    };
    const streams = new LogStreams({
      runtime,
      systemLog: quietSystemLog,
      clock: new FakeClock(1_000),
      bufferLines: 16,
    });
    const abort = new AbortController();
    const it = streams.open(alive, { start: { tail: 0 }, signal: abort.signal })[Symbol.asyncIterator]();
    try {
      assert.equal((await it.next()).value?.line, 'line 1');
      // Every callback pending has run: a source the queue did not hold back would have read on.
      await settle();
      assert.ok(produced <= 16 + 3, `the source ran ahead by ${produced} lines`);
    } finally {
      abort.abort();
      await it.return?.(undefined);
    }
  });

  test("output the runtime cannot read now is told as the stream's last platform line, after the kept platform lines", async () => {
    const runtime = {
      async *output(): AsyncGenerator<OutputLine> {
        throw new Error(
          'host h1 unreachable since 2026-01-01T00:00:00.000Z: the output stays on the host until its agent is back',
        );
      },
    };
    const systemLog = {
      ...quietSystemLog,
      read: async (): Promise<SystemLogRow[]> => [{ seq: 1, ts: 500, line: 'placed on host h1' } as SystemLogRow],
    };
    const streams = new LogStreams({ runtime, systemLog, clock: new FakeClock(1_000) });
    const stopped: LogTarget = { instanceId: 'pod1', alive: async () => false };
    const lines: string[] = [];
    for await (const e of streams.open(stopped, { start: { tail: 100 }, signal: new AbortController().signal }))
      lines.push(`${e.source}: ${e.line}`);
    assert.deepEqual(lines, [
      'system: placed on host h1',
      'system: container output unavailable: host h1 unreachable since 2026-01-01T00:00:00.000Z: the output stays on the host until its agent is back',
    ]);
  });

  test("a tail that begins inside one millisecond's lines joins the live lines with none repeated or lost", async () => {
    const output = new MemoryOutput();
    output.append(5, 'a', 'b', 'c');
    const streams = new LogStreams({
      runtime: { output: output.read },
      systemLog: quietSystemLog,
      clock: new FakeClock(1_000),
    });
    const abort = new AbortController();
    const lines: string[] = [];
    const reading = (async () => {
      for await (const e of streams.open(alive, { start: { tail: 2 }, signal: abort.signal })) {
        lines.push(e.line);
        if (lines.length === 2) output.append(5, 'd');
        if (lines.length === 3) output.append(6, 'e');
        if (lines.length === 4) abort.abort();
      }
    })();
    await reading;
    assert.deepEqual(lines, ['b', 'c', 'd', 'e']);
  });

  test('a reader that falls far behind the output other readers share is ended, its last event saying so; the other reads on', async () => {
    const output = new MemoryOutput();
    const shared = new SharedOutput(output.read, { readerLines: 10 });
    const streams = new LogStreams({
      runtime: { output: (id, q) => shared.read(id, q) },
      systemLog: quietSystemLog,
      clock: new FakeClock(1_000),
      bufferLines: 4,
    });
    const fast = new AbortController();
    const slow = new AbortController();
    const fastLines: string[] = [];
    const fastReading = (async () => {
      for await (const e of streams.open(alive, { start: { tail: 0 }, signal: fast.signal })) {
        fastLines.push(e.line);
        if (fastLines.length === 100) fast.abort();
      }
    })();
    const slowIt = streams.open(alive, { start: { tail: 0 }, signal: slow.signal })[Symbol.asyncIterator]();
    const first = slowIt.next();
    while (output.follows === 0) await new Promise((r) => setImmediate(r));
    for (let i = 0; i < 100; i++) output.append(2_000 + i, `line ${i}`);
    await fastReading;
    assert.equal(fastLines.length, 100, 'the fast reader read every line');
    const slowEvents: LogEvent[] = [(await first).value as LogEvent];
    for (let r = await slowIt.next(); !r.done; r = await slowIt.next()) slowEvents.push(r.value);
    const last = slowEvents[slowEvents.length - 1]!;
    assert.equal(last.source, 'system');
    assert.match(
      last.line,
      /^log stream ended: this reader fell more than 10 lines behind the container's output; reconnect with Last-Event-ID/,
    );
    assert.deepEqual(
      slowEvents.slice(0, -1).map((e) => e.line),
      fastLines.slice(0, slowEvents.length - 1),
      'what it read before, in order',
    );
    assert.ok(parseEventId(last.id), 'the last event has an id to resume from');
    slow.abort();
  });

  test('sources merge by time, system first at equal times, each in its own order', () => {
    const s = (ts: number, line: string): LogEntry => ({ ts, source: 'system', line });
    const c = (ts: number, line: string): LogEntry => ({ ts, source: 'container', line });
    assert.deepEqual(
      mergeByTs([s(1, 'placed'), s(3, 'started'), s(9, 'stopped')], [c(3, 'a'), c(3, 'b'), c(5, 'c')]).map(
        (e) => e.line,
      ),
      ['placed', 'started', 'a', 'b', 'c', 'stopped'],
    );
  });

  test('a resume cursor skips the lines up to its ordinal at its time; a plain time skips every line at it', () => {
    const lines = [1, 2, 2, 2, 3].map((ts, i): LogEntry => ({ ts, source: 'container', line: String(i) }));
    assert.deepEqual(
      afterCursor(lines, { ts: 2, ordinal: 0 }).map((e) => e.line),
      ['2', '3', '4'],
    );
    assert.deepEqual(
      afterCursor(lines, { ts: 2, ordinal: 2 }).map((e) => e.line),
      ['4'],
    );
    assert.deepEqual(
      afterCursor(lines, { ts: 2, ordinal: null }).map((e) => e.line),
      ['4'],
    );
  });

  test('ids count lines per time, and a live line older than the one before it (another source) takes that time in its id, so ids never go back', async () => {
    const runtime = {
      async *output(_id: string, q: OutputQuery): AsyncGenerator<OutputLine> {
        if (!q.follow)
          return yield* [
            { ts: 5_000, line: 'a' },
            { ts: 5_000, line: 'b' },
          ];
        yield { ts: 6_000, line: 'c' };
        await new Promise((r) => q.signal.addEventListener('abort', r, { once: true }));
      },
    };
    let reads = 0;
    let sawC!: () => void;
    const readerSawC = new Promise<void>((resolve) => (sawC = resolve));
    const systemLog = {
      ...quietSystemLog,
      // nothing kept; then, once the reader has the container's last line, a line stamped before it
      read: async (): Promise<SystemLogRow[]> => {
        if (++reads === 1) return [];
        if (reads > 2) return [];
        await readerSawC;
        return [{ seq: 1, instanceId: 'pod1', ts: 5_500, line: 'late' }];
      },
    };
    const streams = new LogStreams({ runtime, systemLog, clock: new FakeClock(7_000) });
    const abort = new AbortController();
    const events: string[] = [];
    for await (const e of streams.open(alive, { start: { tail: 100 }, signal: abort.signal })) {
      events.push(`${e.id} ${e.line}`);
      if (e.line === 'c') sawC();
      if (events.length === 4) abort.abort();
    }
    assert.deepEqual(events, [
      '1970-01-01T00:00:05.000Z/000000000000 a',
      '1970-01-01T00:00:05.000Z/000000000001 b',
      '1970-01-01T00:00:06.000Z/000000000000 c',
      '1970-01-01T00:00:06.000Z/000000000001 late',
    ]);
    const ids = events.map((e) => e.split(' ')[0]!);
    assert.deepEqual(parseEventId(ids[1]!), { ts: 5_000, ordinal: 1 });
    assert.deepEqual(parseEventId('2026-06-01T12:02:03Z'), { ts: Date.UTC(2026, 5, 1, 12, 2, 3), ordinal: null });
    assert.equal(parseEventId('2026-06-01T12:02:03Z/x'), null);
    assert.equal(parseEventId('yesterday'), null);
  });

  test('server shutdown ends every open stream', async () => {
    let reading!: () => void;
    const outputRead = new Promise<void>((resolve) => (reading = resolve));
    const runtime = {
      async *output(_id: string, q: OutputQuery): AsyncGenerator<OutputLine> {
        reading();
        await new Promise((r) => q.signal.addEventListener('abort', r, { once: true }));
      },
    };
    const streams = new LogStreams({ runtime, systemLog: quietSystemLog, clock: new FakeClock(1) });
    const streaming = (async () => {
      for await (const _ of streams.open(alive, { start: { tail: 0 }, signal: new AbortController().signal })) void _;
    })();
    // the stream is open and waits on the instance's output
    await outputRead;
    streams.close();
    await streaming;
  });
});
