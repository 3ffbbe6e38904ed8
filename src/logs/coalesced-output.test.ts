import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoalescedOutput, lineLevel, type LogFlushScheduler } from './coalesced-output.js';

/** A scheduler whose one pending timer fires only when the test says so. */
function manualTimers(): LogFlushScheduler & { pending: number; fire(): void; lastMs: number } {
  let next: (() => void) | null = null;
  const s = {
    pending: 0,
    lastMs: 0,
    set(fn: () => void, ms: number) {
      next = fn;
      s.pending++;
      s.lastMs = ms;
      return fn;
    },
    clear(handle: unknown) {
      if (handle === next) {
        next = null;
        s.pending--;
      }
    },
    fire() {
      const fn = next;
      next = null;
      s.pending--;
      fn?.();
    },
  };
  return s;
}

const line = (level: number, msg: string) => `{"level":${level},"time":1,"msg":"${msg}"}\n`;

function recorder() {
  const writes: string[] = [];
  let syncFlushes = 0;
  return {
    writes,
    get syncFlushes() {
      return syncFlushes;
    },
    write: (text: string) => writes.push(text),
    flushSync: () => void syncFlushes++,
  };
}

describe('coalesced log output', () => {
  test('info lines wait for the timer, then go out together in one write, in order', () => {
    const sink = recorder();
    const timers = manualTimers();
    const out = new CoalescedOutput(sink, { scheduler: timers, maxDelayMs: 100 });
    out.write(line(30, 'a'));
    out.write(line(30, 'b'));
    out.write(line(20, 'c'));
    assert.deepEqual(sink.writes, [], 'nothing is written before the timer');
    assert.equal(timers.pending, 1, 'one timer for the batch, not one per line');
    assert.equal(timers.lastMs, 100);
    timers.fire();
    assert.deepEqual(sink.writes, [line(30, 'a') + line(30, 'b') + line(20, 'c')]);
    assert.equal(out.waiting, 0);
  });

  test('a warn or error line goes out at once, with the lines before it, and cancels the timer', () => {
    const sink = recorder();
    const timers = manualTimers();
    const out = new CoalescedOutput(sink, { scheduler: timers });
    out.write(line(30, 'request'));
    out.write(line(40, 'warned'));
    assert.deepEqual(sink.writes, [line(30, 'request') + line(40, 'warned')]);
    assert.equal(timers.pending, 0);
    out.write(line(50, 'failed'));
    assert.deepEqual(sink.writes.at(-1), line(50, 'failed'));
    assert.equal(timers.pending, 0, 'an urgent line alone sets no timer');
  });

  test('the lines go out at once when maxChars characters are waiting', () => {
    const sink = recorder();
    const timers = manualTimers();
    const out = new CoalescedOutput(sink, { scheduler: timers, maxChars: 100 });
    const l = line(30, 'x'.repeat(40));
    out.write(l);
    assert.equal(sink.writes.length, 0);
    out.write(l);
    assert.deepEqual(sink.writes, [l + l], 'two lines of 60 characters pass 100');
    assert.equal(timers.pending, 0);
  });

  test('flushSync writes what waits and flushes the sink itself (the exit path)', () => {
    const sink = recorder();
    const out = new CoalescedOutput(sink, { scheduler: manualTimers() });
    out.write(line(30, 'last words'));
    out.flushSync();
    assert.deepEqual(sink.writes, [line(30, 'last words')]);
    assert.equal(sink.syncFlushes, 1);
    out.flush();
    assert.equal(sink.writes.length, 1, 'nothing waiting: no empty write');
  });

  test("flush with a callback (pino's logger.flush) writes what waits, then calls back through the sink", () => {
    const sink = { ...recorder(), flushes: 0 };
    const out = new CoalescedOutput(
      {
        write: sink.write,
        flush: (done) => {
          sink.flushes++;
          done();
        },
      },
      { scheduler: manualTimers() },
    );
    out.write(line(30, 'a'));
    let called = 0;
    out.flush(() => called++);
    assert.deepEqual(sink.writes, [line(30, 'a')]);
    assert.equal(sink.flushes, 1);
    assert.equal(called, 1);
    const bare = new CoalescedOutput(recorder(), { scheduler: manualTimers() });
    bare.flush(() => called++);
    assert.equal(called, 2, 'a sink without flush: called back at once');
  });

  test("lineLevel reads pino's leading level; a line in any other form counts as urgent", () => {
    assert.equal(lineLevel(line(30, 'a')), 30);
    assert.equal(lineLevel(line(60, 'a')), 60);
    assert.equal(lineLevel('plain text\n'), Infinity);
    assert.equal(lineLevel('{"level":"info"}\n'), Infinity);
    assert.equal(lineLevel('{"msg":"x","level":30}\n'), Infinity);
  });
});
