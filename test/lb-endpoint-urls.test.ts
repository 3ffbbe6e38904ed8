/**
 * A load-balancing endpoint's `loadBalancerUrl` on every surface that shows an endpoint
 * (docs/api.md): REST v2, REST v1 and GraphQL, on a real `gantry` server (process runtime) called
 * over HTTP, each the same absolute address on the proxy listener; a queue endpoint has none. The
 * console's link is checked in a browser by test/console.e2e.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxyFixture, type ProxyFixture } from './support/proxy-fixture.js';
import type { SshTenant } from './support/ssh-fixture.js';

describe('loadBalancerUrl on REST v2, REST v1 and GraphQL', () => {
  let f: ProxyFixture;
  let owner: SshTenant;
  let lbId: string;
  let queueId: string;

  before(async () => {
    f = await startProxyFixture({ proxy: { port: 0 } });
    owner = await f.tenant('lb-urls');
    const { templates, endpoints } = f.server.server.services;
    const template = await templates.create(owner.accountId, {
      name: 'lb-urls',
      imageName: 'test/lb-urls',
      isServerless: true,
      containerDiskInGb: 5,
    });
    const common = { templateId: template.id, gpuIds: 'ADA_24', workersMin: 0, workersMax: 1 };
    lbId = (await endpoints.create(owner.accountId, { ...common, name: 'lb', type: 'LB' })).id;
    queueId = (await endpoints.create(owner.accountId, { ...common, name: 'queue' })).id;
  });
  after(() => f?.close());

  const expected = (id: string) => `${f.server.server.proxy!.url}/lb/${id}`;

  test('v2 and v1 answer a load-balancing endpoint its absolute address on the proxy listener, and a queue endpoint none', async () => {
    const lbUrl = expected(lbId);
    assert.match(lbUrl, /^http:\/\/127\.0\.0\.1:\d+\/lb\/[a-z0-9]+$/);
    const v2 = await f.call(owner.key, 'GET', `/v2/serverless/${lbId}`);
    assert.equal(v2.status, 200, JSON.stringify(v2.body));
    assert.equal(v2.body.loadBalancerUrl, lbUrl);
    const v1 = await f.call(owner.key, 'GET', `/v1/endpoints/${lbId}`);
    assert.equal(v1.status, 200, JSON.stringify(v1.body));
    assert.equal(v1.body.loadBalancerUrl, lbUrl);
    const v1List = await f.call(owner.key, 'GET', '/v1/endpoints');
    const listed = new Map(
      (v1List.body as Array<{ id: string; loadBalancerUrl?: string }>).map((e) => [e.id, e.loadBalancerUrl] as const),
    );
    assert.equal(listed.get(lbId), lbUrl);
    assert.equal(listed.get(queueId), undefined);
    assert.ok(listed.has(queueId));
    assert.ok(!('loadBalancerUrl' in (await f.call(owner.key, 'GET', `/v2/serverless/${queueId}`)).body));
    assert.ok(!('loadBalancerUrl' in (await f.call(owner.key, 'GET', `/v1/endpoints/${queueId}`)).body));
  });

  test("GraphQL's Endpoint answers loadBalancerUrl: the same address for a load-balancing endpoint, null for a queue endpoint", async () => {
    const res = await f.call(owner.key, 'POST', '/graphql', {
      query: '{ myself { endpoints { id type loadBalancerUrl } } }',
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.errors, undefined, JSON.stringify(res.body.errors));
    const byId = new Map(
      (res.body.data.myself.endpoints as Array<{ id: string; type: string; loadBalancerUrl: string | null }>).map(
        (e) => [e.id, e],
      ),
    );
    assert.deepEqual(byId.get(lbId), { id: lbId, type: 'LB', loadBalancerUrl: expected(lbId) });
    assert.deepEqual(byId.get(queueId), { id: queueId, type: 'QB', loadBalancerUrl: null });
  });

  test('the address works: a request to it reaches the load balancer (no ready worker → a problem answer, not the job API)', async () => {
    const res = await fetch(`${expected(lbId)}/ping`, { headers: { authorization: 'Bearer not-a-key' } });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
  });
});
