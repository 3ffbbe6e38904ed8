import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { FakeTimers, settle } from '../../test/support/fake-timers.js';
import { KeyedSignal, type Waiter } from './job-signals.js';
import { longPoll, type LongPollSteps } from './long-poll.js';

const KEY = 'job-1';

/**
 * Real wake-ups (a KeyedSignal) whose timeouts run on fake timers: each waiter records the wait it
 * was given and times out when the fake clock passes it.
 */
const signals: KeyedSignal[] = [];
// ends whatever a failing test left waiting (its real timers would hold the process)
afterEach(() => {
  for (const s of signals.splice(0)) s.close();
});

function fixture() {
  const timers = new FakeTimers();
  const signal = new KeyedSignal();
  signals.push(signal);
  const timeouts: number[] = [];
  const wait = (timeoutMs: number): Waiter => {
    timeouts.push(timeoutMs);
    const waiter = signal.waiter(KEY, 2 ** 31 - 1);
    const woken = new AbortController();
    void waiter.promise.then(() => woken.abort());
    void timers.sleep(timeoutMs, woken.signal).then(() => {
      if (!woken.signal.aborted) waiter.cancel();
    });
    return waiter;
  };
  return { timers, clock: timers.clock, signal, timeouts, wait };
}

/** Steps whose reads answer `values` in turn; a read ends the wait when it is 'done'. */
function steps(
  wait: (ms: number) => Waiter,
  values: string[],
  extra: Partial<LongPollSteps<null, string, string>> = {},
) {
  let reads = 0;
  const s: LongPollSteps<null, string, string> = {
    wait: (_, ms) => wait(ms),
    read: async () => values[reads++] ?? 'nothing',
    ends: (v) => v === 'done',
    answer: (_, v) => `answer:${v}`,
    timedOut: () => 'timed out',
    ...extra,
  };
  return { steps: s, reads: () => reads };
}

describe('longPoll', () => {
  it('with no wait it reads once and answers that read, registering no waiter', { timeout: 5000 }, async () => {
    const f = fixture();
    const s = steps(f.wait, ['nothing', 'done']);
    assert.equal(await longPoll(f.clock, 0, s.steps, null), 'answer:nothing');
    assert.equal(s.reads(), 1);
    assert.deepEqual(f.timeouts, []);
  });

  it('a read that ends the wait is answered at once and leaves no waiter registered', { timeout: 5000 }, async () => {
    const f = fixture();
    const s = steps(f.wait, ['done']);
    assert.equal(await longPoll(f.clock, 1000, s.steps, null), 'answer:done');
    assert.equal(f.signal.waiting(KEY), 0);
    assert.deepEqual(f.timeouts, [1000]);
  });

  it(
    'a notification that lands during the read is not lost: the waiter is registered before the read',
    { timeout: 5000 },
    async () => {
      const f = fixture();
      let reads = 0;
      const s = steps(f.wait, [], {
        read: async () => {
          reads++;
          if (reads === 1) {
            f.signal.notify(KEY);
            return 'nothing';
          }
          return 'done';
        },
      });
      // no clock time passes: only the wake-up can end the first wait
      assert.equal(await longPoll(f.clock, 1000, s.steps, null), 'answer:done');
      assert.equal(reads, 2);
    },
  );

  it(
    'after a wake-up without an answer it waits only for the time left on the clock, then times out',
    { timeout: 5000 },
    async () => {
      const f = fixture();
      const s = steps(f.wait, ['nothing', 'nothing', 'done']);
      const reply = longPoll(f.clock, 1000, s.steps, null);
      await f.timers.advance(300);
      f.signal.notify(KEY);
      await settle();
      assert.deepEqual(f.timeouts, [1000, 700]);
      await f.timers.advance(699);
      assert.equal(s.reads(), 2, 'still waiting 1 ms before the deadline');
      await f.timers.advance(1);
      assert.equal(await reply, 'timed out');
      assert.equal(s.reads(), 2, 'a timeout answers without another read');
    },
  );

  it(
    'woken when no time is left, it reads once more without waiting and answers that read',
    { timeout: 5000 },
    async () => {
      const f = fixture();
      const s = steps(f.wait, ['nothing', 'nothing']);
      const reply = longPoll(f.clock, 1000, s.steps, null);
      await settle();
      f.clock.advance(1500); // the wake-up comes late: the deadline has passed
      f.signal.notify(KEY);
      assert.equal(await reply, 'answer:nothing');
      assert.equal(s.reads(), 2);
      assert.deepEqual(f.timeouts, [1000]);
    },
  );

  it('a reply from woken() answers without another read', { timeout: 5000 }, async () => {
    const f = fixture();
    const s = steps(f.wait, ['nothing', 'done'], { woken: () => 'from the commit' });
    const reply = longPoll(f.clock, 1000, s.steps, null);
    await settle();
    f.signal.notify(KEY);
    assert.equal(await reply, 'from the commit');
    assert.equal(s.reads(), 1);
  });

  it(
    'a read that throws cancels its waiter, passing a wake-up it had received to the next waiter',
    { timeout: 5000 },
    async () => {
      const f = fixture();
      let nextWoken: boolean | undefined;
      const s = steps(f.wait, [], {
        read: async () => {
          void f.signal.waiter(KEY, 60_000).promise.then((woken) => (nextWoken = woken));
          f.signal.notify(KEY, 1); // wakes the oldest: the long-poll's own waiter
          throw new Error('the store failed');
        },
      });
      await assert.rejects(longPoll(f.clock, 1000, s.steps, null), /the store failed/);
      await settle();
      assert.equal(nextWoken, true, 'the wake-up went on to the next waiter');
      assert.equal(f.signal.waiting(KEY), 0);
    },
  );
});
