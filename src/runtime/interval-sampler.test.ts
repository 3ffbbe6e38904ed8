import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { FakeTimers, settle } from '../../test/support/fake-timers.js';
import { IntervalSampler } from './interval-sampler.js';

const logger = pino({ level: 'silent' });

function setup() {
  const timers = new FakeTimers();
  const state = { live: 1, taken: 0 };
  const sampler = new IntervalSampler({
    intervalMs: 1_000,
    timers,
    logger,
    live: () => state.live > 0,
    sample: async () => void state.taken++,
  });
  return { timers, state, sampler };
}

describe('IntervalSampler', () => {
  test('one sample per interval while something is live, whoever reads', async () => {
    const { timers, state, sampler } = setup();
    sampler.wake();
    sampler.wake();
    await settle();
    assert.equal(state.taken, 1, 'the first sample is taken at once, and a second wake starts no second loop');
    await timers.advance(3_000);
    assert.equal(state.taken, 4);
    await sampler.close();
  });

  test('the sampler stops when nothing runs, and a wake starts it again', async () => {
    const { timers, state, sampler } = setup();
    sampler.wake();
    await timers.advance(1_000);
    assert.equal(state.taken, 2);
    state.live = 0;
    await timers.advance(1_000);
    assert.equal(sampler.running, false);
    assert.deepEqual(timers.dues, [], 'no timer is left waiting');
    await timers.advance(10_000);
    assert.equal(state.taken, 2, 'nothing is sampled while nothing runs');
    state.live = 1;
    sampler.wake();
    await settle();
    assert.equal(sampler.running, true);
    assert.equal(state.taken, 3);
    await sampler.close();
    assert.equal(sampler.running, false);
  });

  test('a wake while nothing is live takes nothing and leaves the sampler ready for the next wake', async () => {
    const { state, sampler } = setup();
    state.live = 0;
    // the runtime's attach() wakes it before anything runs
    sampler.wake();
    await settle();
    assert.equal(sampler.running, false);
    assert.equal(state.taken, 0);
    state.live = 1;
    sampler.wake();
    await settle();
    assert.equal(state.taken, 1, 'the first instance to run was never sampled');
    await sampler.close();
  });

  test('a sample that fails is logged and the loop carries on', async () => {
    const timers = new FakeTimers();
    let calls = 0;
    const sampler = new IntervalSampler({
      intervalMs: 500,
      timers,
      logger,
      live: () => true,
      sample: async () => {
        calls++;
        if (calls === 1) throw new Error('engine hiccup');
      },
    });
    sampler.wake();
    await timers.advance(1_000);
    assert.equal(calls, 3);
    await sampler.close();
  });

  test('a closed sampler takes no more samples, and a wake does not restart it', async () => {
    const { timers, state, sampler } = setup();
    sampler.wake();
    await settle();
    await sampler.close();
    sampler.wake();
    await timers.advance(5_000);
    assert.equal(state.taken, 1);
  });
});
