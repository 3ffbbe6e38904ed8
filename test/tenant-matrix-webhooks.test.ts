/**
 * Webhooks as a hostile tenant sees them: a webhook must not reach the host's loopback or private
 * network on a multi-account deployment (SSRF), must not tell open ports from closed ones, and one
 * tenant's backlog to a receiver that never answers must not delay another tenant's webhooks.
 * Only 127.0.0.1 is ever connected to; refused addresses come from a resolver seam or literals,
 * refused before any socket opens.
 */
import { describe, test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createTestApp, dialects, json, openTestDb, type TestApp, type TestDb } from './support/harness.js';
import { startReceiver, type WebhookReceiver } from './support/webhook-receiver.js';
import { FakeClock } from '../src/domain/clock.js';
import { openJobStore } from '../src/store/job-store.js';
import { WebhookDispatcher, type FetchLike } from '../src/serverless/webhook-dispatcher.js';
import { AccountStore } from '../src/store/account-store.js';
import { WebhookStore } from '../src/store/webhook-store.js';

const silent = pino({ level: 'silent' });
const tick = () => new Promise((r) => setImmediate(r));

/** A template and endpoint of `accountId`; answers the endpoint id. */
async function newEndpoint(t: TestApp, accountId: string, name: string): Promise<string> {
  const template = await t.services.templates.create(accountId, {
    name: `${name}-tpl`,
    imageName: 'worker:dev',
    isServerless: true,
  });
  return (await t.services.endpoints.create(accountId, { name, templateId: template.id, gpuIds: 'ADA_24' })).id;
}

/** Submits a job with `webhook` over HTTP, has a worker finish it, and runs the dispatcher once. */
async function finishWithWebhook(t: TestApp, key: string, endpointId: string, webhook: string) {
  const run = await t.request(key, 'POST', `/v2/${endpointId}/run`, { input: { n: 1 }, webhook });
  assert.equal(run.statusCode, 200, run.body);
  const [job] = await t.services.jobs.worker.take(endpointId, 'w1');
  assert.equal(job?.id, json(run).id);
  await t.services.jobs.worker.complete('w1', job!.id, { output: { ok: true } });
  await t.services.webhooks.dispatchDue(t.clock.now());
  return (await t.request(key, 'GET', `/v2/${endpointId}/status/${job!.id}`)).json();
}

