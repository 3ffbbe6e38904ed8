import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { FakeClock } from '../domain/clock.js';
import { LostHostCost, type FleetCost } from './lost-host-cost.js';

const GRACE = 300_000;

function costs(failPauses = 0) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const calls: string[] = [];
  let failures = failPauses;
  const cost: FleetCost = {
    pause: async (hostId, at) => {
      if (failures-- > 0) throw new Error('database unreachable');
      calls.push(`pause ${hostId} at ${at}`);
    },
    resume: async (podIds, at) => void calls.push(`resume ${podIds.join(',')} at ${at}`),
  };
  const lost = new LostHostCost({ clock, logger: pino({ level: 'silent' }), cost, config: { lostGraceMs: GRACE } });
  return { clock, calls, lost };
}

test('a host lost longer ago than the grace (seen by a restarted server) has its cost paused at once, as of the end of the grace', async () => {
  const { clock, calls, lost } = costs();
  const since = clock.now() - 2 * GRACE;
  lost.lost('host-a', since);
  await lost.sweep();
  assert.deepEqual(calls, [`pause host-a at ${since + GRACE}`]);
  await lost.close();
});

test('a pause that fails is tried again at the next sweep', async () => {
  const { clock, calls, lost } = costs(1);
  lost.lost('host-a', clock.now());
  clock.advance(GRACE);
  await lost.sweep();
  assert.deepEqual(calls, []);
  await lost.sweep();
  assert.deepEqual(calls, [`pause host-a at ${clock.now()}`]);
  await lost.close();
});

test('a report while the host is still marked unreachable resumes nothing; the first once it is back does, once', async () => {
  const { clock, calls, lost } = costs();
  lost.lost('host-a', clock.now());
  clock.advance(GRACE);
  await lost.sweep();
  await lost.reported('host-a', () => ['pod-1']);
  assert.deepEqual(
    calls.filter((c) => c.startsWith('resume')),
    [],
  );
  lost.back('host-a');
  await lost.reported('host-a', () => ['pod-1']);
  await lost.reported('host-a', () => ['pod-1']);
  assert.deepEqual(
    calls.filter((c) => c.startsWith('resume')),
    [`resume pod-1 at ${clock.now()}`],
  );
  await lost.close();
});
