import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { FakeClock } from '../domain/clock.js';
import { isApiError } from '../domain/errors.js';
import { EventBus } from '../events.js';
import { JobsService } from './jobs-service.js';
import { stopKey } from './job-signals.js';
import { until } from '../../test/support/eventually.js';
import type { JobEventPayload } from './job-view.js';

const MIN = 60_000;

const rejectsWith = async (p: Promise<unknown>, code: string, status: number): Promise<void> => {
  await assert.rejects(p, (err: unknown) => isApiError(err) && err.code === code && err.status === status);
};

for (const { name, skip } of dialects()) {
  describe(`JobsService on ${name}`, { skip }, () => {
    let t: TestDb;
    let clock: FakeClock;
    let jobs: JobsService;
    let events: EventBus;
    let emitted: Array<[string, JobEventPayload]>;
    const submit = (body: Record<string, unknown> = { input: { n: 1 } }, sync = false) =>
      jobs.client.submit('ep1', 'acct1', body, { sync });

    before(async () => {
      t = await openTestDb(name);
    });
    after(() => t?.cleanup());
    beforeEach(async () => {
      await t.db.kysely.deleteFrom('jobs').execute();
      await t.db.kysely.deleteFrom('webhook_deliveries').execute();
      clock = new FakeClock();
      events = new EventBus();
      emitted = [];
      for (const e of ['job:completed', 'job:failed', 'job:timed_out'] as const)
        events.on(e, (p) => emitted.push([e, p]));
      jobs = new JobsService({ db: t.db, clock, events });
    });

    test('a submitted job answers IN_QUEUE and its status shows it queued, without s3Config', async () => {
      const { id, status } = await submit({
        input: { prompt: 'hi' },
        s3Config: { accessId: 'a', accessSecret: 's' },
        webhook: 'http://hook.test/x',
      });
      assert.equal(status, 'IN_QUEUE');
      assert.deepEqual(await jobs.client.status('acct1', 'ep1', id), { id, status: 'IN_QUEUE', retries: 0 });
    });

    test('an invalid request is refused with one error per violation', async () => {
      await assert.rejects(submit({ policy: { ttl: 5, lowPriority: 1 } }), (err: unknown) => {
        assert.ok(isApiError(err));
        assert.equal(err.status, 400);
        assert.deepEqual(err.errors, [
          'input is required',
          'policy.ttl must be between 10000 and 604800000 ms',
          'policy.lowPriority must be a boolean',
        ]);
        return true;
      });
    });

    test("another account's job, another endpoint's job and an unknown job all answer 404", async () => {
      const { id } = await submit();
      await rejectsWith(jobs.client.status('acct2', 'ep1', id), 'NOT_FOUND', 404);
      await rejectsWith(jobs.client.status('acct1', 'ep2', id), 'NOT_FOUND', 404);
      await rejectsWith(jobs.client.status('acct1', 'ep1', 'nope'), 'NOT_FOUND', 404);
      await rejectsWith(jobs.client.cancel('acct2', 'ep1', id), 'NOT_FOUND', 404);
    });

    test('concurrent submissions are committed in fewer transactions than jobs, in FIFO order', async () => {
      const ids = (await Promise.all(Array.from({ length: 50 }, (_, i) => submit({ input: { i } })))).map((r) => r.id);
      assert.ok(jobs.batchStats.submits.batches < 50, `batches: ${jobs.batchStats.submits.batches}`);
      const taken = await jobs.worker.take('ep1', 'w1', { batchSize: 100 });
      assert.deepEqual(
        taken.map((j) => j.id),
        ids,
      );
      assert.deepEqual(
        taken.map((j) => (j.input as { i: number }).i),
        ids.map((_, i) => i),
      );
    });

    test('a batch take hands out at most batchSize jobs with input, webhook, s3Config and policy', async () => {
      for (let i = 0; i < 3; i++)
        await submit({
          input: { i },
          webhook: 'http://hook.test',
          s3Config: { bucketName: 'b' },
          policy: { ttl: 60_000 },
        });
      const taken = await jobs.worker.take('ep1', 'w1', { batchSize: 2 });
      assert.equal(taken.length, 2);
      assert.deepEqual(taken[0], {
        id: taken[0]!.id,
        input: { i: 0 },
        webhook: 'http://hook.test',
        s3Config: { bucketName: 'b' },
        policy: { executionTimeout: 600_000, lowPriority: false, ttl: 60_000 },
      });
      const view = await jobs.client.status('acct1', 'ep1', taken[0].id);
      assert.deepEqual(view, { id: taken[0].id, status: 'IN_PROGRESS', delayTime: 0, retries: 0, workerId: 'w1' });
    });

    test('a waiting take is woken by a submission, without polling', async () => {
      const started = performance.now();
      const pending = jobs.worker.take('ep1', 'w1', { waitMs: 5000 });
      await until('the take to wait', () => jobs.signals.waiting('work', 'ep1') === 1);
      const { id } = await submit();
      const taken = await pending;
      assert.deepEqual(
        taken.map((j) => j.id),
        [id],
      );
      assert.ok(performance.now() - started < 2000);
    });

    test('a waiting take answers no job when its wait ends or its client goes away', async () => {
      assert.deepEqual(await jobs.worker.take('ep1', 'w1', { waitMs: 30 }), []);
      const abort = new AbortController();
      const pending = jobs.worker.take('ep1', 'w1', { waitMs: 5000, signal: abort.signal });
      abort.abort();
      assert.deepEqual(await pending, []);
      assert.equal(jobs.signals.waiting('work', 'ep1'), 0);
    });

    test('jobs taken for a worker that went away meanwhile go back to the queue uncounted', async () => {
      const { id } = await submit();
      const abort = new AbortController();
      const pending = jobs.worker.take('ep1', 'w1', { signal: abort.signal });
      abort.abort();
      assert.deepEqual(await pending, []);
      assert.deepEqual(await jobs.client.status('acct1', 'ep1', id), { id, status: 'IN_QUEUE', retries: 0 });
      const [again] = await jobs.worker.take('ep1', 'w2');
      assert.equal(again?.id, id);
      assert.equal(await jobs.worker.release('w2', [id]), 1);
      assert.deepEqual(await jobs.client.status('acct1', 'ep1', id), { id, status: 'IN_QUEUE', retries: 0 });
    });

    test('a result completes the job once; a repeated post of it is a no-op success', async () => {
      const { id } = await submit({ input: {}, webhook: 'http://hook.test/done' });
      await jobs.worker.take('ep1', 'w1');
      clock.advance(1500);
      assert.deepEqual(await jobs.worker.complete('w1', id, { output: { text: 'ok' } }), {
        outcome: 'applied',
        status: 'COMPLETED',
        stopPod: false,
      });
      const again = await jobs.worker.complete('w1', id, { output: { text: 'ok' } });
      assert.deepEqual(again, {
        outcome: 'ignored',
        status: 'COMPLETED',
        reason: 'the same result was already recorded',
        stopPod: false,
      });
      const webhookDelivery = { status: 'PENDING', attempts: 0, nextAttemptAt: new Date(clock.now()).toISOString() };
      assert.deepEqual(await jobs.client.status('acct1', 'ep1', id), {
        id,
        status: 'COMPLETED',
        delayTime: 0,
        executionTime: 1500,
        output: { text: 'ok' },
        retries: 0,
        workerId: 'w1',
        webhookDelivery,
      });
      assert.deepEqual(
        emitted.map(([e]) => e),
        ['job:completed'],
      );
      const outbox = await t.db.kysely.selectFrom('webhook_deliveries').selectAll().execute();
      assert.equal(outbox.length, 1);
      assert.deepEqual(JSON.parse(outbox[0]!.payload), {
        id,
        status: 'COMPLETED',
        delayTime: 0,
        executionTime: 1500,
        output: { text: 'ok' },
        retries: 0,
        workerId: 'w1',
        input: {},
        webhook: 'http://hook.test/done',
      });
    });

    test('late progress after the result is ignored and does not overwrite it', async () => {
      const { id } = await submit();
      await jobs.worker.take('ep1', 'w1');
      assert.equal((await jobs.worker.complete('w1', id, { status: 'IN_PROGRESS', output: '10%' })).outcome, 'applied');
      assert.equal((await jobs.client.status('acct1', 'ep1', id)).output, '10%');
      await jobs.worker.complete('w1', id, { output: 'done' });
      const late = await jobs.worker.complete('w1', id, { status: 'IN_PROGRESS', output: '90%' });
      assert.equal(late.outcome, 'ignored');
      const view = await jobs.client.status('acct1', 'ep1', id);
      assert.deepEqual([view.status, view.output], ['COMPLETED', 'done']);
    });

    test('an error result fails the job and emits job:failed', async () => {
      const { id } = await submit();
      await jobs.worker.take('ep1', 'w1');
      await jobs.worker.complete('w1', id, { error: 'Traceback …', output: 'partial' });
      const view = await jobs.client.status('acct1', 'ep1', id);
      assert.deepEqual([view.status, view.error, view.output], ['FAILED', 'Traceback …', undefined]);
      assert.deepEqual(
        emitted.map(([e, p]) => [e, p.job.id]),
        [['job:failed', id]],
      );
    });

    test('a post from a worker that does not hold the job is refused, and one for an unknown job is not found', async () => {
      const { id } = await submit();
      await jobs.worker.take('ep1', 'w1');
      const foreign = await jobs.worker.complete('w2', id, { output: 1 });
      assert.equal(foreign.outcome === 'refused' && foreign.refusal.code, 'WRONG_WORKER');
      assert.equal((await jobs.worker.complete('w1', 'missing', { output: 1 })).outcome, 'not-found');
    });

    test('concurrent results are committed together', async () => {
      for (let i = 0; i < 20; i++) await submit();
      const taken = await jobs.worker.take('ep1', 'w1', { batchSize: 20 });
      const outcomes = await Promise.all(taken.map((j) => jobs.worker.complete('w1', j.id, { output: j.id })));
      assert.ok(outcomes.every((o) => o.outcome === 'applied'));
      assert.ok(jobs.batchStats.posts.batches < 20);
    });

    test('cancel of a queued job cancels it at once; it is never handed to a worker', async () => {
      const { id } = await submit();
      assert.deepEqual(await jobs.client.cancel('acct1', 'ep1', id), { id, status: 'CANCELLED' });
      assert.deepEqual(await jobs.worker.take('ep1', 'w1'), []);
      assert.deepEqual(await jobs.worker.stopRequests('ep1', 'w1'), []);
    });

    test('cancel of a running job cancels it and tells its worker on the job-stop channel, once', async () => {
      const { id } = await submit();
      await jobs.worker.take('ep1', 'w1');
      const stop = jobs.worker.stopRequests('ep1', 'w1', { waitMs: 5000 });
      await until('the stop request to wait', () => jobs.signals.waiting('stop', stopKey('ep1', 'w1')) === 1);
      assert.deepEqual(await jobs.client.cancel('acct1', 'ep1', id), { id, status: 'CANCELLED' });
      assert.deepEqual(await stop, [id]);
      assert.deepEqual(await jobs.worker.stopRequests('ep1', 'w1'), []);
      assert.equal((await jobs.worker.complete('w1', id, { output: 'too late' })).outcome, 'ignored');
      assert.equal((await jobs.client.status('acct1', 'ep1', id)).status, 'CANCELLED');
      assert.deepEqual(await jobs.client.cancel('acct1', 'ep1', id), { id, status: 'CANCELLED' });
    });

    test('cancel of a finished job leaves it as it is', async () => {
      const { id } = await submit();
      await jobs.worker.take('ep1', 'w1');
      await jobs.worker.complete('w1', id, { output: 1 });
      assert.deepEqual(await jobs.client.cancel('acct1', 'ep1', id), { id, status: 'COMPLETED' });
    });

    test('retry requeues a failed job with the same id and input; any other status is a 409', async () => {
      const { id } = await submit({ input: { keep: true } });
      await rejectsWith(jobs.client.retry('acct1', 'ep1', id), 'INVALID_STATE', 409);
      await jobs.worker.take('ep1', 'w1');
      await jobs.worker.complete('w1', id, { error: 'bad' });
      assert.deepEqual(await jobs.client.retry('acct1', 'ep1', id), { id, status: 'IN_QUEUE' });
      assert.deepEqual(await jobs.client.status('acct1', 'ep1', id), { id, status: 'IN_QUEUE', retries: 1 });
      const [again] = await jobs.worker.take('ep1', 'w2');
      assert.deepEqual([again?.id, again?.input], [id, { keep: true }]);
      await jobs.worker.complete('w2', id, { output: 'ok' });
      await rejectsWith(jobs.client.retry('acct1', 'ep1', id), 'INVALID_STATE', 409);
    });

    test('purge removes only queued jobs and answers how many', async () => {
      for (let i = 0; i < 3; i++) await submit();
      const [running] = await jobs.worker.take('ep1', 'w1');
      assert.deepEqual(await jobs.client.purgeQueue('ep1'), { removed: 2, status: 'completed' });
      assert.equal((await jobs.client.status('acct1', 'ep1', running!.id)).status, 'IN_PROGRESS');
      assert.deepEqual((await jobs.client.queueStats('ep1')).inQueue, 0);
    });

    test('a job whose ttl expires while running answers 404, before and after the timekeeper deletes it', async () => {
      const { id } = await submit({ input: {}, policy: { ttl: 10_000, executionTimeout: 60_000 } });
      await jobs.worker.take('ep1', 'w1');
      clock.advance(9_999);
      assert.equal((await jobs.client.status('acct1', 'ep1', id)).status, 'IN_PROGRESS');
      clock.advance(1);
      await rejectsWith(jobs.client.status('acct1', 'ep1', id), 'NOT_FOUND', 404);
      assert.deepEqual(await jobs.sweeper.tick(), { timedOut: 0, expired: 1, purged: 0 });
      await rejectsWith(jobs.client.status('acct1', 'ep1', id), 'NOT_FOUND', 404);
      assert.equal((await jobs.worker.complete('w1', id, { output: 1 })).outcome, 'not-found');
    });

    test('queue time consumes the ttl: a job that expires while queued is never taken', async () => {
      await submit({ input: {}, policy: { ttl: 10_000 } });
      clock.advance(10_000);
      assert.deepEqual(await jobs.worker.take('ep1', 'w1'), []);
    });

    test('the execution timeout counts only running time: queue time never times a job out', async () => {
      const { id } = await submit({ input: {}, policy: { executionTimeout: 5000 }, webhook: 'http://hook.test' });
      clock.advance(60_000);
      assert.equal((await jobs.sweeper.tick()).timedOut, 0);
      await jobs.worker.take('ep1', 'w1');
      clock.advance(4_999);
      assert.equal((await jobs.sweeper.tick()).timedOut, 0);
      clock.advance(1);
      assert.deepEqual(await jobs.sweeper.tick(), { timedOut: 1, expired: 0, purged: 0 });
      const view = await jobs.client.status('acct1', 'ep1', id);
      assert.deepEqual([view.status, view.executionTime, view.delayTime], ['TIMED_OUT', 5000, 60_000]);
      assert.deepEqual(await jobs.worker.stopRequests('ep1', 'w1'), [id]);
      assert.deepEqual(
        emitted.map(([e]) => e),
        ['job:timed_out'],
      );
      assert.equal((await t.db.kysely.selectFrom('webhook_deliveries').selectAll().execute()).length, 1);
      assert.equal((await jobs.worker.complete('w1', id, { output: 'late' })).outcome, 'ignored');
    });

    test('a /run result stays readable 30 minutes after completion, a /runsync result 1 minute', async () => {
      const run = await submit();
      const sync = await submit({ input: {} }, true);
      await jobs.worker.take('ep1', 'w1', { batchSize: 2 });
      await jobs.worker.complete('w1', run.id, { output: 1 });
      await jobs.worker.complete('w1', sync.id, { output: 2 });
      clock.advance(MIN - 1);
      assert.equal((await jobs.client.status('acct1', 'ep1', sync.id)).status, 'COMPLETED');
      clock.advance(1);
      await rejectsWith(jobs.client.status('acct1', 'ep1', sync.id), 'NOT_FOUND', 404);
      assert.deepEqual(await jobs.sweeper.tick(), { timedOut: 0, expired: 0, purged: 1 });
      clock.advance(29 * MIN - 1);
      assert.equal((await jobs.client.status('acct1', 'ep1', run.id)).status, 'COMPLETED');
      clock.advance(1);
      await rejectsWith(jobs.client.status('acct1', 'ep1', run.id), 'NOT_FOUND', 404);
      assert.deepEqual(await jobs.sweeper.tick(), { timedOut: 0, expired: 0, purged: 1 });
    });

    test('a lost worker returns its jobs to the queue until the retry budget is spent, then they fail', async () => {
      jobs = new JobsService({ db: t.db, clock, events, config: { retryBudget: 2 } });
      const { id } = await submit();
      for (let i = 1; i <= 2; i++) {
        await jobs.worker.take('ep1', `w${i}`);
        assert.deepEqual(await jobs.worker.workerLost(`w${i}`, 'ep1'), { requeued: [id], failed: [] });
        assert.deepEqual(await jobs.client.status('acct1', 'ep1', id), { id, status: 'IN_QUEUE', retries: i });
      }
      await jobs.worker.take('ep1', 'w3');
      assert.deepEqual(await jobs.worker.workerLost('w3', 'ep1'), { requeued: [], failed: [id] });
      const view = await jobs.client.status('acct1', 'ep1', id);
      assert.equal(view.status, 'FAILED');
      assert.equal((await jobs.client.queueStats('ep1')).retried, 1);
      assert.deepEqual(
        emitted.map(([e]) => e),
        ['job:failed'],
      );
    });

    test('a job requeued from a lost worker wakes a waiting taker', async () => {
      await submit();
      await jobs.worker.take('ep1', 'w1');
      const waiting = jobs.worker.take('ep1', 'w2', { waitMs: 5000 });
      await until('the take to wait', () => jobs.signals.waiting('work', 'ep1') === 1);
      await jobs.worker.workerLost('w1', 'ep1');
      assert.equal((await waiting).length, 1);
    });

    test('runsync answers the finished job as soon as its worker posts the result', async () => {
      const pending = jobs.client.runSync('ep1', 'acct1', { input: { x: 1 } }, { waitMs: 5000 });
      const [taken] = await jobs.worker.take('ep1', 'w1', { waitMs: 5000 });
      await jobs.worker.complete('w1', taken!.id, { output: { y: 2 } });
      const view = await pending;
      assert.deepEqual([view.id, view.status, view.output], [taken!.id, 'COMPLETED', { y: 2 }]);
    });

    test('runsync answers the job still queued when its wait ends first', async () => {
      const view = await jobs.client.runSync('ep1', 'acct1', { input: {} }, { waitMs: 30 });
      assert.equal(view.status, 'IN_QUEUE');
    });

    test('stream answers buffered chunks once, waits for new ones, and always carries `stream`', async () => {
      const { id } = await submit();
      assert.deepEqual(await jobs.client.stream('acct1', 'ep1', id), { id, status: 'IN_QUEUE', stream: [] });
      await jobs.worker.take('ep1', 'w1');
      await jobs.worker.appendStream('w1', id, { output: 'a' });
      await jobs.worker.appendStream('w1', id, { output: 'b' });
      assert.deepEqual(await jobs.client.stream('acct1', 'ep1', id), {
        id,
        status: 'IN_PROGRESS',
        stream: [{ output: 'a' }, { output: 'b' }],
      });
      const waiting = jobs.client.stream('acct1', 'ep1', id, { waitMs: 5000 });
      await until('the stream read to wait', () => jobs.signals.waiting('stream', id) === 1);
      await jobs.worker.appendStream('w1', id, { output: 'c' });
      assert.deepEqual(await waiting, { id, status: 'IN_PROGRESS', stream: [{ output: 'c' }] });
      const final = jobs.client.stream('acct1', 'ep1', id, { waitMs: 5000 });
      await until('the stream read to wait', () => jobs.signals.waiting('stream', id) === 1);
      await jobs.worker.complete('w1', id, { output: [] });
      assert.deepEqual(await final, { id, status: 'COMPLETED', stream: [] });
      assert.equal((await jobs.worker.appendStream('w1', id, { output: 'late' })).outcome, 'ignored');
    });
    test('a submission that fails after its quota admission (the queue positions could not be read) gives the quota back', async () => {
      const quoted = new JobsService({
        db: t.db,
        clock,
        quotas: { queuedJobs: 2, storedJobBytes: 1e9, streamBytesPerJob: 1e9 },
      });
      const maxSeq = quoted.store.rows.maxSeq.bind(quoted.store.rows);
      let failures = 1;
      quoted.store.rows.maxSeq = async () => {
        if (failures-- > 0) throw new Error('the store is down');
        return maxSeq();
      };
      await assert.rejects(quoted.client.submit('ep1', 'acct1', { input: 1 }), /the store is down/);
      clock.advance(1000); // the counters' next refresh: a failed submission held past it would be counted for good
      await quoted.client.submit('ep1', 'acct1', { input: 2 });
      await quoted.client.submit('ep1', 'acct1', { input: 3 }); // refused (429) if the failed one were still counted
      await rejectsWith(quoted.client.submit('ep1', 'acct1', { input: 4 }), 'QUOTA_EXCEEDED', 429);
    });
  });
}
