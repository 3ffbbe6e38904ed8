/**
 * Load-balancing endpoints under a hostile tenant (docs/load-balancing.md): another account's key
 * never reaches a worker, a worker id of another endpoint in `X-Runpod-Worker-Id` never leads out of
 * the caller's own endpoint, a tenant holding hundreds of requests waiting on an endpoint that
 * never becomes ready leaves another tenant's endpoint answered, and a worker answering what no
 * proxy may pass on is a 502 to its own caller only, and one naming another worker in its answer is
 * named as itself. Workers are real processes
 * (test/fixtures/lb-worker.mjs) on the process runtime.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { eventually } from './support/eventually.js';
import { startProxyFixture, type ProxyFixture } from './support/proxy-fixture.js';
import type { SshTenant } from './support/ssh-fixture.js';

const LB_WORKER = 'test/lb-worker';

describe('load-balancing endpoints under a hostile tenant', () => {
  let f: ProxyFixture;
  let victim: SshTenant;
  let attacker: SshTenant;
  let victimEndpoint: string;
  let attackerEndpoint: string;

  const services = () => f.server.server.services;
  const lbUrl = (endpointId: string, path = '/echo') => `${f.server.server.proxy!.url}/lb/${endpointId}${path}`;
  const as = (tenant: SshTenant, extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${tenant.key}`,
    ...extra,
  });

  const endpointOf = async (tenant: SshTenant, env: Record<string, string> = {}) => {
    const { templates, endpoints } = services();
    const template = await templates.create(tenant.accountId, {
      name: `lb-${Math.random().toString(36).slice(2, 8)}`,
      imageName: LB_WORKER,
      isServerless: true,
      containerDiskInGb: 5,
    });
    const e = await endpoints.create(tenant.accountId, {
      name: 'lb',
      type: 'LB',
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMin: 1,
      workersMax: 1,
      scalerType: 'REQUEST_COUNT',
      scalerValue: 1000,
      env,
    });
    return e.id;
  };

  before(async () => {
    f = await startProxyFixture({
      images: {
        [LB_WORKER]: { command: [process.execPath, join(import.meta.dirname, 'fixtures', 'lb-worker.mjs')] },
      },
      proxy: { port: 0, loadBalancer: { workerWaitMs: 60_000, healthIntervalMs: 100 } },
      serverless: { autoscaler: { intervalMs: 100, nudgeGapMs: 0 } },
    });
    victim = await f.tenant('victim');
    attacker = await f.tenant('attacker');
    victimEndpoint = await endpointOf(victim);
    attackerEndpoint = await endpointOf(attacker);
    for (const id of [victimEndpoint, attackerEndpoint])
      await eventually(`a ready worker of ${id}`, async () =>
        services()
          .autoscaler.workerIds(id)
          .some((w) => services().lb.workerState(w)?.ready),
      );
  });
  after(() => f?.close());

  const served = async (endpointId: string, tenant: SshTenant): Promise<number> =>
    ((await (await fetch(lbUrl(endpointId, '/served'), { headers: as(tenant) })).json()) as { served: number }).served;

  test("another account's key is refused 404 and the endpoint's worker sees nothing of it", async () => {
    const before = await served(victimEndpoint, victim);
    for (const method of ['GET', 'POST', 'DELETE']) {
      const res = await fetch(lbUrl(victimEndpoint, '/echo/secret'), {
        method,
        headers: as(attacker),
        ...(method === 'POST' ? { body: 'x' } : {}),
      });
      assert.equal(res.status, 404, method);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.doesNotMatch(await res.text(), /secret|ADA_24|workers/);
    }
    assert.equal(await served(victimEndpoint, victim), before, 'no request reached the worker');
  });

  test("naming another endpoint's worker in X-Runpod-Worker-Id leads only to the caller's own workers", async () => {
    const victimWorker = services().autoscaler.workerIds(victimEndpoint)[0]!;
    const before = await served(victimEndpoint, victim);
    const res = await fetch(lbUrl(attackerEndpoint), { headers: as(attacker, { 'x-runpod-worker-id': victimWorker }) });
    assert.equal(res.status, 200);
    const seen = (await res.json()) as { workerId: string };
    assert.notEqual(seen.workerId, victimWorker);
    assert.ok(services().autoscaler.workerIds(attackerEndpoint).includes(seen.workerId));
    assert.equal(await served(victimEndpoint, victim), before);
  });

  test("a tenant holding 300 requests waiting on an endpoint that never becomes ready leaves another tenant's endpoint answered", async () => {
    const stuck = await endpointOf(attacker, { LB_NEVER_READY: '1' });
    const abort = new AbortController();
    const waiting = Array.from({ length: 300 }, () =>
      fetch(lbUrl(stuck), { headers: as(attacker), signal: abort.signal }).catch(() => null),
    );
    try {
      await eventually('the attacker’s requests to wait', async () => services().lb.waiting(stuck) >= 300);
      const started = performance.now();
      for (let i = 0; i < 20; i++) {
        const res = await fetch(lbUrl(victimEndpoint), { headers: as(victim) });
        assert.equal(res.status, 200);
        await res.arrayBuffer();
      }
      assert.ok(performance.now() - started < 30_000);
    } finally {
      abort.abort();
      await Promise.all(waiting);
    }
    await eventually('the left requests to stop waiting', async () => services().lb.waiting(stuck) === 0);
  });

  test("a tenant past proxy.maxConnectionsPerAccount is answered 429 at once, and another tenant's requests go on", async () => {
    const stuck = await endpointOf(attacker, { LB_NEVER_READY: '1' });
    const settings = services().config.proxy;
    const before = settings.maxConnectionsPerAccount;
    settings.maxConnectionsPerAccount = 10;
    const abort = new AbortController();
    const held = Array.from({ length: 10 }, () =>
      fetch(lbUrl(stuck), { headers: as(attacker), signal: abort.signal }).catch(() => null),
    );
    try {
      await eventually('the attacker’s ten requests to wait', async () => services().lb.waiting(stuck) >= 10);
      const refused = await fetch(lbUrl(stuck), { headers: as(attacker) });
      assert.equal(refused.status, 429);
      assert.equal(((await refused.json()) as { code: string }).code, 'TOO_MANY_CONNECTIONS');
      const res = await fetch(lbUrl(victimEndpoint), { headers: as(victim) });
      assert.equal(res.status, 200);
    } finally {
      abort.abort();
      await Promise.all(held);
      settings.maxConnectionsPerAccount = before;
    }
  });

  test('a worker answering a status no proxy may pass on is a 502 to its own caller, and the server answers on', async () => {
    const res = await fetch(lbUrl(attackerEndpoint, '/badhead'), { headers: as(attacker) });
    assert.equal(res.status, 502);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.ok(res.headers.get('x-runpod-worker-id'), 'the problem names the worker');
    const after = await fetch(lbUrl(victimEndpoint), { headers: as(victim) });
    assert.equal(after.status, 200);
  });

  test("a worker naming another endpoint's worker in its own X-Runpod-Worker-Id is named as itself to its caller", async () => {
    const victimWorker = services().autoscaler.workerIds(victimEndpoint)[0]!;
    const attackerWorker = services().autoscaler.workerIds(attackerEndpoint)[0]!;
    const res = await fetch(lbUrl(attackerEndpoint, `/forge?as=${victimWorker}`), { headers: as(attacker) });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'forged');
    assert.equal(res.headers.get('x-runpod-worker-id'), attackerWorker, 'one header, the worker that answered');
  });
});
