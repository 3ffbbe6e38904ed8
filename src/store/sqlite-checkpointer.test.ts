import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openTestDb } from '../../test/support/harness.js';

const eventually = async (what: string, check: () => boolean, ms = 10_000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`never happened within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

test('the background checkpointer copies committed log frames into the database file from its own thread', async () => {
  const t = await openTestDb('sqlite');
  try {
    const stats = t.db.checkpoints;
    assert.ok(stats, 'a SQLite file database has a checkpointer');
    for (let i = 0; i < 20; i++) {
      await t.db.kysely
        .insertInto('accounts')
        .values({ id: `acct-${i}`, name: `a${i}`, ssh_keys: '[]', created_at: Date.now() })
        .execute();
    }
    await eventually(
      'a checkpoint that copied every frame written',
      () => stats.logFrames > 0 && stats.checkpointedFrames === stats.logFrames,
    );
    assert.equal(stats.lastError, null);
  } finally {
    await t.cleanup();
  }
});
