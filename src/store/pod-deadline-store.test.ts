import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { PodDeadlineStore } from './pod-deadline-store.js';

for (const { name, skip } of dialects()) {
  describe(`pod deadline store (migration 0020) on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: PodDeadlineStore;
    before(async () => {
      t = await openTestDb(name);
      store = new PodDeadlineStore(t.db);
    });
    after(() => t?.cleanup());

    test('a deadline is due from either of its times on, and a later set replaces it', async () => {
      await store.set('p1', { stopAfter: 1_000, terminateAfter: 5_000 });
      await store.set('p2', { stopAfter: null, terminateAfter: 2_000 });
      await store.set('p3', { stopAfter: 9_000, terminateAfter: null });
      assert.deepEqual(await store.listDue(999, 10), []);
      assert.deepEqual(await store.listDue(2_000, 10), [
        { podId: 'p1', stopAfter: 1_000, terminateAfter: 5_000 },
        { podId: 'p2', stopAfter: null, terminateAfter: 2_000 },
      ]);
      assert.deepEqual(await store.listDue(2_000, 1), [{ podId: 'p1', stopAfter: 1_000, terminateAfter: 5_000 }]);
      await store.set('p3', { stopAfter: 1_500, terminateAfter: null });
      assert.deepEqual(
        (await store.listDue(2_000, 10)).map((d) => d.podId),
        ['p1', 'p2', 'p3'],
      );
    });

    test('a stop acted on is forgotten, and the row with it when no termination time is left', async () => {
      await store.clearStop('p1');
      assert.deepEqual(await store.get('p1'), { stopAfter: null, terminateAfter: 5_000 });
      await store.clearStop('p3');
      assert.equal(await store.get('p3'), null);
      await store.delete('p2');
      assert.equal(await store.get('p2'), null);
      assert.deepEqual(await store.listDue(4_000, 10), []);
      assert.deepEqual(await store.listDue(5_000, 10), [{ podId: 'p1', stopAfter: null, terminateAfter: 5_000 }]);
    });
  });
}
