import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeJobStore, MIN, T0, newJob } from '../../test/support/job-store-suite.js';

describeJobStore('JobSweeps', (s) => {
  test('expire deletes jobs past their ttl in any state, and finished jobs past retention, with their stream, counting the unfinished ones per endpoint', async () => {
    const short = newJob({ ttl: 10_000 });
    const finished = newJob();
    const long = newJob();
    await s.store.rows.insertMany([short, finished, long]);
    await s.store.claims.takeNext('ep1', 'w1', 2, T0);
    await s.store.stream.appendStream(short.id, [{ seq: 1, outputJson: '1' }], T0);
    await s.store.claims.completeMany(
      [{ id: finished.id, workerId: 'w1', status: 'COMPLETED', outputJson: '1', error: null }],
      T0,
    );
    assert.deepEqual(await s.store.sweeps.expire(T0 + 9_999), { expired: [], purged: [], unfinished: [] });
    assert.deepEqual(await s.store.sweeps.expire(T0 + 10_000), {
      expired: [short.id],
      purged: [],
      // the metrics' running gauge learns a running job left without a final state
      unfinished: [{ endpointId: 'ep1', status: 'IN_PROGRESS', n: 1 }],
    });
    assert.equal(await s.store.rows.get(short.id), null);
    assert.deepEqual(await s.store.stream.drainStream(short.id), []);
    assert.deepEqual(await s.store.sweeps.expire(T0 + 30 * MIN), {
      expired: [],
      purged: [finished.id],
      unfinished: [],
    });
    assert.equal((await s.store.rows.get(long.id))?.status, 'IN_QUEUE');
  });

  test('a running job times out at its execution deadline; queue time does not count', async () => {
    const job = newJob({ executionTimeout: 5000 });
    await s.store.rows.insertMany([job]);
    assert.deepEqual(await s.store.sweeps.timeOut(T0 + 60_000), []);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0 + 60_000);
    assert.deepEqual(await s.store.sweeps.timeOut(T0 + 64_999), []);
    const [timedOut] = await s.store.sweeps.timeOut(T0 + 65_000);
    assert.deepEqual([timedOut?.status, timedOut?.stopRequested, timedOut?.executionMs], ['TIMED_OUT', 1, 5000]);
    assert.deepEqual(await s.store.claims.takeStopRequests('w1', 'ep1'), [job.id]);
  });
});
