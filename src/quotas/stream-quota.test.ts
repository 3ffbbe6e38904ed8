import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../domain/clock.js';
import { JobQuota } from './job-quota.js';

/** A round trip shared by every read started in the same turn, as a batched query would be. */
let trip: Promise<void> | null = null;
const roundTrip = (): Promise<void> =>
  (trip ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      trip = null;
      resolve();
    }),
  ));

/** Stored counters (all zero) and per-job stream bytes the test sets, counting the stream reads. */
function fakeUsage() {
  const streams = new Map<string, number>();
  return {
    streamReads: 0,
    streams,
    async byAccount() {
      return new Map();
    },
    async streamBytes(jobId: string) {
      this.streamReads++;
      await roundTrip(); // one round trip for every caller of this turn: concurrent callers resume together
      return streams.get(jobId) ?? 0;
    },
  };
}

const quotas = { queuedJobs: 10, storedJobBytes: 10_000, streamBytesPerJob: 100 };
const exceeded = (err: { code?: string; detail?: string }) =>
  err.code === 'QUOTA_EXCEEDED' && /quotas\.streamBytesPerJob = 100/.test(err.detail ?? '');

test('concurrent chunk posts for one job cannot pass quotas.streamBytesPerJob together', async () => {
  const q = new JobQuota({ usage: fakeUsage(), clock: new FakeClock(0), quotas });
  const results = await Promise.allSettled([1, 2, 3].map(async () => q.admitStreamChunk('a', 'job1', 40)));
  assert.equal(
    results.filter((r) => r.status === 'fulfilled').length,
    2,
    'two chunks of 40 fit in 100, a third does not',
  );
  const refused = results.find((r) => r.status === 'rejected');
  assert.ok(refused && exceeded(refused.reason as { code: string; detail: string }));
});

test('a chunk still committing counts against the job until it settles; a failed one frees its bytes', async () => {
  const q = new JobQuota({ usage: fakeUsage(), clock: new FakeClock(0), quotas });
  const first = await q.admitStreamChunk('a', 'job1', 60);
  assert.throws(() => q.admitStreamChunk('a', 'job1', 60), exceeded);
  first(false);
  (await q.admitStreamChunk('a', 'job1', 60))(true);
  assert.throws(() => q.admitStreamChunk('a', 'job1', 60), exceeded, 'a committed chunk stays counted until drained');
});

test('a job’s chunks cost no store query after the first, and are admitted without an await', async () => {
  const usage = fakeUsage();
  const q = new JobQuota({ usage, clock: new FakeClock(0), quotas });
  (await q.admitStreamChunk('a', 'job1', 10))(true);
  for (let i = 0; i < 8; i++) {
    const settle = q.admitStreamChunk('a', 'job1', 10);
    assert.equal(typeof settle, 'function', 'answered synchronously');
    (settle as (committed: boolean) => void)(true);
  }
  q.streamDrained('job1', 90);
  for (let i = 0; i < 5; i++) (q.admitStreamChunk('a', 'job1', 10) as (committed: boolean) => void)(true);
  assert.equal(usage.streamReads, 1);
});

test('chunks a job already buffers in the store count: the first chunk seen here reads them once', async () => {
  const usage = fakeUsage();
  usage.streams.set('job1', 90);
  const q = new JobQuota({ usage, clock: new FakeClock(0), quotas });
  await assert.rejects(async () => q.admitStreamChunk('a', 'job1', 20), exceeded);
  (await q.admitStreamChunk('a', 'job1', 10))(true);
});

test('a refusal re-reads a figure older than the refresh interval, so a drain on another replica makes room', async () => {
  const usage = fakeUsage();
  const clock = new FakeClock(0);
  const q = new JobQuota({ usage, clock, quotas, refreshMs: 1000 });
  (await q.admitStreamChunk('a', 'job1', 100))(true);
  usage.streams.set('job1', 0); // drained elsewhere
  assert.throws(() => q.admitStreamChunk('a', 'job1', 50), exceeded, 'within the interval, the figure held is trusted');
  assert.equal(usage.streamReads, 1);
  clock.advance(1000);
  (await q.admitStreamChunk('a', 'job1', 50))(true);
  assert.equal(usage.streamReads, 2);
});

test('a refusal by the account’s stored-bytes quota frees the job’s reservation', async () => {
  const q = new JobQuota({ usage: fakeUsage(), clock: new FakeClock(0), quotas: { ...quotas, storedJobBytes: 50 } });
  (await q.admitStreamChunk('a', 'job1', 40))(true);
  assert.throws(() => q.admitStreamChunk('a', 'job1', 40), /quotas\.storedJobBytes = 50/);
  q.streamDrained('job1', 40);
  assert.throws(
    () => q.admitStreamChunk('a', 'job1', 40),
    /quotas\.storedJobBytes = 50/,
    'still the account quota, not the job’s',
  );
  (q.admitStreamChunk('a', 'job1', 5) as (committed: boolean) => void)(true);
});

test('the in-memory figures are dropped when jobs finish and bounded by maxStreamingJobs', async () => {
  const usage = fakeUsage();
  const q = new JobQuota({ usage, clock: new FakeClock(0), quotas, maxStreamingJobs: 3 });
  for (let i = 0; i < 10; i++) (await q.admitStreamChunk('a', `job${i}`, 1))(true);
  const held = q.streamingJobs;
  assert.ok(held <= 3, `held ${held}`);
  q.jobFinished('job9');
  assert.equal(q.streamingJobs, held - 1);
});
