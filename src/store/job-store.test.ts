import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { JobStore, type NewJob } from './job-store.js';
import { WORKER_LOST_ERROR } from '../domain/job-state.js';

const T0 = 1_767_225_600_000;
const MIN = 60_000;
let counter = 0;

const newJob = (patch: Partial<NewJob> & { ttl?: number; executionTimeout?: number; lowPriority?: boolean } = {}): NewJob => {
  const n = ++counter;
  const { ttl, executionTimeout, lowPriority, ...rest } = patch;
  return {
    id: `job-${n}`,
    endpointId: 'ep1',
    accountId: 'acct1',
    seq: n,
    inputJson: JSON.stringify({ n }),
    webhook: null,
    s3ConfigJson: null,
    policy: { executionTimeout: executionTimeout ?? 600_000, lowPriority: lowPriority ?? false, ttl: ttl ?? 86_400_000 },
    sync: false,
    createdAt: T0,
    ...rest,
  };
};

for (const { name, skip } of dialects()) {
  describe(`JobStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: JobStore;
    before(async () => {
      t = await openTestDb(name);
      store = new JobStore(t.db);
    });
    after(() => t?.cleanup());
    beforeEach(async () => {
      await t.db.kysely.deleteFrom('jobs').execute();
      await t.db.kysely.deleteFrom('job_stream').execute();
    });

    test('a batch of jobs is inserted IN_QUEUE with its policy, ttl deadline and input intact', async () => {
      const jobs = Array.from({ length: 1200 }, () => newJob({ ttl: 20_000, lowPriority: true, webhook: 'http://hook', s3ConfigJson: '{"bucketName":"b"}' }));
      await t.db.withTransaction((tx) => store.insertMany(jobs, tx));
      const got = await store.get(jobs[1100]!.id);
      assert.equal(got?.status, 'IN_QUEUE');
      assert.equal(got?.expiresAt, T0 + 20_000);
      assert.deepEqual(got?.policy, { executionTimeout: 600_000, lowPriority: true, ttl: 20_000 });
      assert.equal(got?.inputJson, jobs[1100]!.inputJson);
      assert.equal(got?.s3ConfigJson, '{"bucketName":"b"}');
      assert.equal((await store.queueStats('ep1')).inQueue, 1200);
    });

    test('take hands out the oldest queued jobs of the endpoint first (FIFO) and marks them IN_PROGRESS', async () => {
      const jobs = [newJob(), newJob(), newJob(), newJob({ endpointId: 'other' })];
      await store.insertMany(jobs);
      const first = await store.takeNext('ep1', 'w1', 1, T0 + 500);
      assert.deepEqual(first.map((j) => j.id), [jobs[0]!.id]);
      assert.equal(first[0]!.status, 'IN_PROGRESS');
      assert.equal(first[0]!.workerId, 'w1');
      assert.equal(first[0]!.startedAt, T0 + 500);
      assert.equal(first[0]!.delayMs, 500);
      assert.equal(first[0]!.timeoutAt, T0 + 500 + 600_000);
      const batch = await store.takeNext('ep1', 'w2', 10, T0 + 600);
      assert.deepEqual(batch.map((j) => j.id), [jobs[1]!.id, jobs[2]!.id]);
      assert.deepEqual(await store.takeNext('ep1', 'w3', 10, T0 + 700), []);
    });

    test('a job whose ttl has passed is never taken', async () => {
      const job = newJob({ ttl: 10_000 });
      await store.insertMany([job]);
      assert.deepEqual(await store.takeNext('ep1', 'w1', 1, T0 + 10_000), []);
    });

    test('several takes in one transaction deal the queue head out to the requests in order', async () => {
      const jobs = [newJob(), newJob(), newJob(), newJob(), newJob({ endpointId: 'ep2' })];
      await store.insertMany(jobs);
      const res = await t.db.withTransaction((tx) =>
        store.takeMany(
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
      await store.insertMany([a!, b!]);
      await store.takeNext('ep1', 'w1', 2, T0);
      const res = await store.completeMany(
        [
          { id: a!.id, workerId: 'w1', status: 'IN_PROGRESS', outputJson: '"50%"', error: null },
          { id: a!.id, workerId: 'w1', status: 'COMPLETED', outputJson: '"done"', error: null },
          { id: a!.id, workerId: 'w1', status: 'COMPLETED', outputJson: '"done"', error: null },
          { id: b!.id, workerId: 'w1', status: 'IN_PROGRESS', outputJson: '"10%"', error: null },
        ],
        T0 + 10,
      );
      assert.deepEqual(res.map((r) => r && [r.status, r.outputJson]), [null, ['COMPLETED', '"done"'], null, ['IN_PROGRESS', '"10%"']]);
    });

    test('a result is applied once, only from the worker holding the job, and sets execution time and retention', async () => {
      const run = newJob();
      const sync = newJob({ sync: true });
      await store.insertMany([run, sync]);
      await store.takeNext('ep1', 'w1', 2, T0 + 100);
      const foreign = await store.completeMany([{ id: run.id, workerId: 'w2', status: 'COMPLETED', outputJson: '1', error: null }], T0 + 1100);
      assert.deepEqual(foreign, [null]);
      const done = await store.completeMany(
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
      const again = await store.completeMany([{ id: run.id, workerId: 'w1', status: 'IN_PROGRESS', outputJson: '"late"', error: null }], T0 + 1200);
      assert.deepEqual(again, [null]);
      assert.equal((await store.get(run.id))?.outputJson, '{"ok":true}');
    });

    test('progress replaces the visible output of a running job', async () => {
      const job = newJob();
      await store.insertMany([job]);
      await store.takeNext('ep1', 'w1', 1, T0);
      const [p] = await store.completeMany([{ id: job.id, workerId: 'w1', status: 'IN_PROGRESS', outputJson: '"50%"', error: null }], T0 + 10);
      assert.equal(p?.status, 'IN_PROGRESS');
      assert.equal(p?.outputJson, '"50%"');
    });

    test('cancel of a queued job needs no stop request; cancel of a running job asks its worker to stop, once', async () => {
      const [a, b] = [newJob(), newJob()];
      await store.insertMany([a!, b!]);
      await store.takeNext('ep1', 'w1', 1, T0);
      const running = await store.cancel(a!.id, T0 + 50);
      const queued = await store.cancel(b!.id, T0 + 50);
      assert.deepEqual([running?.status, running?.stopRequested, running?.executionMs], ['CANCELLED', 1, 50]);
      assert.deepEqual([queued?.status, queued?.stopRequested, queued?.executionMs], ['CANCELLED', 0, null]);
      assert.equal(await store.cancel(a!.id, T0 + 60), null);
      assert.deepEqual(await store.takeStopRequests('w1'), [a!.id]);
      assert.deepEqual(await store.takeStopRequests('w1'), []);
    });

    test('retry requeues only a FAILED or TIMED_OUT job, same id and input, at the back of the queue', async () => {
      const [a, b] = [newJob(), newJob()];
      await store.insertMany([a!, b!]);
      await store.takeNext('ep1', 'w1', 1, T0);
      assert.equal(await store.retry(a!.id, 1e9, T0), null);
      await store.completeMany([{ id: a!.id, workerId: 'w1', status: 'FAILED', outputJson: null, error: 'x' }], T0 + 10);
      const retried = await store.retry(a!.id, 1e9, T0 + 20);
      assert.deepEqual([retried?.status, retried?.retries, retried?.inputJson, retried?.error, retried?.queuedAt], ['IN_QUEUE', 1, a!.inputJson, null, T0 + 20]);
      const order = await store.takeNext('ep1', 'w2', 5, T0 + 30);
      assert.deepEqual(order.map((j) => j.id), [b!.id, a!.id]);
    });

    test('purge removes queued jobs only and answers the count', async () => {
      const jobs = [newJob(), newJob(), newJob(), newJob({ endpointId: 'other' })];
      await store.insertMany(jobs);
      await store.takeNext('ep1', 'w1', 1, T0);
      assert.equal(await store.purgeQueue('ep1'), 2);
      const stats = await store.queueStats('ep1');
      assert.equal(stats.inQueue, 0);
      assert.equal(stats.inProgress, 1);
      assert.equal((await store.queueStats('other')).inQueue, 1);
    });

    test('expire deletes jobs past their ttl in any state, and finished jobs past retention, with their stream', async () => {
      const short = newJob({ ttl: 10_000 });
      const finished = newJob();
      const long = newJob();
      await store.insertMany([short, finished, long]);
      await store.takeNext('ep1', 'w1', 2, T0);
      await store.appendStream(short.id, [{ seq: 1, outputJson: '1' }], T0);
      await store.completeMany([{ id: finished.id, workerId: 'w1', status: 'COMPLETED', outputJson: '1', error: null }], T0);
      assert.deepEqual(await store.expire(T0 + 9_999), { expired: [], purged: [] });
      assert.deepEqual(await store.expire(T0 + 10_000), { expired: [short.id], purged: [] });
      assert.equal(await store.get(short.id), null);
      assert.deepEqual(await store.drainStream(short.id), []);
      assert.deepEqual(await store.expire(T0 + 30 * MIN), { expired: [], purged: [finished.id] });
      assert.equal((await store.get(long.id))?.status, 'IN_QUEUE');
    });

    test('a running job times out at its execution deadline; queue time does not count', async () => {
      const job = newJob({ executionTimeout: 5000 });
      await store.insertMany([job]);
      assert.deepEqual(await store.timeOut(T0 + 60_000), []);
      await store.takeNext('ep1', 'w1', 1, T0 + 60_000);
      assert.deepEqual(await store.timeOut(T0 + 64_999), []);
      const [timedOut] = await store.timeOut(T0 + 65_000);
      assert.deepEqual([timedOut?.status, timedOut?.stopRequested, timedOut?.executionMs], ['TIMED_OUT', 1, 5000]);
      assert.deepEqual(await store.takeStopRequests('w1'), [job.id]);
    });

    test("a lost worker's jobs go back to the queue, keeping their place, until the retry budget is spent", async () => {
      const [a, b, c] = [newJob(), newJob(), newJob()];
      await store.insertMany([a!, b!, c!]);
      await store.takeNext('ep1', 'w1', 1, T0);
      for (let i = 1; i <= 2; i++) {
        const lost = await store.requeueFromWorker('w1', T0 + i, 2);
        assert.deepEqual([lost.requeued.map((j) => [j.id, j.retries]), lost.failed], [[[a!.id, i]], []]);
        const [again] = await store.takeNext('ep1', 'w1', 1, T0 + i);
        assert.equal(again?.id, a!.id, 'a requeued job keeps its place at the head of the queue');
      }
      const last = await store.requeueFromWorker('w1', T0 + 10, 2);
      assert.deepEqual(last.requeued, []);
      assert.deepEqual(last.failed.map((j) => [j.id, j.status, j.error]), [[a!.id, 'FAILED', WORKER_LOST_ERROR]]);
      assert.equal((await store.queueStats('ep1')).retried, 1);
    });

    test('queue stats count every status exactly and name the oldest queued job', async () => {
      const jobs = [newJob({ createdAt: T0 + 5 }), newJob({ createdAt: T0 + 1, lowPriority: true }), newJob(), newJob(), newJob()];
      await store.insertMany(jobs);
      const taken = await store.takeNext('ep1', 'w1', 3, T0 + 10);
      await store.completeMany(
        [
          { id: taken[0]!.id, workerId: 'w1', status: 'COMPLETED', outputJson: '1', error: null },
          { id: taken[1]!.id, workerId: 'w1', status: 'FAILED', outputJson: null, error: 'e' },
        ],
        T0 + 20,
      );
      assert.deepEqual(await store.queueStats('ep1'), {
        inQueue: 2,
        inQueueLowPriority: 0,
        inProgress: 1,
        completed: 1,
        failed: 1,
        cancelled: 0,
        timedOut: 0,
        retried: 0,
        oldestQueuedAt: T0,
      });
      assert.equal((await store.queueStats('none')).oldestQueuedAt, null);
    });

    test('a drained stream answers its chunks in order once', async () => {
      const job = newJob();
      await store.insertMany([job]);
      await store.appendStream(job.id, [{ seq: 2, outputJson: '"b"' }], T0);
      await store.appendStream(job.id, [{ seq: 1, outputJson: '"a"' }, { seq: 3, outputJson: '"c"' }], T0);
      assert.deepEqual(await store.drainStream(job.id), ['"a"', '"b"', '"c"']);
      assert.deepEqual(await store.drainStream(job.id), []);
    });

    test('maxSeq answers the largest queue position stored', async () => {
      assert.equal(await store.maxSeq(), 0);
      await store.insertMany([newJob({ seq: 42 }), newJob({ seq: 7 })]);
      assert.equal(await store.maxSeq(), 42);
    });

    test('webhook deliveries are written to the outbox as due now', async () => {
      await store.insertWebhookDeliveries([{ id: 'd1', jobId: 'j1', url: 'http://x', payloadJson: '{}' }], T0);
      const row = await t.db.kysely.selectFrom('webhook_deliveries').selectAll().executeTakeFirstOrThrow();
      assert.deepEqual([row.status, Number(row.next_attempt_at), row.attempts], ['PENDING', T0, 0]);
    });

    if (name === 'postgres') {
      test('two concurrent takers with SKIP LOCKED never hand out a job twice', async () => {
        const jobs = Array.from({ length: 400 }, () => newJob());
        await store.insertMany(jobs);
        const seen: string[] = [];
        const taker = async (worker: string): Promise<void> => {
          for (;;) {
            const got = await t.db.withTransaction((tx) => store.takeNext('ep1', worker, 3, T0, tx));
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
        await store.insertMany(jobs);
        const seen: string[] = [];
        const taker = async (worker: string): Promise<void> => {
          for (;;) {
            const got = await t.db.withTransaction((tx) =>
              store.takeMany([{ endpointId: 'ep1', workerId: `${worker}a`, n: 2 }, { endpointId: 'ep1', workerId: `${worker}b`, n: 3 }], T0, tx),
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
  });
}
