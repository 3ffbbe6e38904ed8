import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeJobStore, T0, newJob } from '../../test/support/job-store-suite.js';

describeJobStore('JobControls', (s) => {
  test('cancel of a queued job needs no stop request; cancel of a running job asks its worker to stop, once', async () => {
    const [a, b] = [newJob(), newJob()];
    await s.store.rows.insertMany([a, b]);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    const running = await s.store.controls.cancel(a.id, T0 + 50);
    const queued = await s.store.controls.cancel(b.id, T0 + 50);
    assert.deepEqual([running?.status, running?.stopRequested, running?.executionMs], ['CANCELLED', 1, 50]);
    assert.deepEqual([queued?.status, queued?.stopRequested, queued?.executionMs], ['CANCELLED', 0, null]);
    assert.equal(await s.store.controls.cancel(a.id, T0 + 60), null);
    assert.deepEqual(await s.store.claims.takeStopRequests('w1', 'ep1'), [a.id]);
    assert.deepEqual(await s.store.claims.takeStopRequests('w1', 'ep1'), []);
  });

  test('retry requeues only a FAILED or TIMED_OUT job, same id and input, at the back of the queue', async () => {
    const [a, b] = [newJob(), newJob()];
    await s.store.rows.insertMany([a, b]);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    assert.equal(await s.store.controls.retry(a.id, 1e9, T0), null);
    await s.store.claims.completeMany(
      [{ id: a.id, workerId: 'w1', status: 'FAILED', outputJson: null, error: 'x' }],
      T0 + 10,
    );
    const retried = await s.store.controls.retry(a.id, 1e9, T0 + 20);
    assert.deepEqual(
      [retried?.status, retried?.retries, retried?.inputJson, retried?.error, retried?.queuedAt],
      ['IN_QUEUE', 1, a.inputJson, null, T0 + 20],
    );
    const order = await s.store.claims.takeNext('ep1', 'w2', 5, T0 + 30);
    assert.deepEqual(
      order.map((j) => j.id),
      [b.id, a.id],
    );
  });

  test('purge removes queued jobs only and answers the count', async () => {
    const jobs = [newJob(), newJob(), newJob(), newJob({ endpointId: 'other' })];
    await s.store.rows.insertMany(jobs);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    assert.equal(await s.store.controls.purgeQueue('ep1'), 2);
    const stats = await s.store.stats.queueStats('ep1');
    assert.equal(stats.inQueue, 0);
    assert.equal(stats.inProgress, 1);
    assert.equal((await s.store.stats.queueStats('other')).inQueue, 1);
  });
});
