import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { describeJobStore, T0, newJob, type JobStoreSuite } from '../../test/support/job-store-suite.js';
import { JobUsageStore } from './job-usage.js';

/** The job quotas' figures recomputed from the rows themselves, per account. */
async function truth(s: JobStoreSuite): Promise<Record<string, { queuedJobs: number; storedBytes: number }>> {
  const { rows } = await sql<{ account_id: string; queued: number; bytes: number }>`
    SELECT account_id, sum(queued) AS queued, sum(bytes) AS bytes FROM (
      SELECT account_id, CASE WHEN status = 'IN_QUEUE' THEN 1 ELSE 0 END AS queued,
        octet_length(input) + coalesce(octet_length(output), 0) + coalesce(octet_length(error), 0) AS bytes FROM jobs
      UNION ALL SELECT account_id, 0, octet_length(output) FROM job_stream
    ) AS u GROUP BY account_id`.execute(s.t.db.kysely);
  return Object.fromEntries(
    rows.map((r) => [r.account_id, { queuedJobs: Number(r.queued), storedBytes: Number(r.bytes) }]),
  );
}

/** The counters, with accounts whose figures are all zero left out (their rows stay, at 0). */
async function counters(s: JobStoreSuite): Promise<Record<string, { queuedJobs: number; storedBytes: number }>> {
  const all = await new JobUsageStore(s.t.db).byAccount();
  return Object.fromEntries([...all].filter(([, h]) => h.queuedJobs !== 0 || h.storedBytes !== 0));
}

