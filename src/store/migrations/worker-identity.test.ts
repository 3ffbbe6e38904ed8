import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { dialects, openTestDb, type TestDb } from '../../../test/support/harness.js';
import { AccountStore } from '../account-store.js';
import { workerIdentity } from './worker-identity.js';

for (const { name, skip } of dialects()) {
  describe(`migration 0005 on ${name}`, { skip }, () => {
    let t: TestDb;
    before(async () => {
      t = await openTestDb(name);
    });
    after(() => t?.cleanup());
    const revokeAsMigrated = async () => {
      for (const revoke of workerIdentity(name === 'postgres' ? 'postgres' : 'sqlite').filter((s) =>
        s.startsWith('UPDATE api_keys'),
      ))
        await sql.raw(revoke).execute(t.db.kysely);
    };

    test('write keys the autoscaler minted before workers had their own keys are revoked; other keys stay', async () => {
      const store = new AccountStore(t.db);
      await store.insertAccount({ id: 'a1', name: 'alice', sshKeys: [], createdAt: 1 });
      const key = (id: string, keyName: string, rateLimitExempt: boolean) =>
        store.insertKey({
          id,
          accountId: 'a1',
          name: keyName,
          scope: 'write',
          hash: `h-${id}`,
          prefix: 'gty_abcd',
          rateLimitExempt,
          createdAt: 1,
          revokedAt: null,
          endpointId: null,
          workerId: null,
        });
      await key('legacy', 'workers of endpoint ep1 (autoscaler)', true);
      await key('admin', 'admin (first start)', true);
      await key('lookalike', 'workers of endpoint ep1 (autoscaler)', false);
      await revokeAsMigrated();
      const revoked = (await store.listKeys('a1')).filter((k) => k.revokedAt !== null).map((k) => k.id);
      assert.deepEqual(revoked, ['legacy']);
      assert.ok(
        ((await store.getKeyByHash('h-legacy'))?.revokedAt ?? 0) > 1_600_000_000_000,
        'revoked now, in milliseconds',
      );
    });

    test('write keys `gantry worker env` minted before (named "worker <endpoint id>") are revoked; keys merely named alike stay', async () => {
      const store = new AccountStore(t.db);
      await store.insertAccount({ id: 'a2', name: 'bob', sshKeys: [], createdAt: 1 });
      const key = (id: string, keyName: string, scope: 'write' | 'read') =>
        store.insertKey({
          id,
          accountId: 'a2',
          name: keyName,
          scope,
          hash: `h-${id}`,
          prefix: 'gty_abcd',
          rateLimitExempt: false,
          createdAt: 1,
          revokedAt: null,
          endpointId: null,
          workerId: null,
        });
      await key('env', 'worker k3v9q0a1b2c3d4', 'write');
      await key('read', 'worker k3v9q0a1b2c3d4', 'read');
      await key('laptop', 'worker laptop', 'write');
      await key('longer', 'worker k3v9q0a1b2c3d4 (old)', 'write');
      await key('upper', 'worker K3V9Q0A1B2C3D4', 'write');
      await revokeAsMigrated();
      const revoked = (await store.listKeys('a2')).filter((k) => k.revokedAt !== null).map((k) => k.id);
      assert.deepEqual(revoked, ['env']);
    });
  });
}
