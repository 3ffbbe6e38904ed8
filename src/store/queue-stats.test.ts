import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeJobStore, T0, newJob } from '../../test/support/job-store-suite.js';

describeJobStore('QueueStatsReader', (s) => {
  test('queue stats count every status exactly, and the jobs that went back to the queue', async () => {
    const jobs = [
      newJob({ createdAt: T0 + 5 }),
      newJob({ createdAt: T0 + 1, lowPriority: true }),
      newJob(),
      newJob(),
      newJob(),
    ];
    await s.store.rows.insertMany(jobs);
    const taken = await s.store.claims.takeNext('ep1', 'w1', 3, T0 + 10);
    await s.store.claims.completeMany(
      [
        { id: taken[0]!.id, workerId: 'w1', status: 'COMPLETED', outputJson: '1', error: null },
        { id: taken[1]!.id, workerId: 'w1', status: 'FAILED', outputJson: null, error: 'e' },
      ],
      T0 + 20,
    );
    assert.deepEqual(await s.store.stats.queueStats('ep1'), {
      inQueue: 2,
      inProgress: 1,
      completed: 1,
      failed: 1,
      cancelled: 0,
      timedOut: 0,
      retried: 0,
    });
    assert.deepEqual(await s.store.stats.queueStats('none'), {
      inQueue: 0,
      inProgress: 0,
      completed: 0,
      failed: 0,
      cancelled: 0,
      timedOut: 0,
      retried: 0,
    });
  });
});
