import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeJobStore, MIN, T0, newJob } from '../../test/support/job-store-suite.js';

describeJobStore('JobClaims', (s) => {
  test('take hands out the oldest queued jobs of the endpoint first (FIFO) and marks them IN_PROGRESS', async () => {
    const jobs = [newJob(), newJob(), newJob(), newJob({ endpointId: 'other' })];
    await s.store.rows.insertMany(jobs);
    const first = await s.store.claims.takeNext('ep1', 'w1', 1, T0 + 500);
    assert.deepEqual(
      first.map((j) => j.id),
      [jobs[0]!.id],
    );
    assert.equal(first[0]!.status, 'IN_PROGRESS');
    assert.equal(first[0]!.workerId, 'w1');
    assert.equal(first[0]!.startedAt, T0 + 500);
    assert.equal(first[0]!.delayMs, 500);
    assert.equal(first[0]!.timeoutAt, T0 + 500 + 600_000);
    const batch = await s.store.claims.takeNext('ep1', 'w2', 10, T0 + 600);
    assert.deepEqual(
      batch.map((j) => j.id),
      [jobs[1]!.id, jobs[2]!.id],
    );
    assert.deepEqual(await s.store.claims.takeNext('ep1', 'w3', 10, T0 + 700), []);
  });

  test('a job whose ttl has passed is never taken', async () => {
    const job = newJob({ ttl: 10_000 });
    await s.store.rows.insertMany([job]);
    assert.deepEqual(await s.store.claims.takeNext('ep1', 'w1', 1, T0 + 10_000), []);
  });

  test('several takes in one transaction deal the queue head out to the requests in order', async () => {
    const jobs = [newJob(), newJob(), newJob(), newJob(), newJob({ endpointId: 'ep2' })];
    await s.store.rows.insertMany(jobs);
    const res = await s.t.db.withTransaction((tx) =>
      s.store.claims.takeMany(
        [
          { endpointId: 'ep1', workerId: 'w1', n: 1 },
          { endpointId: 'ep2', workerId: 'w2', n: 5 },
          { endpointId: 'ep1', workerId: 'w3', n: 2 },
          { endpointId: 'ep1', workerId: 'w4', n: 2 },
        ],
        T0 + 5,
        tx,
      ),
    );
    assert.deepEqual(
      res.map((r) => r.map((j) => [j.id, j.workerId, j.delayMs])),
      [
        [[jobs[0]!.id, 'w1', 5]],
        [[jobs[4]!.id, 'w2', 5]],
        [
          [jobs[1]!.id, 'w3', 5],
          [jobs[2]!.id, 'w3', 5],
        ],
        [[jobs[3]!.id, 'w4', 5]],
      ],
    );
  });

  test('in one batch of posts, the first result of a job wins and later posts for it change nothing', async () => {
    const [a, b] = [newJob(), newJob()];
    await s.store.rows.insertMany([a, b]);
    await s.store.claims.takeNext('ep1', 'w1', 2, T0);
    const res = await s.store.claims.completeMany(
      [
        { id: a.id, workerId: 'w1', status: 'IN_PROGRESS', outputJson: '"50%"', error: null },
        { id: a.id, workerId: 'w1', status: 'COMPLETED', outputJson: '"done"', error: null },
        { id: a.id, workerId: 'w1', status: 'COMPLETED', outputJson: '"done"', error: null },
        { id: b.id, workerId: 'w1', status: 'IN_PROGRESS', outputJson: '"10%"', error: null },
      ],
      T0 + 10,
    );
    assert.deepEqual(
      res.map((r) => r && [r.status, r.outputJson]),
      [null, ['COMPLETED', '"done"'], null, ['IN_PROGRESS', '"10%"']],
    );
  });

  test("a result naming another endpoint than the job's changes nothing, in a batch or alone, committed or not", async () => {
    const [a, b] = [newJob(), newJob()];
    await s.store.rows.insertMany([a, b]);
    await s.store.claims.takeNext('ep1', 'w1', 2, T0);
    const posts = [
      {
        id: a.id,
        workerId: 'w1',
        endpointId: 'ep2',
        status: 'COMPLETED' as const,
        outputJson: '"foreign"',
        error: null,
      },
      {
        id: b.id,
        workerId: 'w1',
        endpointId: 'ep2',
        status: 'IN_PROGRESS' as const,
        outputJson: '"foreign"',
        error: null,
      },
      { id: b.id, workerId: 'w1', endpointId: 'ep1', status: 'COMPLETED' as const, outputJson: '"own"', error: null },
    ];
    assert.deepEqual(
      (await s.store.claims.completeMany(posts, T0 + 10)).map((r) => r && [r.status, r.outputJson]),
      [null, null, ['COMPLETED', '"own"']],
    );
    assert.deepEqual(
      (await s.store.committed.completeCommitted([posts[0]!], T0 + 10, () => [])).map((r) => r?.status ?? null),
      [null],
    );
    assert.equal((await s.store.rows.get(a.id))?.status, 'IN_PROGRESS');
  });

  test('a result is applied once, only from the worker holding the job, and sets execution time and retention', async () => {
    const run = newJob();
    const sync = newJob({ sync: true });
    await s.store.rows.insertMany([run, sync]);
    await s.store.claims.takeNext('ep1', 'w1', 2, T0 + 100);
    const foreign = await s.store.claims.completeMany(
      [{ id: run.id, workerId: 'w2', status: 'COMPLETED', outputJson: '1', error: null }],
      T0 + 1100,
    );
    assert.deepEqual(foreign, [null]);
    const done = await s.store.claims.completeMany(
      [
        { id: run.id, workerId: 'w1', status: 'COMPLETED', outputJson: '{"ok":true}', error: null },
        { id: sync.id, workerId: 'w1', status: 'FAILED', outputJson: null, error: 'boom' },
      ],
      T0 + 1100,
    );
    assert.deepEqual(
      done.map((j) => [j?.status, j?.executionMs, j?.retainUntil, j?.outputJson, j?.error]),
      [
        ['COMPLETED', 1000, T0 + 1100 + 30 * MIN, '{"ok":true}', null],
        ['FAILED', 1000, T0 + 1100 + MIN, null, 'boom'],
      ],
    );
    const again = await s.store.claims.completeMany(
      [{ id: run.id, workerId: 'w1', status: 'IN_PROGRESS', outputJson: '"late"', error: null }],
      T0 + 1200,
    );
    assert.deepEqual(again, [null]);
    assert.equal((await s.store.rows.get(run.id))?.outputJson, '{"ok":true}');
  });

  test('progress replaces the visible output of a running job', async () => {
    const job = newJob();
    await s.store.rows.insertMany([job]);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    const [p] = await s.store.claims.completeMany(
      [{ id: job.id, workerId: 'w1', status: 'IN_PROGRESS', outputJson: '"50%"', error: null }],
      T0 + 10,
    );
    assert.equal(p?.status, 'IN_PROGRESS');
    assert.equal(p?.outputJson, '"50%"');
  });

  if (s.dialect === 'postgres') {
    test('two concurrent takers with SKIP LOCKED never hand out a job twice', async () => {
      const jobs = Array.from({ length: 400 }, () => newJob());
      await s.store.rows.insertMany(jobs);
      const seen: string[] = [];
      const taker = async (worker: string): Promise<void> => {
        for (;;) {
          const got = await s.t.db.withTransaction((tx) => s.store.claims.takeNext('ep1', worker, 3, T0, tx));
          if (got.length === 0) return;
          seen.push(...got.map((j) => j.id));
        }
      };
      await Promise.all(['w1', 'w2', 'w3', 'w4'].map(taker));
      assert.equal(seen.length, 400);
      assert.equal(new Set(seen).size, 400);
    });

    test('concurrent batched takes with SKIP LOCKED never hand out a job twice', async () => {
      const jobs = Array.from({ length: 400 }, () => newJob());
      await s.store.rows.insertMany(jobs);
      const seen: string[] = [];
      const taker = async (worker: string): Promise<void> => {
        for (;;) {
          const got = await s.t.db.withTransaction((tx) =>
            s.store.claims.takeMany(
              [
                { endpointId: 'ep1', workerId: `${worker}a`, n: 2 },
                { endpointId: 'ep1', workerId: `${worker}b`, n: 3 },
              ],
              T0,
              tx,
            ),
          );
          const ids = got.flat().map((j) => j.id);
          if (ids.length === 0) return;
          seen.push(...ids);
        }
      };
      await Promise.all(['w1', 'w2', 'w3', 'w4'].map(taker));
      assert.equal(seen.length, 400);
      assert.equal(new Set(seen).size, 400);
    });
  }

  test('takes committed together deal the queue head out FIFO to the requests in order, each job claimed for its worker', async () => {
    const jobs = [newJob(), newJob(), newJob(), newJob(), newJob({ endpointId: 'ep2' })];
    await s.store.rows.insertMany(jobs);
    const res = await s.store.committed.takeCommitted(
      [
        { endpointId: 'ep1', workerId: 'w1', n: 1 },
        { endpointId: 'ep1', workerId: 'w2', n: 2 },
        { endpointId: 'ep3', workerId: 'w3', n: 5 },
        { endpointId: 'ep2', workerId: 'w4', n: 0 },
      ],
      T0 + 100,
    );
    assert.deepEqual(
      res.taken.map((r) => r.map((j) => [j.id, j.workerId, j.delayMs, j.timeoutAt])),
      [
        [[jobs[0]!.id, 'w1', 100, T0 + 100 + 600_000]],
        [
          [jobs[1]!.id, 'w2', 100, T0 + 100 + 600_000],
          [jobs[2]!.id, 'w2', 100, T0 + 100 + 600_000],
        ],
        [],
        [],
      ],
    );
    assert.equal((await s.store.rows.get(jobs[3]!.id))?.status, 'IN_QUEUE');
  });

  test("results committed together write the outbox rows their webhooks ask for, due at once, in the results' transaction", async () => {
    const job = newJob({ webhook: 'http://127.0.0.1:1/h', sync: true });
    await s.store.rows.insertMany([job]);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    const changed = await s.store.committed.completeCommitted(
      [{ id: job.id, workerId: 'w1', status: 'FAILED', outputJson: null, error: 'boom' }],
      T0 + 500,
      (rows) =>
        rows.flatMap((r) =>
          r?.webhook
            ? [{ id: `d-${r.id}`, jobId: r.id, url: r.webhook, payloadJson: '{}', accountId: r.accountId }]
            : [],
        ),
    );
    assert.equal(changed[0]?.status, 'FAILED');
    assert.equal(changed[0]?.executionMs, 500);
    assert.equal(changed[0]?.retainUntil, T0 + 500 + 60_000, 'a /runsync job is kept one minute');
    const d = await s.t.db.kysely.selectFrom('webhook_deliveries').selectAll().executeTakeFirstOrThrow();
    assert.deepEqual(
      [d.id, d.status, Number(d.next_attempt_at), d.attempts, d.account_id, d.receiver],
      [`d-${job.id}`, 'PENDING', T0 + 500, 0, 'acct1', 'http://127.0.0.1:1'],
    );
  });
});
