import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { AccountStore } from './account-store.js';

for (const { name, skip } of dialects()) {
  describe(`AccountStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: AccountStore;
    before(async () => {
      t = await openTestDb(name);
      store = new AccountStore(t.db);
    });
    after(() => t?.cleanup());

    test('an account round-trips with its ssh keys', async () => {
      await store.insertAccount({ id: 'a1', name: 'alice', sshKeys: [], createdAt: 1_700_000_000_000 });
      await store.setSshKeys('a1', ['ssh-ed25519 AAAA x']);
      assert.deepEqual(await store.getAccount('a1'), {
        id: 'a1',
        name: 'alice',
        sshKeys: ['ssh-ed25519 AAAA x'],
        createdAt: 1_700_000_000_000,
      });
      assert.equal((await store.getAccountByName('alice'))?.id, 'a1');
      assert.equal(await store.getAccount('nope'), null);
    });

    test('account names are unique', async () => {
      await assert.rejects(store.insertAccount({ id: 'a2', name: 'alice', sshKeys: [], createdAt: 1 }));
    });

    test('keys are found by hash and a revoked key stays revoked', async () => {
      await store.insertKey({
        id: 'k1',
        accountId: 'a1',
        name: 'ci',
        scope: 'read',
        hash: 'h1',
        prefix: 'gty_abcd',
        rateLimitExempt: true,
        createdAt: 5,
        revokedAt: null,
        endpointId: null,
        workerId: null,
      });
      const key = await store.getKeyByHash('h1');
      assert.equal(key?.scope, 'read');
      assert.equal(key?.rateLimitExempt, true);
      assert.equal(await store.revokeKey('k1', 10), true);
      assert.equal(await store.revokeKey('k1', 11), false);
      assert.equal((await store.getKeyByHash('h1'))?.revokedAt, 10);
    });

    test('a transaction that throws leaves nothing behind', async () => {
      await assert.rejects(
        t.db.withTransaction(async (tx) => {
          await store.insertAccount({ id: 'a3', name: 'carol', sshKeys: [], createdAt: 1 }, tx);
          throw new Error('boom');
        }),
      );
      assert.equal(await store.getAccount('a3'), null);
    });
  });
}
