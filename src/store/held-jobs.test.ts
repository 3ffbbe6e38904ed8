import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nextJobState, WORKER_LOST_ERROR, type JobState } from '../domain/job-state.js';
import type { JobRecord } from './job-record.js';
import { describeJobStore, T0, newJob } from '../../test/support/job-store-suite.js';

describeJobStore('HeldJobs', (s) => {
  const webhooksOf = (failed: readonly JobRecord[]) =>
    failed.flatMap((j) =>
      j.webhook ? [{ id: `d-${j.id}`, jobId: j.id, url: j.webhook, payloadJson: '{}', accountId: j.accountId }] : [],
    );
  /** A take of `n` jobs by `workerId`, saying it holds none, committed as the group commit does. */
  const takeHoldingNone = (workerId: string, n: number, now: number, retryBudget = 3, endpointId = 'ep1') =>
    s.store.committed.takeCommitted([{ endpointId, workerId, n, holdsNone: true }], now, {
      retryBudget,
      webhooksOf,
    });
  const state = async (id: string) => {
    const j = await s.store.rows.get(id);
    return j && [j.status, j.workerId, j.retries];
  };

  test("a lost worker's jobs go back to the queue, keeping their place, until the retry budget is spent", async () => {
    const [a, b, c] = [newJob(), newJob(), newJob()];
    await s.store.rows.insertMany([a, b, c]);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    for (let i = 1; i <= 2; i++) {
      const lost = await s.store.held.giveBack('w1', 'ep1', T0 + i, 2);
      assert.deepEqual(
        [lost.requeued.map((j) => [j.id, j.retries, j.queuedAt, j.workerId]), lost.failed],
        [[[a.id, i, T0 + i, null]], []],
      );
      const [again] = await s.store.claims.takeNext('ep1', 'w1', 1, T0 + i);
      assert.equal(again?.id, a.id, 'a requeued job keeps its place at the head of the queue');
    }
    const last = await s.store.held.giveBack('w1', 'ep1', T0 + 10, 2);
    assert.deepEqual(last.requeued, []);
    assert.deepEqual(
      last.failed.map((j) => [j.id, j.status, j.error, j.completedAt, j.executionMs, j.retries]),
      [[a.id, 'FAILED', WORKER_LOST_ERROR, T0 + 10, 8, 2]],
    );
    assert.equal((await s.store.stats.queueStats('ep1')).retried, 1);
  });

  test('jobs the platform takes back without a retry counted go back to the queue at their place, retries kept, even with the budget spent', async () => {
    const [a, b] = [newJob(), newJob()];
    await s.store.rows.insertMany([a, b]);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    const back = await s.store.held.giveBack('w1', 'ep1', T0 + 5, 0, undefined, undefined, false);
    assert.deepEqual(
      [back.requeued.map((j) => [j.id, j.status, j.retries, j.workerId, j.queuedAt]), back.failed],
      [[[a.id, 'IN_QUEUE', 0, null, T0 + 5]], []],
    );
    const [again] = await s.store.claims.takeNext('ep1', 'w2', 1, T0 + 6);
    assert.equal(again?.id, a.id, 'it keeps its place at the head of the queue');
    assert.equal((await s.store.stats.queueStats('ep1')).retried, 0, 'not counted as retried');
  });

  test("giving a job back writes what the state machine's worker-lost transition says, in both branches", async () => {
    const facts = (j: JobRecord): Omit<JobState, 'stopRequested'> => ({
      status: j.status,
      workerId: j.workerId,
      retries: j.retries,
      queuedAt: j.queuedAt,
      startedAt: j.startedAt,
      completedAt: j.completedAt,
      delayMs: j.delayMs,
      executionMs: j.executionMs,
      output: j.outputJson,
      error: j.error,
    });
    for (const retryBudget of [1, 0]) {
      await s.t.db.kysely.deleteFrom('jobs').execute();
      const job = newJob();
      await s.store.rows.insertMany([job]);
      await s.store.claims.takeNext('ep1', 'w1', 1, T0 + 10);
      await s.store.claims.completeMany(
        [{ id: job.id, workerId: 'w1', status: 'IN_PROGRESS', outputJson: '"half"', error: null }],
        T0 + 20,
      );
      const before = (await s.store.rows.get(job.id))!;
      const expected = nextJobState(
        { ...facts(before), stopRequested: false },
        { type: 'worker-lost', retryBudget },
        T0 + 70,
      );
      assert.equal(expected.kind, 'changed');
      const back = await takeHoldingNone('w1', 0, T0 + 70, retryBudget);
      const [after] = [...back.requeued, ...back.failed];
      const { stopRequested: _, ...want } = (expected as { job: JobState }).job;
      assert.deepEqual(facts(after!), want, `retry budget ${retryBudget}`);
    }
  });

  test('a take whose worker says it holds no job gives back what it held before claiming, and may take it again at once', async () => {
    const [a, b, c] = [newJob(), newJob(), newJob()];
    await s.store.rows.insertMany([a, b, c]);
    await s.store.claims.takeNext('ep1', 'w1', 2, T0);
    const batch = await takeHoldingNone('w1', 1, T0 + 5);
    assert.deepEqual(batch.requeued.map((j) => [j.id, j.status, j.retries]).sort(), [
      [a.id, 'IN_QUEUE', 1],
      [b.id, 'IN_QUEUE', 1],
    ]);
    assert.deepEqual(batch.failed, []);
    assert.deepEqual(
      batch.taken.map((r) => r.map((j) => [j.id, j.workerId, j.retries, j.startedAt])),
      [[[a.id, 'w1', 1, T0 + 5]]],
      'the job at the head of the queue is its own again',
    );
    assert.deepEqual(await state(b.id), ['IN_QUEUE', null, 1]);
    assert.deepEqual(await state(c.id), ['IN_QUEUE', null, 0]);
  });

  test("a take saying its worker holds none gives back only that worker's jobs through that endpoint", async () => {
    const [mine, twin, other] = [newJob(), newJob({ endpointId: 'ep2' }), newJob()];
    await s.store.rows.insertMany([mine, twin, other]);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    await s.store.claims.takeNext('ep2', 'w1', 1, T0);
    await s.store.claims.takeNext('ep1', 'w2', 1, T0);
    const batch = await takeHoldingNone('w1', 1, T0 + 5);
    assert.deepEqual(
      batch.requeued.map((j) => j.id),
      [mine.id],
    );
    assert.deepEqual(
      await state(twin.id),
      ['IN_PROGRESS', 'w1', 0],
      "the same id's worker of another endpoint keeps its job",
    );
    assert.deepEqual(await state(other.id), ['IN_PROGRESS', 'w2', 0]);
  });

  test("takes of several workers saying they hold none, committed together, each give back their own worker's jobs", async () => {
    const [a, b, c, d] = [newJob(), newJob(), newJob({ endpointId: 'ep2' }), newJob()];
    await s.store.rows.insertMany([a, b, c, d]);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    await s.store.claims.takeNext('ep1', 'w2', 1, T0);
    await s.store.claims.takeNext('ep2', 'w1', 1, T0);
    await s.store.claims.takeNext('ep1', 'w3', 1, T0);
    const batch = await s.store.committed.takeCommitted(
      [
        { endpointId: 'ep1', workerId: 'w1', n: 0, holdsNone: true },
        { endpointId: 'ep2', workerId: 'w1', n: 0, holdsNone: true },
        { endpointId: 'ep1', workerId: 'w2', n: 0, holdsNone: true },
        { endpointId: 'ep1', workerId: 'w1', n: 0, holdsNone: true },
        { endpointId: 'ep1', workerId: 'w3', n: 0 },
      ],
      T0 + 1,
      { retryBudget: 3, webhooksOf },
    );
    assert.deepEqual(batch.requeued.map((j) => j.id).sort(), [a.id, b.id, c.id].sort());
    assert.deepEqual(await state(d.id), ['IN_PROGRESS', 'w3', 0]);
  });

  test('a take that says nothing of its jobs, or says it holds some, gives nothing back', async () => {
    const [a, b] = [newJob(), newJob()];
    await s.store.rows.insertMany([a, b]);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    const plain = await s.store.committed.takeCommitted([{ endpointId: 'ep1', workerId: 'w1', n: 1 }], T0 + 1, {
      retryBudget: 3,
      webhooksOf,
    });
    assert.deepEqual([plain.requeued, plain.failed], [[], []]);
    const unasked = await s.store.committed.takeCommitted(
      [{ endpointId: 'ep1', workerId: 'w1', n: 1, holdsNone: true }],
      T0 + 2,
    );
    assert.deepEqual([unasked.requeued, unasked.failed], [[], []], 'without a give-back rule, the mark is ignored');
    assert.deepEqual(await state(a.id), ['IN_PROGRESS', 'w1', 0]);
    assert.deepEqual(await state(b.id), ['IN_PROGRESS', 'w1', 0]);
  });

  test("past the retry budget a take's give-back fails the job as a lost worker's, its webhook row written in the take's transaction", async () => {
    const a = newJob({ webhook: 'http://127.0.0.1:1/hook' });
    await s.store.rows.insertMany([a]);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    const batch = await takeHoldingNone('w1', 1, T0 + 50, 0);
    assert.deepEqual(
      batch.failed.map((j) => [j.id, j.status, j.error, j.workerId, j.executionMs]),
      [[a.id, 'FAILED', WORKER_LOST_ERROR, 'w1', 50]],
    );
    assert.deepEqual(batch.taken, [[]], 'a FAILED job is not taken again');
    const rows = await s.t.db.kysely.selectFrom('webhook_deliveries').select(['job_id', 'status']).execute();
    assert.deepEqual(rows, [{ job_id: a.id, status: 'PENDING' }]);
  });

  test('every take stamps its jobs with one order, larger than any earlier take of the worker; a job taken again gets a new one', async () => {
    const jobs = [newJob(), newJob(), newJob()];
    await s.store.rows.insertMany(jobs);
    await s.store.claims.takeNext('ep1', 'w1', 2, T0);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    const held = new Map((await s.store.held.list('w1', 'ep1')).map((j) => [j.id, j]));
    const [first, second, third] = jobs.map((j) => held.get(j.id)!);
    assert.equal(first!.takenSeq, second!.takenSeq, 'one take, one order');
    assert.ok(third!.takenSeq! > first!.takenSeq!, `a later take is later (${third!.takenSeq} > ${first!.takenSeq})`);
    assert.equal(first!.startedAt, T0);
    await s.store.held.giveBack('w1', 'ep1', T0, 3);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    const [again] = await s.store.held.list('w1', 'ep1');
    assert.equal(again!.id, first!.id);
    assert.ok(again!.takenSeq! > third!.takenSeq!, 'taken again: a new order, even in the same millisecond');
  });

  test('a give-back of listed jobs leaves a job that finished or was taken again since it was listed', async () => {
    const [a, b] = [newJob(), newJob()];
    await s.store.rows.insertMany([a, b]);
    await s.store.claims.takeNext('ep1', 'w1', 2, T0);
    const listed = await s.store.held.list('w1', 'ep1');
    await s.store.claims.completeMany(
      [{ id: b.id, workerId: 'w1', status: 'COMPLETED', outputJson: '1', error: null }],
      T0,
    );
    await s.store.held.giveBack('w1', 'ep1', T0, 3);
    await s.store.claims.takeNext('ep1', 'w1', 1, T0);
    const moved = await s.store.held.giveBack('w1', 'ep1', T0, 3, undefined, listed);
    assert.deepEqual([moved.requeued, moved.failed], [[], []]);
    assert.deepEqual(await state(a.id), ['IN_PROGRESS', 'w1', 1]);
    assert.deepEqual(await state(b.id), ['COMPLETED', 'w1', 0]);
    assert.deepEqual(
      (await s.store.held.giveBack('w1', 'ep1', T0, 3, undefined, await s.store.held.list('w1', 'ep1'))).requeued.map(
        (j) => j.id,
      ),
      [a.id],
      'listed afresh, it goes',
    );
  });

  test('a result and a give-back racing for one job: exactly one of them applies', async () => {
    for (let round = 0; round < 20; round++) {
      const job = newJob();
      await s.store.rows.insertMany([job]);
      await s.store.claims.takeNext('ep1', 'w1', 1, T0);
      const result = {
        id: job.id,
        workerId: 'w1',
        endpointId: 'ep1',
        status: 'COMPLETED' as const,
        outputJson: '"done"',
        error: null,
      };
      const [completed, batch] = await Promise.all([
        s.store.committed.completeCommitted([result], T0 + 1, () => []),
        round % 2
          ? takeHoldingNone('w1', 0, T0 + 1)
          : s.t.db.withTransaction((tx) => s.store.held.giveBack('w1', 'ep1', T0 + 1, 3, tx)),
      ]);
      const appliedResult = completed[0] !== null;
      const gaveBack = batch.requeued.length === 1;
      assert.notEqual(appliedResult, gaveBack, `round ${round}: one and only one applied`);
      const after = await s.store.rows.get(job.id);
      assert.equal(after?.status, appliedResult ? 'COMPLETED' : 'IN_QUEUE');
      await s.t.db.kysely.deleteFrom('jobs').execute();
    }
  });
});