describeJobStore('job usage counters', (s) => {
  test('every statement that writes jobs or stream chunks keeps the per-account counters equal to the rows', async () => {
    const check = async (step: string) => assert.deepEqual(await counters(s), await truth(s), step);
    const a = [
      newJob(),
      newJob(),
      newJob(),
      newJob({ inputJson: JSON.stringify({ text: 'ünïcödé €' }) }),
      newJob({ ttl: 1000 }),
    ];
    const b = [newJob({ accountId: 'acct2', endpointId: 'ep2' }), newJob({ accountId: 'acct2', endpointId: 'ep2' })];
    await s.store.rows.insertCommitted([...a, ...b]);
    await check('inserted');
    assert.equal((await counters(s)).acct1?.queuedJobs, 5);
    const [taken] = (await s.store.committed.takeCommitted([{ endpointId: 'ep1', workerId: 'w1', n: 3 }], T0 + 1))
      .taken;
    await check('taken');
    const [j1, j2, j3] = taken!;
    await s.store.stream.appendStream(
      j1!.id,
      [
        { seq: 1, outputJson: '"chunk one"', accountId: 'acct1' },
        { seq: 2, outputJson: '"chunk two"', accountId: 'acct1' },
      ],
      T0 + 2,
    );
    await s.store.stream.appendStream(j2!.id, [{ seq: 3, outputJson: '"kept"', accountId: 'acct1' }], T0 + 2);
    await check('streamed');
    assert.equal(await new JobUsageStore(s.t.db).streamBytes(j1!.id), 22);
    await s.store.stream.drainStream(j1!.id);
    await check('drained');
    await s.store.committed.completeCommitted(
      [
        { id: j1!.id, workerId: 'w1', status: 'IN_PROGRESS', outputJson: '"half way"', error: null },
        {
          id: j2!.id,
          workerId: 'w1',
          status: 'COMPLETED',
          outputJson: JSON.stringify({ result: 'x'.repeat(100) }),
          error: null,
        },
        { id: j3!.id, workerId: 'w1', status: 'FAILED', outputJson: null, error: 'a traceback' },
      ],
      T0 + 3,
      () => [],
    );
    await check('completed');
    await s.store.controls.cancel(j2!.id, T0 + 4);
    await s.store.controls.cancel(j1!.id, T0 + 4);
    await check('cancelled');
    await s.store.controls.retry(j3!.id, 1e9, T0 + 5);
    await check('retried');
    await s.store.committed.takeCommitted([{ endpointId: 'ep1', workerId: 'w2', n: 1 }], T0 + 6);
    await s.store.held.giveBack('w2', 'ep1', T0 + 7, 3);
    await check('requeued');
    await s.store.committed.takeCommitted([{ endpointId: 'ep1', workerId: 'w2', n: 1 }], T0 + 7);
    await s.store.committed.takeCommitted([{ endpointId: 'ep1', workerId: 'w2', n: 0, holdsNone: true }], T0 + 7, {
      retryBudget: 3,
      webhooksOf: () => [],
    });
    await check('given back by a take saying its worker holds none');
    await s.store.committed.takeCommitted([{ endpointId: 'ep1', workerId: 'w3', n: 1 }], T0 + 8);
    assert.equal((await s.store.sweeps.timeOut(T0 + 8 + 600_000)).length, 1);
    await check('timed out');
    await s.store.controls.purgeQueue('ep2');
    await check('purged');
    await s.store.sweeps.expire(T0 + 86_400_000 * 2);
    await check('expired');
    assert.deepEqual(await counters(s), {});
  });
  test('folding the shards keeps every account’s sums and leaves one row per account (plus shards a running transaction holds)', async () => {
    const usage = new JobUsageStore(s.t.db);
    await s.store.rows.insertCommitted([newJob(), newJob({ accountId: 'acct2', endpointId: 'ep2' })]);
    if (s.dialect !== 'postgres') {
      assert.equal(await usage.foldShards(), 0, 'one writer, one shard: nothing to fold');
      return;
    }
    // the shards other connections (backend PIDs) left behind
    await sql`INSERT INTO job_usage (account_id, shard, queued_jobs, stored_bytes) VALUES
      ('acct1', 101, 2, 50), ('acct1', 102, -1, 7), ('acct2', 103, 0, -3), ('acct3', 104, 4, 40)`.execute(
      s.t.db.kysely,
    );
    const rowsOf = async () => {
      const rows = await s.t.db.kysely.selectFrom('job_usage').select(['account_id', 'shard']).execute();
      return rows.reduce<Record<string, number>>((n, r) => ({ ...n, [r.account_id]: (n[r.account_id] ?? 0) + 1 }), {});
    };
    const before = await usage.byAccount();
    // a job transaction holding its own shard's row while the fold runs: skipped, not waited for
    let release!: () => void;
    let held!: () => void;
    const heldRow = new Promise<void>((r) => (held = r));
    const running = s.t.db.withTransaction(async (tx) => {
      await sql`UPDATE job_usage SET stored_bytes = stored_bytes + 5 WHERE account_id = 'acct3' AND shard = 104`.execute(
        tx,
      );
      held();
      await new Promise<void>((r) => (release = r));
    });
    await heldRow;
    const shards = Number(
      (await sql<{ n: string }>`SELECT count(*) AS n FROM job_usage WHERE shard <> 0`.execute(s.t.db.kysely)).rows[0]!
        .n,
    );
    assert.equal(await usage.foldShards(), shards - 1, 'every shard but the held one was folded');
    release();
    await running;
    const after = await usage.byAccount();
    assert.deepEqual(
      after,
      new Map([...before].map(([id, h]) => [id, id === 'acct3' ? { ...h, storedBytes: h.storedBytes + 5 } : h])),
      'sums unchanged, the held increment kept',
    );
    assert.deepEqual(
      await rowsOf(),
      { acct1: 1, acct2: 1, acct3: 1 },
      'the held shard is still its own row (acct3 had no other)',
    );
    await usage.foldShards();
    assert.deepEqual(await usage.byAccount(), after);
    assert.deepEqual(await rowsOf(), { acct1: 1, acct2: 1, acct3: 1 });
  });

  test('every path that inserts jobs adds exactly them to the quota counters, and a rolled-back insert adds nothing', async () => {
    const check = async (step: string) =>
      assert.deepEqual(await counters(s), await truth(s), `${step} (${s.executor})`);
    const wide = (accountId: string, endpointId: string) =>
      newJob({ accountId, endpointId, inputJson: JSON.stringify({ text: 'ünïcödé € 🚀 漢字', lone: '\ud800' }) });
    // no job left: start the counters from nothing (the fold test above leaves other writers' shards)
    await s.t.db.kysely.deleteFrom('job_usage').execute();
    // the group commit's write (SQLite: the synchronous executor), several accounts in one batch
    await s.store.rows.insertCommitted([wide('acct1', 'ep1'), wide('acct2', 'ep2'), newJob()]);
    await check('group commit');
    // more rows than one insert statement takes (PostgreSQL: several chunks in one transaction)
    await s.store.rows.insertCommitted(Array.from({ length: 1201 }, (_, i) => wide(i % 3 ? 'acct1' : 'acct3', 'ep1')));
    await check('group commit over several chunks');
    // given no transaction, and inside the caller's
    await s.store.rows.insertMany([wide('acct2', 'ep2'), newJob({ inputJson: '"raw \ud83d"' })]);
    await check('insertMany on its own');
    await s.t.db.withTransaction((tx) => s.store.rows.insertMany([wide('acct4', 'ep2'), wide('acct1', 'ep1')], tx));
    await check('insertMany in a transaction');
    await s.store.rows.insertMany([]);
    await s.store.rows.insertCommitted([]);
    await check('nothing inserted');
    const before = await counters(s);
    await assert.rejects(
      s.t.db.withTransaction(async (tx) => {
        await s.store.rows.insertMany([wide('acct5', 'ep1'), wide('acct1', 'ep1')], tx);
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    assert.deepEqual(await counters(s), before, 'a rolled-back insert adds nothing');
    await check('rolled back');
    assert.equal((await counters(s)).acct1?.queuedJobs, 2 + 800 + 1 + 1);
  });
});
