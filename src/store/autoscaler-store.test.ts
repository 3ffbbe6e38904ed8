import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { AutoscalerStore } from './autoscaler-store.js';
import type { NewJob } from './job-record.js';
import { openJobStore, type JobStore } from './job-store.js';

const T0 = 1_767_225_600_000;
const DAY = 86_400_000;

for (const { name, skip } of dialects()) {
  describe(`AutoscalerStore queue reads on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: AutoscalerStore;
    let jobs: JobStore;
    let seq = 0;
    const job = (endpointId: string, lowPriority = false): NewJob => ({
      id: `job-${++seq}`,
      endpointId,
      accountId: 'acct',
      seq,
      inputJson: '{}',
      webhook: null,
      s3ConfigJson: null,
      policy: { executionTimeout: 600_000, lowPriority, ttl: DAY },
      sync: false,
      createdAt: T0 + seq,
    });

    before(async () => {
      t = await openTestDb(name);
      store = new AutoscalerStore(t.db);
      jobs = openJobStore(t.db);
    });
    after(() => t?.cleanup());
    beforeEach(async () => {
      await t.db.kysely.deleteFrom('jobs').execute();
    });

    test('urgent queued jobs are counted up to the cap, low-priority and other endpoints not at all', async () => {
      await jobs.rows.insertCommitted([
        ...Array.from({ length: 7 }, () => job('ep-a')),
        ...Array.from({ length: 3 }, () => job('ep-a', true)),
        ...Array.from({ length: 4 }, () => job('ep-b')),
      ]);
      assert.equal(await store.urgentQueued('ep-a', 100), 7);
      assert.equal(await store.urgentQueued('ep-a', 5), 5, 'the count stops at the cap');
      assert.equal(await store.urgentQueued('ep-c', 5), 0);
    });

    test('anyQueued tells an endpoint with only low-priority jobs queued from an empty one', async () => {
      await jobs.rows.insertCommitted([job('ep-a', true)]);
      assert.equal(await store.anyQueued('ep-a'), true);
      assert.equal(await store.urgentQueued('ep-a', 10), 0);
      assert.equal(await store.anyQueued('ep-b'), false);
    });
  });
}
