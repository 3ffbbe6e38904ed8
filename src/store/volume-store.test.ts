import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { AccountStore } from './account-store.js';
import { VolumeStore } from './volume-store.js';

for (const { name, skip } of dialects()) {
  describe(`VolumeStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: VolumeStore;
    const pod = (id: string, accountId: string, status: string, mounts: string, createdAt: number) =>
      t.db.kysely
        .insertInto('pods')
        .values({
          id,
          account_id: accountId,
          name: id,
          status,
          desired_status: 'RUNNING',
          image: 'x',
          disk: 20,
          cloud: 'SECURE',
          mounts,
          created_at: createdAt,
          updated_at: createdAt,
        } as never)
        .execute();
    before(async () => {
      t = await openTestDb(name);
      store = new VolumeStore(t.db);
      const accounts = new AccountStore(t.db);
      await accounts.insertAccount({ id: 'a1', name: 'alice', sshKeys: [], createdAt: 1 });
      await accounts.insertAccount({ id: 'a2', name: 'bob', sshKeys: [], createdAt: 1 });
    });
    after(() => t?.cleanup());

    test('a volume round-trips and is visible only to its account', async () => {
      const volume = {
        id: 'v1',
        accountId: 'a1',
        name: 'data',
        size: 50,
        dataCenterId: 'US-TX-3',
        createdAt: 1_700_000_000_000,
      };
      await store.insert(volume);
      assert.deepEqual(await store.get('a1', 'v1'), volume);
      assert.equal(await store.get('a2', 'v1'), null);
      assert.deepEqual(
        (await store.list('a1')).map((v) => v.id),
        ['v1'],
      );
      assert.deepEqual(await store.list('a2'), []);
    });

    test('update renames and resizes', async () => {
      assert.equal(await store.update('v1', { name: 'bigger', size: 100 }, 2), true);
      const v = await store.get('a1', 'v1');
      assert.equal(v?.name, 'bigger');
      assert.equal(v?.size, 100);
      assert.equal(await store.update('nope', { name: 'x' }, 2), false);
    });

    test('podsMounting parses mounts: live pods that mount the volume, and no prefix or path false hits', async () => {
      await pod('p1', 'a1', 'RUNNING', JSON.stringify({ network: [{ volumeId: 'v1', path: '/data' }] }), 1);
      await pod('p2', 'a1', 'TERMINATED', JSON.stringify({ network: [{ volumeId: 'v1', path: '/data' }] }), 2);
      await pod('p3', 'a1', 'EXITED', JSON.stringify({ network: [{ volumeId: 'v10', path: '/v1' }] }), 3);
      await pod('p4', 'a1', 'STARTING', JSON.stringify({ persistent: { size: 20, path: '/v1' } }), 4);
      await pod('p5', 'a1', 'EXITED', JSON.stringify({ network: [{ volumeId: 'v1', path: '/x' }] }), 5);
      await pod('p6', 'a1', 'RUNNING', 'not json', 6);
      assert.deepEqual(await store.podsMounting('a1', 'v1'), ['p1', 'p5']);
      assert.deepEqual(await store.podsMounting('a1', 'v10'), ['p3']);
      assert.deepEqual(await store.podsMounting('a2', 'v1'), []);
    });

    test('delete removes the row once', async () => {
      assert.equal(await store.delete('v1', 3), true);
      assert.equal(await store.delete('v1', 3), false);
      assert.equal(await store.get('a1', 'v1'), null);
    });
  });
}
