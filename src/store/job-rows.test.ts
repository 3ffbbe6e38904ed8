import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeJobStore, T0, newJob } from '../../test/support/job-store-suite.js';

describeJobStore('JobRows', (s) => {
  test('a batch of jobs is inserted IN_QUEUE with its policy, ttl deadline and input intact', async () => {
    const jobs = Array.from({ length: 1200 }, () =>
      newJob({ ttl: 20_000, lowPriority: true, webhook: 'http://hook', s3ConfigJson: '{"bucketName":"b"}' }),
    );
    await s.t.db.withTransaction((tx) => s.store.rows.insertMany(jobs, tx));
    const got = await s.store.rows.get(jobs[1100]!.id);
    assert.equal(got?.status, 'IN_QUEUE');
    assert.equal(got?.expiresAt, T0 + 20_000);
    assert.deepEqual(got?.policy, { executionTimeout: 600_000, lowPriority: true, ttl: 20_000 });
    assert.equal(got?.inputJson, jobs[1100]!.inputJson);
    assert.equal(got?.s3ConfigJson, '{"bucketName":"b"}');
    assert.equal((await s.store.stats.queueStats('ep1')).inQueue, 1200);
  });

  test('maxSeq answers the largest queue position stored', async () => {
    assert.equal(await s.store.rows.maxSeq(), 0);
    await s.store.rows.insertMany([newJob({ seq: 42 }), newJob({ seq: 7 })]);
    assert.equal(await s.store.rows.maxSeq(), 42);
  });
});
