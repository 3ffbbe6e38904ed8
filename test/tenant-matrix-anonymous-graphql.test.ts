// A caller without an API key against GraphQL (config graphql.anonymousCatalog, on by default):
// the catalog answers, as the platform answers dstack's offer lister (gpuhunt sends no key), and
// nothing else does — no account's data however the document is dressed up (fragments, inline
// fragments, aliases, several operations, GET, mutations, introspection), no key's rate limits
// spent, and a bad key is still refused. Over SQLite and PostgreSQL.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const fleet = [
  { id: 'ro-1', dataCenterId: 'EU-RO-1', gpuTypeId: GPU, gpuCount: 4, cudaVersion: '12.4', portRange: [20000, 20099] },
];
/** gpuhunt's offer query, as it posts it. */
const OFFERS = `query { countryCodes dataCenters { id listed } gpuTypes { id maxGpuCount lowestPrice(input: {gpuCount: 1, secureCloud: true, dataCenterId: "EU-RO-1"}) { stockStatus uninterruptablePrice } } }`;

for (const { name: dialect, skip } of dialects()) {
  describe(`GraphQL without an API key (${dialect})`, { skip }, () => {
    let t: TestApp;
    let podId: string;
    let victim: { accountId: string; key: string };
    before(async () => {
      t = await createTestApp({
        dialect,
        runtime: new FakeRuntime(),
        file: { fleet, rateLimits: { minute: 30, hour: 1_000, day: 10_000 } },
      });
      victim = await t.newAccount('victim');
      const res = await t.request(victim.key, 'POST', '/v2/pods', {
        name: 'secret-pod',
        image: 'ubuntu:22.04',
        gpu: { id: GPU },
      });
      assert.equal(res.statusCode, 201, res.body);
      podId = json<{ id: string }>(res).id;
    });
    after(() => t?.close());

    const anonymous = (query: string, extra: Record<string, unknown> = {}, remoteAddress = '198.51.100.7') =>
      t.app.inject({
        method: 'POST',
        url: '/graphql',
        remoteAddress,
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ query, ...extra }),
      });

    test("gpuhunt's offer query answers without a key, from the live inventory", async () => {
      const res = await anonymous(OFFERS);
      assert.equal(res.statusCode, 200, res.body);
      const body = json<{ data: any; errors?: unknown }>(res);
      assert.equal(body.errors, undefined);
      assert.ok(body.data.countryCodes.includes('RO'));
      const gpu = body.data.gpuTypes.find((g: any) => g.id === GPU);
      assert.equal(gpu.maxGpuCount, 3, "the host's four GPUs less the one the victim's pod holds");
      assert.match(gpu.lowestPrice.stockStatus, /^(High|Medium|Low)$/);
    });

    test('anything beyond the catalog answers 401 without running, however it is written', async () => {
      const documents: Array<[string, Record<string, unknown>?]> = [
        ['{ myself { id pods { id name } } }'],
        ['{ gpuTypes { id } myself { id } }'],
        ['{ a: myself { id } }'],
        [`{ pod(input: {podId: "${podId}"}) { id name env } }`],
        ['query { ...F } fragment F on Query { gpuTypes { id } ...G } fragment G on Query { myself { id } }'],
        ['{ ... on Query { myself { id } } }'],
        ['query Ok { gpuTypes { id } } query Bad { myself { id } }', { operationName: 'Bad' }],
        ['query Ok { gpuTypes { id } } query Bad { myself { id } }'],
        [`mutation { podTerminate(input: {podId: "${podId}"}) }`],
        ['{ __schema { types { name } } }'],
        ['{ podTemplates { id } }'],
      ];
      for (const [query, extra] of documents) {
        const res = await anonymous(query, extra);
        assert.equal(res.statusCode, 401, `${query}: ${res.body}`);
        assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
        assert.equal(res.headers['www-authenticate'], 'Bearer');
        assert.match(
          json<{ detail: string }>(res).detail,
          /An API key is required.*only the catalog may be queried: gpuTypes/,
        );
        assert.doesNotMatch(res.body, new RegExp(podId));
        assert.doesNotMatch(res.body, /secret-pod/);
      }
      // the pod is untouched
      assert.notEqual((await t.services.pods.get(victim.accountId, podId)).status, 'TERMINATED');
      // and GET with the query in the URL is held to the same rule
      const get = await t.app.inject({
        method: 'GET',
        url: `/graphql?query=${encodeURIComponent('{ myself { id } }')}`,
      });
      assert.equal(get.statusCode, 401);
      const getCatalog = await t.app.inject({
        method: 'GET',
        url: `/graphql?query=${encodeURIComponent('{ countryCodes }')}`,
      });
      assert.equal(getCatalog.statusCode, 200, getCatalog.body);
    });

    test('a bad key is refused even for the catalog', async () => {
      const res = await t.request('not-a-key', 'POST', '/graphql', { query: '{ countryCodes }' });
      assert.equal(res.statusCode, 401);
      const query = await t.app.inject({
        method: 'GET',
        url: `/graphql?api_key=nope&query=${encodeURIComponent('{ countryCodes }')}`,
      });
      assert.equal(query.statusCode, 401);
    });

    test('callers without a key are rate-limited by address, each root field counted, and spend no key`s limits', async () => {
      const address = '203.0.113.9';
      let refused = null;
      for (let i = 0; i < 40 && !refused; i++) {
        const res = await anonymous('{ countryCodes cpuFlavors { id } }', {}, address);
        if (res.statusCode === 429) refused = { at: i, res };
        else assert.equal(res.statusCode, 200, res.body);
      }
      assert.ok(refused, 'the address was never limited');
      assert.equal(refused.at, 15, 'two root fields a request: the 30-a-minute window holds 15');
      assert.ok(Number(refused.res.headers['retry-after']) > 0);
      assert.match(
        json<{ detail: string }>(refused.res).detail,
        /this client address \(a request without an API key\) may make 30/,
      );
      // another address, and a keyed caller, are not limited by it
      assert.equal((await anonymous('{ countryCodes }', {}, '203.0.113.10')).statusCode, 200);
      const owner = await t.newAccount('keyed');
      assert.equal((await t.request(owner.key, 'POST', '/graphql', { query: '{ countryCodes }' })).statusCode, 200);
    });

    test('an IPv6 caller is counted by its /64: other addresses of its block share its limit, another block does not', async () => {
      let spent = 0;
      for (
        let i = 1;
        (await anonymous('{ countryCodes }', {}, `2001:db8:5:7::${i.toString(16)}`)).statusCode === 200;
        i++
      )
        assert.ok(++spent <= 30, 'more than the window from one /64');
      assert.equal(spent, 30, 'each address of the block drew on one window of 30');
      assert.equal((await anonymous('{ countryCodes }', {}, '2001:db8:5:7:ffff:1:2:3')).statusCode, 429);
      assert.equal((await anonymous('{ countryCodes }', {}, '2001:db8:5:8::1')).statusCode, 200);
    });
  });
}

describe('GraphQL without an API key, graphql.anonymousCatalog false', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ file: { fleet, graphql: { anonymousCatalog: false } } });
  });
  after(() => t?.close());

  test('the catalog needs a key too', async () => {
    const res = await t.request(null, 'POST', '/graphql', { query: OFFERS });
    assert.equal(res.statusCode, 401);
    assert.match(json<{ detail: string }>(res).detail, /An API key is required/);
    const keyed = await t.newAccount('keyed');
    assert.equal((await t.request(keyed.key, 'POST', '/graphql', { query: OFFERS })).statusCode, 200);
  });
});
