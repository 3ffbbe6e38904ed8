import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../domain/clock.js';
import type { JobHoldings } from '../domain/quotas.js';
import { JobQuota } from './job-quota.js';

/** Stored counters the test sets, and a read it can hold open. */
function fakeUsage() {
  let stored = new Map<string, JobHoldings>();
  let gate: Promise<void> | null = null;
  return {
    reads: 0,
    set(accountId: string, h: JobHoldings) {
      stored = new Map(stored).set(accountId, h);
    },
    hold(): () => void {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return () => {
        gate = null;
        release();
      };
    },
    async byAccount() {
      this.reads++;
      const snapshot = stored;
      if (gate) await gate;
      return snapshot;
    },
    async streamBytes() {
      return 0;
    },
  };
}

const quotas = { queuedJobs: 3, storedJobBytes: 1000, streamBytesPerJob: 100 };
const admit = async (q: JobQuota, account: string, bytes = 1) => q.admitSubmit(account, bytes);

test('the stored counters are read once per refresh interval, not per submission', async () => {
  const clock = new FakeClock(0);
  const usage = fakeUsage();
  const q = new JobQuota({ usage, clock, quotas, refreshMs: 1000 });
  for (let i = 0; i < 3; i++) (await admit(q, 'a'))();
  assert.equal(usage.reads, 1);
  clock.advance(1000);
  usage.set('a', { queuedJobs: 0, storedBytes: 0 });
  (await admit(q, 'b'))();
  assert.equal(usage.reads, 2);
});

test('submissions admitted here count at once, before any refresh: the fourth is refused with 429 naming the quota', async () => {
  const q = new JobQuota({ usage: fakeUsage(), clock: new FakeClock(0), quotas });
  for (let i = 0; i < 3; i++) (await admit(q, 'a'))();
  await assert.rejects(
    admit(q, 'a'),
    (err: { code: string; status: number; headers: Record<string, string>; detail: string }) => {
      assert.equal(err.code, 'QUOTA_EXCEEDED');
      assert.equal(err.status, 429);
      assert.equal(err.headers['retry-after'], '1');
      assert.match(err.detail, /quotas\.queuedJobs = 3/);
      return true;
    },
  );
  await admit(q, 'b');
});

test('a submission still uncommitted when a refresh reads stays counted after it, and one committed before is not counted twice for long', async () => {
  const clock = new FakeClock(0);
  const usage = fakeUsage();
  const q = new JobQuota({ usage, clock, quotas });
  const committed = await admit(q, 'a');
  committed();
  usage.set('a', { queuedJobs: 1, storedBytes: 1 }); // its row, as the store now has it
  await admit(q, 'a'); // admitted, never settled: its commit is still running
  clock.advance(1000);
  const release = usage.hold();
  const during = admit(q, 'b'); // starts the refresh, which reads the store before the second commit lands
  release();
  (await during)();
  assert.deepEqual(q.held('a'), { queuedJobs: 2, storedBytes: 2 });
});