describe('webhooks to private addresses on a deployment with several accounts', () => {
  let t: TestApp;
  let tenant: { accountId: string; key: string };
  let ep: string;
  let receiver: WebhookReceiver;
  before(async () => {
    t = await createTestApp();
    tenant = await t.newAccount('ssrf-tenant');
    await t.newAccount('bystander');
    ep = await newEndpoint(t, tenant.accountId, 'ssrf');
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  test('a webhook naming a private IP literal is refused at submit with 400 WEBHOOK_NOT_ALLOWED', async () => {
    const port = new URL(receiver.url).port;
    for (const webhook of [
      `${receiver.url}/hook`,
      `http://[::1]:${port}/`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.5/hook',
      'https://192.168.1.1/',
    ]) {
      const res = await t.request(tenant.key, 'POST', `/v2/${ep}/run`, { input: {}, webhook });
      assert.equal(res.statusCode, 400, `${webhook}: ${res.body}`);
      assert.equal(json(res).code, 'WEBHOOK_NOT_ALLOWED', webhook);
      assert.match(
        json(res).detail,
        /webhook address .+ is (loopback|link-local|private); this deployment refuses private webhook receivers \(serverless\.webhooks\.privateAddresses\)/,
      );
    }
    assert.equal(receiver.calls.length, 0);
  });

  test('a webhook whose host name resolves to loopback is never called: it fails at once and its status says why', async () => {
    const status = await finishWithWebhook(t, tenant.key, ep, `http://localhost:${new URL(receiver.url).port}/hook`);
    assert.equal(receiver.calls.length, 0);
    assert.deepEqual(status.webhookDelivery, {
      status: 'FAILED',
      attempts: 1,
      lastError:
        'webhook host localhost resolves to an address that is loopback; this deployment refuses private webhook receivers (serverless.webhooks.privateAddresses)',
    });
  });
});

describe('webhooks to a loopback receiver on a single-account deployment (a dev setup)', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  before(async () => {
    t = await createTestApp();
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  test('are delivered while the deployment has one account, and refused from the first delivery after a second is created', async () => {
    const admin = (await t.services.accounts.store.listAccounts())[0]!;
    const ep = await newEndpoint(t, admin.id, 'dev');
    const first = await finishWithWebhook(t, t.adminKey, ep, `${receiver.url}/hook`);
    assert.equal(first.webhookDelivery.status, 'DELIVERED');
    assert.equal(receiver.calls.length, 1);
    await t.newAccount('second');
    const second = await finishWithWebhook(t, t.adminKey, ep, `http://localhost:${new URL(receiver.url).port}/hook`);
    assert.equal(second.webhookDelivery.status, 'FAILED');
    assert.match(second.webhookDelivery.lastError, /resolves to an address that is loopback/);
    assert.equal(receiver.calls.length, 1);
  });
});

for (const { name, skip } of dialects()) {
  describe(`webhook fairness across tenants on ${name}`, { skip }, () => {
    let t: TestDb;
    let clock: FakeClock;
    let dispatcher: WebhookDispatcher | null;
    /** Calls made so far, in order; a receiver on port 1 never answers (until the dispatcher stops). */
    let calls: Array<{ url: string; account: string }>;
    const fetch: FetchLike = (url, init) => {
      calls.push({ url, account: new URL(url).searchParams.get('a') ?? '' });
      if (new URL(url).port !== '1') return Promise.resolve({ status: 200, body: null });
      return new Promise((_, reject) =>
        init.signal.addEventListener('abort', () => reject(init.signal.reason as Error)),
      );
    };
    const enqueue = (accountId: string, n: number, url: (i: number) => string) =>
      openJobStore(t.db).outbox.insertWebhookDeliveries(
        Array.from({ length: n }, (_, i) => ({
          id: `${accountId}-${String(i).padStart(3, '0')}`,
          jobId: `${accountId}-job-${i}`,
          accountId,
          url: url(i),
          payloadJson: '{}',
        })),
        clock.now(),
      );
    const make = (config: Partial<WebhookDispatcher['config']> = {}) =>
      (dispatcher = new WebhookDispatcher({
        store: new WebhookStore(t.db),
        accounts: new AccountStore(t.db),
        clock,
        logger: silent,
        fetch,
        config: { timeoutMs: 600_000, pollIntervalMs: 3_600_000, ...config },
      }));

    before(async () => {
      t = await openTestDb(name);
    });
    after(() => t?.cleanup());
    beforeEach(async () => {
      await t.db.kysely.deleteFrom('webhook_deliveries').execute();
      clock = new FakeClock();
      calls = [];
      dispatcher = null;
    });
    afterEach(async () => {
      await dispatcher?.stop();
    });

    test(
      "a tenant's 120 webhooks to a receiver that never answers do not hold back another tenant's: it is sent in the first round",
      { timeout: 60_000 },
      async () => {
        await enqueue('acct-a', 120, () => 'http://127.0.0.1:1/never?a=acct-a');
        await enqueue('acct-b', 1, () => 'http://127.0.0.1:2/hook?a=acct-b');
        const d = make();
        const pass = d.dispatchDue(clock.now());
        // Either B's call is made, or every slot is taken (then B would wait for A's calls to time out).
        while (!calls.some((c) => c.account === 'acct-b') && calls.length < d.config.concurrency) await tick();
        assert.ok(
          calls.some((c) => c.account === 'acct-b'),
          `B's webhook waits behind A's backlog: ${calls.length} calls, all A's`,
        );
        assert.ok(
          calls.filter((c) => c.account === 'acct-a').length <= d.config.perReceiverConcurrency,
          'A holds no more than its receiver cap',
        );
        await d.stop();
        await pass;
      },
    );

    test(
      "a tenant's webhook finished while another's backlog hangs is sent at once, without waiting for those calls",
      { timeout: 60_000 },
      async () => {
        await enqueue('acct-a', 120, (i) => `http://127.0.0.1:1/never-${i}?a=acct-a`);
        const d = make();
        d.start();
        while (calls.length < d.config.perReceiverConcurrency) await tick();
        await enqueue('acct-b', 1, () => 'http://127.0.0.1:2/hook?a=acct-b');
        d.wake();
        while (!calls.some((c) => c.account === 'acct-b')) await tick();
        assert.equal(calls.filter((c) => c.account === 'acct-a').length, d.config.perReceiverConcurrency);
      },
    );

    test(
      'one tenant never has more than perAccountConcurrency calls in flight, whatever its receivers',
      { timeout: 60_000 },
      async () => {
        // 120 receivers of A on distinct hosts, none answering: only the account cap holds A back.
        await enqueue('acct-a', 120, (i) => `http://a${i}.test:1/never?a=acct-a`);
        await enqueue('acct-b', 1, () => 'http://127.0.0.1:1/b?a=acct-b');
        await enqueue('acct-c', 1, () => 'http://127.0.0.1:1/c?a=acct-c');
        const d = make();
        const pass = d.dispatchDue(clock.now());
        while (calls.length < d.config.perAccountConcurrency + 2 && calls.length < d.config.concurrency) await tick();
        for (let i = 0; i < 20; i++) await tick(); // room for calls beyond the caps to show up, were there any
        assert.deepEqual(
          {
            a: calls.filter((c) => c.account === 'acct-a').length,
            b: calls.filter((c) => c.account === 'acct-b').length,
            c: calls.filter((c) => c.account === 'acct-c').length,
          },
          { a: d.config.perAccountConcurrency, b: 1, c: 1 },
        );
        await d.stop();
        await pass;
      },
    );

    test('accounts are served in turn: with one slot, a backlog of one account alternates with the others', async () => {
      await enqueue('acct-a', 4, (i) => `http://a${i}.test/ok?a=acct-a`);
      await enqueue('acct-b', 2, (i) => `http://b${i}.test/ok?a=acct-b`);
      await enqueue('acct-c', 1, () => 'http://c.test/ok?a=acct-c');
      const result = await make({ concurrency: 1 }).dispatchDue(clock.now());
      assert.equal(result.delivered, 7);
      assert.deepEqual(
        calls.map((c) => c.account.slice(-1)),
        ['a', 'b', 'c', 'a', 'b', 'a', 'a'],
      );
    });
  });
}
