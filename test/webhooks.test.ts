/**
 * Webhooks end to end: JobsService finishes jobs (writing the outbox), the dispatcher delivers
 * them to a real HTTP receiver on a loopback port. Retry spacing runs on a FakeClock.
 */
import { describe, test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { dialects, openTestDb, type TestDb } from './support/harness.js';
import { startReceiver, type WebhookReceiver } from './support/webhook-receiver.js';
import { FakeClock } from '../src/domain/clock.js';
import { EventBus } from '../src/events.js';
import { JobsService } from '../src/jobs/jobs-service.js';
import { UNREACHABLE, WebhookDispatcher } from '../src/serverless/webhook-dispatcher.js';
import { AccountStore } from '../src/store/account-store.js';
import { WebhookStore } from '../src/store/webhook-store.js';

const S = 1_000;
const logger = pino({ level: 'silent' });

for (const { name, skip } of dialects()) {
  describe(`webhooks on ${name}`, { skip }, () => {
    let t: TestDb;
    let clock: FakeClock;
    let events: EventBus;
    let jobs: JobsService;
    let dispatcher: WebhookDispatcher;
    let receiver: WebhookReceiver;
    const hook = () => `${receiver.url}/hook?token=secret`;
    const newDispatcher = () =>
      new WebhookDispatcher({
        store: new WebhookStore(t.db),
        accounts: new AccountStore(t.db),
        clock,
        logger,
        events,
        config: { timeoutMs: 2_000 },
      });

    /** Submits a job with a webhook and has worker `w1` take it. */
    const running = async (body: Record<string, unknown> = {}) => {
      const { id } = await jobs.client.submit('ep1', 'acct1', {
        input: { prompt: 'hi' },
        webhook: hook(),
        s3Config: { accessId: 'AK', accessSecret: 'SK' },
        ...body,
      });
      clock.advance(1_500);
      const [taken] = await jobs.worker.take('ep1', 'w1');
      assert.equal(taken?.id, id);
      clock.advance(2_000);
      return id;
    };

    before(async () => {
      t = await openTestDb(name);
    });
    after(() => t?.cleanup());
    beforeEach(async () => {
      await t.db.kysely.deleteFrom('jobs').execute();
      await t.db.kysely.deleteFrom('webhook_deliveries').execute();
      clock = new FakeClock();
      events = new EventBus();
      jobs = new JobsService({ db: t.db, clock, events });
      dispatcher = newDispatcher();
      receiver = await startReceiver();
    });
    afterEach(async () => {
      await dispatcher.stop();
      await receiver.close();
    });

    test('a completed job is delivered once with its status view, input and webhook, and without s3Config', async () => {
      const id = await running();
      await jobs.worker.complete('w1', id, { output: { text: 'hello' } });
      const result = await dispatcher.dispatchDue(clock.now());
      assert.deepEqual(result, { delivered: 1, retrying: 0, failed: 0 });
      assert.equal(receiver.calls.length, 1);
      const call = receiver.calls[0]!;
      assert.equal(call.path, '/hook?token=secret');
      assert.equal(call.headers['content-type'], 'application/json');
      assert.deepEqual(call.body, {
        id,
        status: 'COMPLETED',
        delayTime: 1_500,
        executionTime: 2_000,
        output: { text: 'hello' },
        retries: 0,
        workerId: 'w1',
        input: { prompt: 'hi' },
        webhook: hook(),
      });
      assert.doesNotMatch(JSON.stringify(call.body), /SK|accessSecret/);
      await dispatcher.dispatchDue(clock.now() + 60 * S);
      assert.equal(receiver.calls.length, 1, 'a delivered webhook is not sent again');
      const [delivery] = await dispatcher.deliveriesFor(id);
      assert.equal(delivery?.status, 'DELIVERED');
      assert.equal(delivery?.attempts, 1);
    });

    test('a failed job is delivered with its error', async () => {
      const id = await running();
      await jobs.worker.complete('w1', id, { error: 'CUDA out of memory' });
      await dispatcher.dispatchDue(clock.now());
      assert.equal(receiver.calls.length, 1);
      const body = receiver.calls[0]!.body as Record<string, unknown>;
      assert.equal(body.status, 'FAILED');
      assert.equal(body.error, 'CUDA out of memory');
      assert.deepEqual(body.input, { prompt: 'hi' });
      assert.equal(body.output, undefined);
    });

    test('a job that times out is delivered as TIMED_OUT', async () => {
      const id = await running({ policy: { executionTimeout: 5_000 } });
      clock.advance(5_000);
      assert.equal((await jobs.sweeper.tick()).timedOut, 1);
      await dispatcher.dispatchDue(clock.now());
      assert.equal(receiver.calls.length, 1);
      const body = receiver.calls[0]!.body as Record<string, unknown>;
      assert.equal(body.id, id);
      assert.equal(body.status, 'TIMED_OUT');
    });

    test('a cancelled job and a job without webhook send nothing', async () => {
      const id = await running();
      await jobs.client.cancel('acct1', 'ep1', id);
      const { id: plain } = await jobs.client.submit('ep1', 'acct1', { input: {} });
      await jobs.worker.take('ep1', 'w2');
      await jobs.worker.complete('w2', plain, { output: 1 });
      await dispatcher.dispatchDue(clock.now());
      assert.equal(receiver.calls.length, 0);
    });

    test('a receiver failing twice gets exactly one success, after 3 attempts spaced 10 s apart', async () => {
      receiver.script = [500, 503];
      const id = await running();
      await jobs.worker.complete('w1', id, { output: 'done' });
      const t0 = clock.now();
      assert.deepEqual(await dispatcher.dispatchDue(t0), { delivered: 0, retrying: 1, failed: 0 });
      assert.equal(receiver.calls.length, 1);

      clock.advance(9_999);
      await dispatcher.dispatchDue(clock.now());
      assert.equal(receiver.calls.length, 1, 'no retry before 10 s');
      clock.advance(1);
      assert.deepEqual(await dispatcher.dispatchDue(clock.now()), { delivered: 0, retrying: 1, failed: 0 });
      assert.equal(receiver.calls.length, 2);

      clock.advance(10 * S);
      assert.deepEqual(await dispatcher.dispatchDue(clock.now()), { delivered: 1, retrying: 0, failed: 0 });
      assert.equal(receiver.calls.length, 3);
      assert.deepEqual(
        receiver.calls.map((c) => c.headers['x-gantry-attempt']),
        ['1', '2', '3'],
      );
      const [delivery] = await dispatcher.deliveriesFor(id);
      assert.equal(delivery?.status, 'DELIVERED');
      assert.equal(delivery?.attempts, 3);

      clock.advance(60 * S);
      await dispatcher.dispatchDue(clock.now());
      assert.equal(receiver.calls.length, 3);
    });

    test('after 3 failed attempts the delivery is FAILED with the last error and never tried again', async () => {
      receiver.fallback = 500;
      const id = await running();
      await jobs.worker.complete('w1', id, { output: 'done' });
      await dispatcher.dispatchDue(clock.now());
      clock.advance(10 * S);
      await dispatcher.dispatchDue(clock.now());
      clock.advance(10 * S);
      assert.deepEqual(await dispatcher.dispatchDue(clock.now()), { delivered: 0, retrying: 0, failed: 1 });
      assert.equal(receiver.calls.length, 3);
      const [delivery] = await dispatcher.deliveriesFor(id);
      assert.equal(delivery?.status, 'FAILED');
      assert.equal(delivery?.lastError, 'the receiver answered HTTP 500');
      clock.advance(3_600 * S);
      await dispatcher.dispatchDue(clock.now());
      assert.equal(receiver.calls.length, 3);
    });

    test("a finished job's status shows where its webhook delivery stands: pending, retrying, then failed", async () => {
      receiver.fallback = 500;
      const id = await running();
      await jobs.worker.complete('w1', id, { output: 'done' });
      const completedAt = new Date(clock.now()).toISOString();
      assert.deepEqual((await jobs.client.status('acct1', 'ep1', id)).webhookDelivery, {
        status: 'PENDING',
        attempts: 0,
        nextAttemptAt: completedAt,
      });
      await dispatcher.dispatchDue(clock.now());
      assert.deepEqual((await jobs.client.status('acct1', 'ep1', id)).webhookDelivery, {
        status: 'PENDING',
        attempts: 1,
        lastError: 'the receiver answered HTTP 500',
        nextAttemptAt: new Date(clock.now() + 10 * S).toISOString(),
      });
      clock.advance(10 * S);
      await dispatcher.dispatchDue(clock.now());
      clock.advance(10 * S);
      await dispatcher.dispatchDue(clock.now());
      assert.deepEqual((await jobs.client.status('acct1', 'ep1', id)).webhookDelivery, {
        status: 'FAILED',
        attempts: 3,
        lastError: 'the receiver answered HTTP 500',
      });
      const plain = await jobs.client.submit('ep1', 'acct1', { input: {} });
      assert.equal(
        (await jobs.client.status('acct1', 'ep1', plain.id)).webhookDelivery,
        undefined,
        'a job without a webhook has no delivery',
      );
    });

    test('a runsync woken by its result reports the webhook just queued, as a read would', async () => {
      const { id } = await jobs.client.submit('ep1', 'acct1', { input: {}, webhook: hook() });
      const [taken] = await jobs.worker.take('ep1', 'w1');
      assert.equal(taken?.id, id);
      const waiting = jobs.client.waitForTerminal('acct1', 'ep1', id, { waitMs: 5_000 });
      await new Promise((r) => setImmediate(r));
      await jobs.worker.complete('w1', id, { output: 1 });
      const woken = await waiting;
      assert.deepEqual(woken.webhookDelivery, (await jobs.client.status('acct1', 'ep1', id)).webhookDelivery);
      assert.equal(woken.webhookDelivery?.status, 'PENDING');
    });

    test('a receiver that is down counts as a failed attempt and is retried, recorded as unreachable', async () => {
      const id = await running();
      await jobs.worker.complete('w1', id, { output: 'done' });
      const url = receiver.url;
      await receiver.close();
      assert.deepEqual(await dispatcher.dispatchDue(clock.now()), { delivered: 0, retrying: 1, failed: 0 });
      const [delivery] = await dispatcher.deliveriesFor(id);
      assert.equal(delivery?.lastError, UNREACHABLE);
      assert.ok(url);
      receiver = await startReceiver();
    });

    test('a restarted server (a new dispatcher over the same database) resumes a pending delivery', async () => {
      receiver.script = [500];
      const id = await running();
      await jobs.worker.complete('w1', id, { output: 'done' });
      await dispatcher.dispatchDue(clock.now());
      await dispatcher.stop();
      assert.equal(receiver.calls.length, 1);

      clock.advance(10 * S);
      dispatcher = newDispatcher();
      assert.deepEqual(await dispatcher.dispatchDue(clock.now()), { delivered: 1, retrying: 0, failed: 0 });
      assert.equal(receiver.calls.length, 2);
      assert.equal((await dispatcher.deliveriesFor(id))[0]?.status, 'DELIVERED');
    });

    test('a started dispatcher delivers as soon as a job finishes, without waiting for its poll', async () => {
      dispatcher = new WebhookDispatcher({
        store: new WebhookStore(t.db),
        accounts: new AccountStore(t.db),
        clock,
        logger,
        events,
        config: { pollIntervalMs: 3_600_000 },
      });
      dispatcher.start();
      const id = await running();
      await jobs.worker.complete('w1', id, { output: 'done' });
      for (let i = 0; i < 200 && (await dispatcher.deliveriesFor(id))[0]?.status !== 'DELIVERED'; i++)
        await new Promise((r) => setTimeout(r, 10));
      assert.equal((await dispatcher.deliveriesFor(id))[0]?.status, 'DELIVERED');
      assert.equal(receiver.calls.length, 1);
    });
  });
}
