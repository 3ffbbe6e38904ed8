import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../domain/clock.js';
import { WorkerRateLimiter } from './worker-rate-limit.js';

const admitted = (
  limiter: WorkerRateLimiter,
  n: number,
  workerOf: (i: number) => string,
  account = 'acct',
  endpoint = 'ep',
): number => {
  let ok = 0;
  for (let i = 0; i < n; i++) {
    try {
      limiter.admit(account, endpoint, workerOf(i));
      ok++;
    } catch (err) {
      assert.equal((err as { code?: string }).code, 'RATE_LIMITED');
    }
  }
  return ok;
};

test("an endpoint's limit rises to perWorker × its running launched workers, and only then are they counted", () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  let live = 0;
  let asked = 0;
  const limiter = new WorkerRateLimiter({ clock, perWorker: 5, perEndpoint: 10, liveWorkers: () => (asked++, live) });
  assert.equal(
    admitted(limiter, 12, (i) => `w${i}`),
    10,
    'no launched worker: the base',
  );
  assert.ok(asked <= 3, 'workers are counted only once the base is spent');
  live = 4;
  clock.advance(10_000);
  assert.equal(
    admitted(limiter, 30, (i) => `w${i % 4}`),
    20,
    '4 launched workers × 5',
  );
});

test('a refused call is not counted, and each account has its own counters for the same endpoint id', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const limiter = new WorkerRateLimiter({ clock, perWorker: 3, perEndpoint: 100, liveWorkers: () => 0 });
  assert.equal(
    admitted(limiter, 10, () => 'w'),
    3,
  );
  assert.equal(
    admitted(limiter, 10, () => 'w', 'other-account'),
    3,
    "another account's calls naming the endpoint fill only its own counters",
  );
  assert.equal(
    admitted(limiter, 97, (i) => `x${i}`),
    97,
    'the refused calls of w did not spend the endpoint budget',
  );
});

test('0 turns a limit off', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const limiter = new WorkerRateLimiter({ clock, perWorker: 0, perEndpoint: 0, liveWorkers: () => 0 });
  assert.equal(
    admitted(limiter, 1000, () => 'w'),
    1000,
  );
  assert.equal(limiter.size, 0);
});
