import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import type { ClusterRecord } from '../domain/cluster.js';
import { ClusterStore } from './cluster-store.js';
import { isUniqueViolation } from './database.js';

const cluster = (id: string, cidr: string, accountId = 'a1'): ClusterRecord => ({
  id,
  accountId,
  name: id,
  type: 'RAY',
  gpuTypeId: 'NVIDIA GeForce RTX 4090',
  gpuCountPerPod: 2,
  podCount: 3,
  cidr,
  dataCenterId: null,
  createdAt: 1000,
});

for (const { name, skip } of dialects()) {
  describe(`cluster store (migration 0016) on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: ClusterStore;
    before(async () => {
      t = await openTestDb(name);
      store = new ClusterStore(t.db);
    });
    after(() => t?.cleanup());

    test('two clusters cannot hold the same network: the second insert is a unique violation', async () => {
      await store.insert(cluster('c1', '10.65.0.0/24'));
      await assert.rejects(store.insert(cluster('c2', '10.65.0.0/24', 'a2')), (err) => isUniqueViolation(err));
      assert.deepEqual(await store.listCidrs(), ['10.65.0.0/24']);
      await store.delete('c1');
      await store.insert(cluster('c2', '10.65.0.0/24', 'a2'));
      assert.deepEqual(await store.list('a1'), []);
    });

    test('a cluster reads back as stored, only within its account, and renames', async () => {
      await store.insert(cluster('c3', '10.65.1.0/24'));
      await store.update('c3', { name: 'renamed', dataCenterId: 'US-TX-3' });
      assert.deepEqual(await store.get('a1', 'c3'), {
        ...cluster('c3', '10.65.1.0/24'),
        name: 'renamed',
        dataCenterId: 'US-TX-3',
      });
      assert.equal(await store.get('a2', 'c3'), null);
    });
  });
}
