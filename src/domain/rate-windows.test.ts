import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admit, newCounters } from './rate-windows.js';

const quotas = { minute: 10, hour: 100, day: 1000 };

test('several units are admitted all or none, and a refused call counts nothing', () => {
  const counters = newCounters();
  const now = 1_000_000;
  assert.equal(admit(counters, quotas, now, 7).allowed, true);
  assert.deepEqual(counters.counts, [7, 7, 7]);
  const refused = admit(counters, quotas, now, 4);
  assert.equal(refused.allowed, false);
  assert.equal(refused.exceeded, 'minute');
  assert.deepEqual(refused.remaining, [3, 93, 993]);
  assert.deepEqual(counters.counts, [7, 7, 7]);
  assert.equal(admit(counters, quotas, now, 3).allowed, true);
  assert.equal(admit(counters, quotas, now).allowed, false);
  // A new minute window takes the units again; the hour keeps counting.
  const next = admit(counters, quotas, now + 60_000, 10);
  assert.equal(next.allowed, true);
  assert.deepEqual(next.remaining, [0, 80, 980]);
});
