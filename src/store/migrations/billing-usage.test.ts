import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { dialects, openTestDb, type TestDb } from '../../../test/support/harness.js';
import { AccountStore } from '../account-store.js';
import { billingUsageTables } from './billing-usage.js';

for (const { name, skip } of dialects()) {
  describe(`migration 0013 on ${name}`, { skip }, () => {
    let t: TestDb;
    before(async () => {
      t = await openTestDb(name);
    });
    after(() => t?.cleanup());

    test('a network volume stored before billing intervals existed is billed from its creation at its size', async () => {
      await new AccountStore(t.db).insertAccount({ id: 'a1', name: 'alice', sshKeys: [], createdAt: 1 });
      await t.db.kysely
        .insertInto('network_volumes')
        .values({ id: 'old', account_id: 'a1', name: 'old', size: 50, data_center_id: 'US-TX-3', created_at: 1234 })
        .execute();
      const backfill = billingUsageTables(name).filter((s) => s.startsWith('INSERT INTO volume_usage'));
      assert.equal(backfill.length, 1);
      for (const s of backfill) await sql.raw(s).execute(t.db.kysely);
      const rows = await t.db.kysely.selectFrom('volume_usage').selectAll().where('volume_id', '=', 'old').execute();
      assert.deepEqual(
        rows.map((r) => [r.account_id, Number(r.size_gb), Number(r.started_at), r.ended_at]),
        [['a1', 50, 1234, null]],
      );
    });
  });
}
