import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { AccountStore } from './account-store.js';
import { RegistryStore } from './registry-store.js';

for (const { name, skip } of dialects()) {
  describe(`RegistryStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: RegistryStore;
    before(async () => {
      t = await openTestDb(name);
      store = new RegistryStore(t.db);
      const accounts = new AccountStore(t.db);
      await accounts.insertAccount({ id: 'a1', name: 'alice', sshKeys: [], createdAt: 1 });
      await accounts.insertAccount({ id: 'a2', name: 'bob', sshKeys: [], createdAt: 1 });
    });
    after(() => t?.cleanup());

    test('a credential round-trips with its sealed secrets and is visible only to its account', async () => {
      const record = {
        id: 'r1',
        accountId: 'a1',
        name: 'ghcr',
        usernameSealed: 'u.sealed',
        passwordSealed: 'p.sealed',
        createdAt: 1_700_000_000_000,
      };
      await store.insert(record);
      assert.deepEqual(await store.get('a1', 'r1'), record);
      assert.equal(await store.get('a2', 'r1'), null);
      assert.deepEqual(
        (await store.list('a1')).map((r) => r.id),
        ['r1'],
      );
      assert.deepEqual(await store.list('a2'), []);
    });

    test('usage names the account’s live pods and templates that use the credential', async () => {
      await t.db.kysely
        .insertInto('pods')
        .values([
          {
            id: 'p1',
            account_id: 'a1',
            name: 'p1',
            status: 'RUNNING',
            desired_status: 'RUNNING',
            image: 'x',
            disk: 20,
            cloud: 'SECURE',
            registry: 'r1',
            created_at: 1,
            updated_at: 1,
          },
          {
            id: 'p2',
            account_id: 'a1',
            name: 'p2',
            status: 'TERMINATED',
            desired_status: 'TERMINATED',
            image: 'x',
            disk: 20,
            cloud: 'SECURE',
            registry: 'r1',
            created_at: 2,
            updated_at: 2,
          },
        ] as never)
        .execute();
      await t.db.kysely
        .insertInto('templates')
        .values({
          id: 't1',
          account_id: 'a1',
          name: 't',
          image: 'x',
          container_disk_gb: 20,
          registry_id: 'r1',
          created_at: 1,
          updated_at: 1,
        } as never)
        .execute();
      assert.deepEqual(await store.usage('a1', 'r1'), { pods: ['p1'], templates: ['t1'] });
      assert.deepEqual(await store.usage('a2', 'r1'), { pods: [], templates: [] });
    });

    test('updateSecrets replaces the sealed username and password of the account’s credential only', async () => {
      assert.equal(await store.updateSecrets('a2', 'r1', { usernameSealed: 'bob.u', passwordSealed: 'bob.p' }), false);
      assert.equal(await store.updateSecrets('a1', 'missing', { usernameSealed: 'x', passwordSealed: 'y' }), false);
      assert.deepEqual(await store.get('a1', 'r1'), {
        id: 'r1',
        accountId: 'a1',
        name: 'ghcr',
        usernameSealed: 'u.sealed',
        passwordSealed: 'p.sealed',
        createdAt: 1_700_000_000_000,
      });
      assert.equal(
        await store.updateSecrets('a1', 'r1', { usernameSealed: 'u2.sealed', passwordSealed: 'p2.sealed' }),
        true,
      );
      assert.deepEqual(await store.get('a1', 'r1'), {
        id: 'r1',
        accountId: 'a1',
        name: 'ghcr',
        usernameSealed: 'u2.sealed',
        passwordSealed: 'p2.sealed',
        createdAt: 1_700_000_000_000,
      });
    });

    test('delete removes the row once', async () => {
      assert.equal(await store.delete('r1'), true);
      assert.equal(await store.delete('r1'), false);
      assert.equal(await store.get('a1', 'r1'), null);
    });
  });
}
