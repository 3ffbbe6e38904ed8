import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeJobStore, T0, newJob } from '../../test/support/job-store-suite.js';

describeJobStore('JobStreamBuffer', (s) => {
  test('a drained stream answers its chunks in order once', async () => {
    const job = newJob();
    await s.store.rows.insertMany([job]);
    await s.store.stream.appendStream(job.id, [{ seq: 2, outputJson: '"b"' }], T0);
    await s.store.stream.appendStream(
      job.id,
      [
        { seq: 1, outputJson: '"a"' },
        { seq: 3, outputJson: '"c"' },
      ],
      T0,
    );
    assert.deepEqual(await s.store.stream.drainStream(job.id), ['"a"', '"b"', '"c"']);
    assert.deepEqual(await s.store.stream.drainStream(job.id), []);
  });
});
