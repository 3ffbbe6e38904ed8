import { describe, test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { openTestDb, type TestDb } from '../../test/support/harness.js';
import { startReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.js';
import { until } from '../../test/support/eventually.js';
import { settle } from '../../test/support/fake-timers.js';
import { FakeClock } from '../domain/clock.js';
import { openJobStore } from '../store/job-store.js';
import { UNREACHABLE, WebhookDispatcher, type FetchLike } from './webhook-dispatcher.js';
import type { ResolveLike } from './webhook-http.js';
import { AccountStore } from '../store/account-store.js';
import { WebhookStore } from '../store/webhook-store.js';

const silent = pino({ level: 'silent' });

describe('WebhookDispatcher', () => {
  let t: TestDb;
  let clock: FakeClock;
  let receiver: WebhookReceiver;
  let dispatchers: WebhookDispatcher[];
  const enqueue = async (n: number, url = `${receiver.url}/hook?token=secret`) => {
    const rows = Array.from({ length: n }, (_, i) => ({
      id: `d${String(i).padStart(3, '0')}`,
      jobId: `job-${i}`,
      url,
      payloadJson: JSON.stringify({ id: `job-${i}`, status: 'COMPLETED', input: { password: 'hunter2' } }),
    }));
    await openJobStore(t.db).outbox.insertWebhookDeliveries(rows, clock.now());
  };
  const make = (extra: Partial<ConstructorParameters<typeof WebhookDispatcher>[0]> = {}) => {
    const d = new WebhookDispatcher({
      store: new WebhookStore(t.db),
      accounts: new AccountStore(t.db),
      clock,
      logger: silent,
      ...extra,
    });
    dispatchers.push(d);
    return d;
  };

  before(async () => {
    t = await openTestDb('sqlite');
  });
  after(() => t?.cleanup());
  beforeEach(async () => {
    await t.db.kysely.deleteFrom('webhook_deliveries').execute();
    clock = new FakeClock();
    receiver = await startReceiver();
    dispatchers = [];
  });
  afterEach(async () => {
    for (const d of dispatchers) await d.stop();
    await receiver.close();
  });

  test('any 2xx answer counts as delivered (a 204 receiver is not called again)', async () => {
    receiver.script = [204];
    await enqueue(1);
    assert.deepEqual(await make().dispatchDue(), { delivered: 1, retrying: 0, failed: 0 });
  });

  test('a redirect is not followed and counts as a failed attempt', async () => {
    receiver.script = [302];
    await enqueue(1);
    const d = make();
    assert.deepEqual(await d.dispatchDue(), { delivered: 0, retrying: 1, failed: 0 });
    assert.equal(receiver.calls.length, 1);
    assert.equal((await d.deliveriesFor('job-0'))[0]?.lastError, 'the receiver answered HTTP 302');
  });

  test('a receiver that does not answer within the timeout counts as a failed attempt, recorded as unreachable', async () => {
    receiver.hang = true;
    await enqueue(1);
    const d = make({ config: { timeoutMs: 150 } });
    assert.deepEqual(await d.dispatchDue(), { delivered: 0, retrying: 1, failed: 0 });
    assert.equal((await d.deliveriesFor('job-0'))[0]?.lastError, UNREACHABLE);
  });

  test('a receiver the address policy refuses fails at once with the reason, and is never called or retried', async () => {
    await enqueue(1, 'http://hooks.internal:8080/hook');
    const resolve: ResolveLike = async () => [{ address: '10.0.0.5', family: 4 }];
    const d = make({ resolve, config: { privateAddresses: 'deny' } });
    assert.deepEqual(await d.dispatchDue(), { delivered: 0, retrying: 0, failed: 1 });
    const [row] = await d.deliveriesFor('job-0');
    assert.equal(row?.status, 'FAILED');
    assert.equal(row?.attempts, 1);
    assert.equal(
      row?.lastError,
      'webhook host hooks.internal resolves to an address that is private; this deployment refuses private webhook receivers (serverless.webhooks.privateAddresses)',
    );
    clock.advance(60_000);
    assert.deepEqual(await d.dispatchDue(), { delivered: 0, retrying: 0, failed: 0 });
  });

  test('a closed port and a receiver that never answers leave the same error (port state is not revealed)', async () => {
    const closed = await startReceiver();
    const closedUrl = closed.url;
    await closed.close();
    receiver.hang = true;
    await openJobStore(t.db).outbox.insertWebhookDeliveries(
      [
        { id: 'to-closed', jobId: 'job-closed', url: `${closedUrl}/hook`, payloadJson: '{}' },
        { id: 'to-silent', jobId: 'job-silent', url: `${receiver.url}/hook`, payloadJson: '{}' },
      ],
      clock.now(),
    );
    const d = make({ config: { timeoutMs: 150 } });
    assert.deepEqual(await d.dispatchDue(), { delivered: 0, retrying: 2, failed: 0 });
    const errors = [
      (await d.deliveriesFor('job-closed'))[0]?.lastError,
      (await d.deliveriesFor('job-silent'))[0]?.lastError,
    ];
    assert.deepEqual(errors, [UNREACHABLE, UNREACHABLE]);
  });

  test('at most `concurrency` calls are in flight at once, and every due delivery is sent', async () => {
    let inFlight = 0;
    let peak = 0;
    // each call is answered when the test lets it, so calls overlap
    const held: Array<() => void> = [];
    const fetch: FetchLike = async () => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise<void>((answer) => held.push(answer));
      inFlight--;
      return { status: 200, body: null };
    };
    await enqueue(40);
    let passed = false;
    const pass = make({
      fetch,
      config: { concurrency: 4, perAccountConcurrency: 8, perReceiverConcurrency: 8 },
    })
      .dispatchDue()
      .finally(() => (passed = true));
    while (!passed) {
      await until('four calls are in flight, or the pass is over', () => held.length >= 4 || passed);
      // Every callback pending has run: a dispatcher past its cap would have started a fifth call.
      await settle();
      for (const answer of held.splice(0)) answer();
    }
    const result = await pass;
    assert.equal(result.delivered, 40);
    assert.equal(peak, 4);
  });

  test('logs never carry the payload or the query string of the webhook URL', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    receiver.fallback = 500;
    await enqueue(1);
    const d = make({ logger: pino({ level: 'debug' }, sink), config: { maxAttempts: 2 } });
    await d.dispatchDue();
    clock.advance(10_000);
    await d.dispatchDue();
    const text = lines.join('');
    assert.match(text, /webhook delivery failed/);
    assert.match(text, new RegExp(receiver.url.replace(/[.:/]/g, '\\$&')));
    assert.doesNotMatch(text, /secret|hunter2|password/);
  });

  test('stopping aborts a call in flight and gives its attempt back, so a restart sends it again', async () => {
    receiver.hang = true;
    await enqueue(1);
    const d = make();
    const pass = d.dispatchDue();
    while (receiver.calls.length === 0) await new Promise((r) => setTimeout(r, 5));
    await d.stop();
    await pass;
    const [row] = await d.deliveriesFor('job-0');
    assert.equal(row?.status, 'PENDING');
    assert.equal(row?.attempts, 0);
    receiver.hang = false;
    assert.deepEqual(await make().dispatchDue(), { delivered: 1, retrying: 0, failed: 0 });
  });

  test('an attempt interrupted by a crash is retried after its lease; a spent one ends FAILED', async () => {
    await enqueue(1);
    const d = make({ config: { maxAttempts: 1, timeoutMs: 10_000 } });
    // A crashed server: the row was claimed (attempt counted) and no outcome was recorded.
    await d.store.claimDue(clock.now(), 1, clock.now() + 15_000, 1);
    assert.deepEqual(await d.dispatchDue(clock.now() + 14_999), { delivered: 0, retrying: 0, failed: 0 });
    assert.deepEqual(await d.dispatchDue(clock.now() + 15_000), { delivered: 0, retrying: 0, failed: 1 });
    assert.equal((await d.deliveriesFor('job-0'))[0]?.lastError, 'the server stopped during the last attempt');
    assert.equal(receiver.calls.length, 0);
  });
});
