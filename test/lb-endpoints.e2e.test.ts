/**
 * Load-balancing endpoints end to end on the process runtime (docs/load-balancing.md): a whole
 * server whose workers are real processes (test/fixtures/lb-worker.mjs), reached through the proxy
 * listener at `/lb/{endpointId}/…`. The autoscaler's time is a FakeClock (idle scaling moves only
 * when the test advances it); workers, health checks and waits are real.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FakeClock } from '../src/domain/clock.js';
import { eventually } from './support/eventually.js';
import { startProxyFixture, type ProxyFixture } from './support/proxy-fixture.js';
import type { SshTenant } from './support/ssh-fixture.js';
import { openWebSocket } from './support/websocket-client.js';

const LB_WORKER = 'test/lb-worker';
const MAX_PAYLOAD = 1024 * 1024;

describe('load-balancing endpoints (process runtime, real workers)', () => {
  let f: ProxyFixture;
  let owner: SshTenant;
  let other: SshTenant;
  const clock = new FakeClock(Date.now());

  before(async () => {
    f = await startProxyFixture(
      {
        images: {
          [LB_WORKER]: { command: [process.execPath, join(import.meta.dirname, 'fixtures', 'lb-worker.mjs')] },
        },
        proxy: {
          port: 0,
          loadBalancer: { workerWaitMs: 30_000, healthIntervalMs: 100, maxPayloadBytes: MAX_PAYLOAD },
        },
        serverless: { autoscaler: { intervalMs: 100, nudgeGapMs: 0 } },
      },
      { clock },
    );
    owner = await f.tenant('lb-owner');
    other = await f.tenant('lb-other');
  });
  after(() => f?.close());

  const services = () => f.server.server.services;
  const lbUrl = (endpointId: string, path = '/echo') => `${f.server.server.proxy!.url}/lb/${endpointId}${path}`;

  const endpointOf = async (tenant: SshTenant, patch: Record<string, unknown> = {}) => {
    const { templates, endpoints } = services();
    const template = await templates.create(tenant.accountId, {
      name: `lb-${Math.random().toString(36).slice(2, 8)}`,
      imageName: LB_WORKER,
      isServerless: true,
      containerDiskInGb: 5,
    });
    return endpoints.create(tenant.accountId, {
      name: 'lb',
      type: 'LB',
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 5,
      scalerType: 'REQUEST_COUNT',
      scalerValue: 1,
      ...patch,
    });
  };

  const readyWorkers = (endpointId: string, n: number) =>
    eventually(
      () => `${n} ready workers of ${endpointId}`,
      async () => {
        const ids = services().autoscaler.workerIds(endpointId);
        const ready = ids.filter((id) => services().lb.workerState(id)?.ready);
        return ready.length >= n ? ready : null;
      },
    );

  test('a request to an endpoint with no worker waits while one starts (its health 204, then 200) and reaches it once, without the key', async () => {
    const endpoint = await endpointOf(owner);
    assert.deepEqual(services().autoscaler.workerIds(endpoint.id), [], 'no worker before the first request');
    const view = await f.call(owner.key, 'GET', `/v2/serverless/${endpoint.id}`);
    assert.equal(view.body.loadBalancerUrl, `${services().config.proxy.publicUrl}/lb/${endpoint.id}`);
    assert.match(view.body.requestUrls.run, /^http:\/\/.+\/v2\/[a-z0-9]+\/run$/, 'requestUrls are absolute');
    const res = await fetch(`${view.body.loadBalancerUrl}/echo/hello?x=1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'hi' }),
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as {
      workerId: string;
      url: string;
      headers: Record<string, string>;
      bytes: number;
    };
    assert.equal(res.headers.get('x-runpod-worker-id'), body.workerId, 'the answer names the worker that gave it');
    assert.deepEqual(services().autoscaler.workerIds(endpoint.id), [body.workerId]);
    assert.equal(body.url, '/echo/hello?x=1', 'the prefix is taken off');
    assert.equal(body.headers['x-forwarded-prefix'], `/lb/${endpoint.id}`);
    assert.equal(body.headers.authorization, undefined, 'the API key never reaches the worker');
    assert.equal(body.bytes, JSON.stringify({ prompt: 'hi' }).length);
    // it was checked while initializing (204) before it took the request
    const pings = await fetch(lbUrl(endpoint.id, '/pings'), { headers: { authorization: `Bearer ${owner.key}` } });
    assert.ok(((await pings.json()) as { pings: number }).pings >= 3, 'two 204 answers came before the 200');
    const lines = await services().systemLog.read(body.workerId);
    assert.ok(JSON.stringify(lines).includes('health: ready'), 'the health change is in its system log');
  });

  test('two ready workers share requests by the fewest outstanding; X-Runpod-Worker-Id picks a ready worker, strictly when asked, and a strict request for a gone worker is 404', async () => {
    const endpoint = await endpointOf(owner, { workersMin: 2, workersMax: 2 });
    const [a, b] = await readyWorkers(endpoint.id, 2);
    const auth = { authorization: `Bearer ${owner.key}` };
    // a request held by one worker: the next goes to the other
    const held = fetch(lbUrl(endpoint.id, '/hold?id=h1'), { headers: auth });
    await eventually('the held request to reach a worker', async () => services().lb.inFlight(endpoint.id) === 1);
    const busy = [a!, b!].find((id) => services().lb.workerState(id)!.outstanding === 1)!;
    const free = busy === a ? b! : a!;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(lbUrl(endpoint.id), { headers: auth });
      assert.equal(((await res.json()) as { workerId: string }).workerId, free, 'the idle worker takes it');
    }
    // affinity: a request naming the busy worker goes to it anyway
    const named = await fetch(lbUrl(endpoint.id), { headers: { ...auth, 'x-runpod-worker-id': busy } });
    assert.equal(named.headers.get('x-runpod-worker-id'), busy);
    const strict = await fetch(lbUrl(endpoint.id), { headers: { ...auth, 'x-runpod-worker-id': `strict ${busy}` } });
    assert.equal(strict.headers.get('x-runpod-worker-id'), busy, 'strict: the named worker');
    await strict.arrayBuffer();
    const gone = await fetch(lbUrl(endpoint.id), {
      headers: { ...auth, 'x-runpod-worker-id': 'strict-resume nosuchworker' },
    });
    assert.equal(gone.status, 404);
    assert.match(((await gone.json()) as { detail: string }).detail, /^affinity_worker_gone/);
    const released = await fetch(lbUrl(endpoint.id, '/release?id=h1'), {
      headers: { ...auth, 'x-runpod-worker-id': busy },
    });
    assert.equal(released.status, 200);
    const first = await held;
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-runpod-worker-id'), busy);
  });

  test('idle workers stop after idleTimeout on the autoscaler clock, down to zero', async () => {
    const endpoint = await endpointOf(owner, { idleTimeout: 5 });
    const res = await fetch(lbUrl(endpoint.id), { headers: { authorization: `Bearer ${owner.key}` } });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    assert.equal(services().autoscaler.workerIds(endpoint.id).length, 1);
    clock.advance(2_000);
    // not idle long enough yet: two passes later it is still up
    const passes = services().autoscaler.decisions.passes;
    await eventually(
      'two passes after the first advance',
      async () => services().autoscaler.decisions.passes > passes + 1,
    );
    assert.equal(services().autoscaler.workerIds(endpoint.id).length, 1, 'not idle for idleTimeout yet');
    clock.advance(5_000);
    await eventually('the idle worker to stop', async () => services().autoscaler.workerIds(endpoint.id).length === 0);
  });

  test('a request that finds no ready worker within the wait bound is answered 503 with Retry-After', async () => {
    const endpoint = await endpointOf(owner, { env: { LB_NEVER_READY: '1' } });
    const settings = services().config.proxy.loadBalancer;
    const before = settings.workerWaitMs;
    settings.workerWaitMs = 1_000;
    try {
      const res = await fetch(lbUrl(endpoint.id), { headers: { authorization: `Bearer ${owner.key}` } });
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.ok(Number(res.headers.get('retry-after')) > 0);
      const problem = (await res.json()) as { code: string; detail: string };
      assert.equal(problem.code, 'NO_WORKER_READY');
      assert.match(problem.detail, /workerWaitMs/);
      assert.equal(services().autoscaler.workerIds(endpoint.id).length, 1, 'a worker was started for it');
    } finally {
      settings.workerWaitMs = before;
    }
  });

  test('a worker that begins no answer within processingTimeoutMs is a 504 naming it, and the request is not sent again', async () => {
    const endpoint = await endpointOf(owner, { workersMax: 2, scalerValue: 1 });
    const auth = { authorization: `Bearer ${owner.key}` };
    const warm = await fetch(lbUrl(endpoint.id), { headers: auth });
    await warm.arrayBuffer();
    const worker = warm.headers.get('x-runpod-worker-id')!;
    const settings = services().config.proxy.loadBalancer;
    const before = settings.processingTimeoutMs;
    settings.processingTimeoutMs = 1_000;
    try {
      const res = await fetch(lbUrl(endpoint.id, '/hold?id=never'), { headers: auth });
      assert.equal(res.status, 504);
      assert.equal(res.headers.get('x-runpod-worker-id'), worker);
      const problem = (await res.json()) as { code: string; detail: string };
      assert.equal(problem.code, 'UPSTREAM_TIMEOUT');
      assert.match(problem.detail, /processingTimeoutMs/);
      assert.match(problem.detail, /not retried/);
    } finally {
      settings.processingTimeoutMs = before;
    }
    const served = await fetch(lbUrl(endpoint.id, '/served'), { headers: { ...auth, 'x-runpod-worker-id': worker } });
    assert.equal(((await served.json()) as { served: number }).served, 2, 'the warm-up and the held request, once');
  });

  test('a body over maxPayloadBytes is refused 413: with its length before any worker is woken, without it once it grows past the cap', async () => {
    const endpoint = await endpointOf(owner);
    const auth = { authorization: `Bearer ${owner.key}` };
    const big = Buffer.alloc(MAX_PAYLOAD + 1, 1);
    const sized = await fetch(lbUrl(endpoint.id), { method: 'POST', headers: auth, body: big });
    assert.equal(sized.status, 413);
    assert.equal(((await sized.json()) as { code: string }).code, 'PAYLOAD_TOO_LARGE');
    assert.deepEqual(services().autoscaler.workerIds(endpoint.id), [], 'no worker was started for it');
    const chunked = () =>
      fetch(lbUrl(endpoint.id), {
        method: 'POST',
        headers: auth,
        body: new ReadableStream({
          start(c) {
            c.enqueue(new Uint8Array(big.subarray(0, MAX_PAYLOAD / 2)));
            c.enqueue(new Uint8Array(big.subarray(MAX_PAYLOAD / 2)));
            c.close();
          },
        }),
        duplex: 'half',
      });
    const res = await chunked();
    assert.equal(res.status, 413);
    const exact = await fetch(lbUrl(endpoint.id), { method: 'POST', headers: auth, body: big.subarray(1) });
    assert.equal(exact.status, 200, 'a body of exactly the cap goes through');
    assert.equal(((await exact.json()) as { bytes: number }).bytes, MAX_PAYLOAD);
  });

  test("a WebSocket waits for a ready worker, reaches it without the key, and is one of its requests until it closes; another account's key opens none", async () => {
    const endpoint = await endpointOf(owner);
    await assert.rejects(
      openWebSocket(lbUrl(endpoint.id, '/ws'), { authorization: `Bearer ${other.key}` }),
      /not upgraded: 404/,
    );
    const ws = await openWebSocket(lbUrl(endpoint.id, '/ws'), { authorization: `Bearer ${owner.key}` });
    assert.equal(ws.headers['x-seen-authorization'], 'none', 'the key never reaches the worker');
    ws.send('hello');
    const [workerId, said] = (await ws.next()).split(': ');
    assert.equal(said, 'hello');
    assert.deepEqual(services().autoscaler.workerIds(endpoint.id), [workerId]);
    assert.equal(services().lb.workerState(workerId!)?.outstanding, 1, 'the open WebSocket is held by its worker');
    ws.close();
    await ws.closed;
    await eventually(
      'the closed WebSocket to leave its worker',
      async () => services().lb.workerState(workerId!)?.outstanding === 0,
    );
  });

  test("another account's key, a worker's key and no key are refused as problems and never reach a worker", async () => {
    const endpoint = await endpointOf(owner);
    const workerKey = await services().accounts.createKey(owner.accountId, {
      scope: 'worker',
      endpointId: endpoint.id,
      workerId: 'w1',
      name: 'a worker key',
    });
    const cases: Array<[string, Record<string, string>, number]> = [
      ["another account's key", { authorization: `Bearer ${other.key}` }, 404],
      ["a worker's key of the endpoint", { authorization: `Bearer ${workerKey.key}` }, 401],
      ['no key', {}, 401],
      ['a made-up key', { authorization: 'Bearer gty_nothing' }, 401],
    ];
    for (const [what, headers, status] of cases) {
      const res = await fetch(lbUrl(endpoint.id), { method: 'POST', headers, body: 'x' });
      assert.equal(res.status, status, what);
      assert.equal(res.headers.get('content-type'), 'application/problem+json', what);
      assert.equal(res.headers.get('x-runpod-worker-id'), null, what);
    }
    assert.deepEqual(services().autoscaler.workerIds(endpoint.id), [], 'no worker was started for them');
    const queue = await services().endpoints.create(owner.accountId, {
      name: 'queue',
      templateId: endpoint.templateId,
      gpuIds: 'ADA_24',
    });
    const res = await fetch(lbUrl(queue.id), { headers: { authorization: `Bearer ${owner.key}` } });
    assert.equal(res.status, 404, 'a queue endpoint is not on the load balancer');
  });
});
