import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addRemoteJobRequests,
  admitJobRequest,
  effectiveRate,
  isIdleJobWindow,
  JOB_OPERATION_LIMITS,
  newJobWindow,
  releaseJobRequest,
} from './job-rate-limits.js';

const T0 = 1_700_000_000_000; // a multiple of 10 s

test('requests over the rate of a 10-second window are refused until the window turns', () => {
  const w = newJobWindow();
  const limit = { rate: 2, concurrent: null };
  assert.equal(admitJobRequest(w, limit, T0).allowed, true);
  assert.equal(admitJobRequest(w, limit, T0 + 1000).allowed, true);
  const refused = admitJobRequest(w, limit, T0 + 2500);
  assert.deepEqual(refused, { allowed: false, exceeded: 'rate', limit: 2, retryAfterSeconds: 8 });
  assert.equal(admitJobRequest(w, limit, T0 + 10_000).allowed, true);
});

test('a refused request is not counted against the window', () => {
  const w = newJobWindow();
  const limit = { rate: 1, concurrent: null };
  admitJobRequest(w, limit, T0);
  for (let i = 0; i < 5; i++) admitJobRequest(w, limit, T0 + i);
  assert.equal(w.count, 1);
});

test('requests in flight beyond the concurrency cap are refused; answering one frees a slot', () => {
  const w = newJobWindow();
  const limit = { rate: 100, concurrent: 2 };
  assert.equal(admitJobRequest(w, limit, T0).allowed, true);
  assert.equal(admitJobRequest(w, limit, T0).allowed, true);
  assert.deepEqual(admitJobRequest(w, limit, T0), {
    allowed: false,
    exceeded: 'concurrency',
    limit: 2,
    retryAfterSeconds: 1,
  });
  releaseJobRequest(w);
  assert.equal(admitJobRequest(w, limit, T0).allowed, true);
});

test('in-flight requests carry over into the next window', () => {
  const w = newJobWindow();
  const limit = { rate: 100, concurrent: 1 };
  admitJobRequest(w, limit, T0);
  assert.equal(admitJobRequest(w, limit, T0 + 10_000).allowed, false);
});

test('the dynamic limit is the higher of the base rate and running workers times the per-worker rate', () => {
  assert.equal(effectiveRate(JOB_OPERATION_LIMITS.run, 0, 200), 1000);
  assert.equal(effectiveRate(JOB_OPERATION_LIMITS.run, 5, 200), 1000);
  assert.equal(effectiveRate(JOB_OPERATION_LIMITS.run, 12, 200), 2400);
  // spec 8.1 states the dynamic limit for every operation, purge-queue's 2 per window included
  assert.equal(effectiveRate(JOB_OPERATION_LIMITS['purge-queue'], 0, 200), 2);
  assert.equal(effectiveRate(JOB_OPERATION_LIMITS['purge-queue'], 3, 200), 600);
});

test('the table of spec 8.1 is the default', () => {
  assert.deepEqual(
    Object.fromEntries(Object.entries(JOB_OPERATION_LIMITS).map(([op, l]) => [op, [l.rate, l.concurrent]])),
    {
      run: [1000, 200],
      runsync: [2000, 400],
      status: [2000, 400],
      stream: [2000, 400],
      cancel: [100, 20],
      retry: [100, 20],
      'purge-queue': [2, null],
      health: [2000, 400],
      openai: [2000, 400],
      requests: [10, 2],
    },
  );
});

test('a window without traffic for two periods is idle and may be dropped', () => {
  const w = newJobWindow();
  admitJobRequest(w, { rate: 10, concurrent: null }, T0);
  assert.equal(isIdleJobWindow(w, T0 + 5000), false);
  releaseJobRequest(w);
  assert.equal(isIdleJobWindow(w, T0 + 20_000), true);
});

test("requests other replicas admitted count against the user's window; a past window's are dropped, a later one starts", () => {
  const w = newJobWindow();
  const limit = { rate: 3, concurrent: null };
  assert.deepEqual(admitJobRequest(w, limit, 10_000), { allowed: true });
  addRemoteJobRequests(w, 10_000, 2);
  assert.equal(admitJobRequest(w, limit, 10_001).allowed, false, '1 here + 2 elsewhere reach the rate of 3');
  addRemoteJobRequests(w, 0, 50);
  assert.equal(w.remote, 2, "a past window's counts are dropped");
  addRemoteJobRequests(w, 20_000, 1);
  assert.deepEqual(
    [w.start, w.count, w.remote],
    [20_000, 0, 1],
    'a later window, begun elsewhere first, starts here too',
  );
  assert.deepEqual(admitJobRequest(w, limit, 20_005), { allowed: true });
  assert.deepEqual(admitJobRequest(w, limit, 20_006), { allowed: true });
  assert.equal(admitJobRequest(w, limit, 20_007).allowed, false);
});
