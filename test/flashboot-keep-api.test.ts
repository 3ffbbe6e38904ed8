/**
 * A FlashBoot endpoint's own keep time (`flashBootKeepSeconds`, a Gantry extension) over every
 * endpoint API, on both stores: set and read on REST v2 (`/v2/serverless`), REST v1
 * (`/v1/endpoints`) and GraphQL (`saveEndpoint`, the `Endpoint` type); 10 minutes by default;
 * kept by a GraphQL save that does not send it (runpodctl's updates never do); bad values answer
 * problem+json naming the field and what is valid (REST v2 422, REST v1 400, as for every endpoint
 * field), and a GraphQL error. How the autoscaler uses it:
 * src/serverless/autoscaler-flashboot.test.ts.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, dialects, json, type DialectName, type TestApp } from './support/harness.js';

const GQL_ENDPOINT = `
  mutation Save($input: EndpointInput!) {
    saveEndpoint(input: $input) { id name flashBootType flashBootKeepSeconds }
  }`;
const GQL_READ = `query { myself { endpoints { id flashBootKeepSeconds } } }`;

interface Problem {
  status: number;
  detail: string;
  errors?: string[];
}

for (const { name, skip } of dialects())
  describe(`FlashBoot keep time over the endpoint APIs (${name})`, { skip }, () => suite(name));

function suite(dialect: DialectName): void {
  let t: TestApp;
  let a: { accountId: string; key: string };
  let templateId = '';
  before(async () => {
    t = await createTestApp({ dialect });
    a = await t.newAccount();
    const res = await t.request(a.key, 'POST', '/v2/templates', {
      name: 'keep-w',
      image: 'fake/idle',
      serverless: true,
    });
    assert.equal(res.statusCode, 201, res.body);
    templateId = json<{ id: string }>(res).id;
  });
  after(() => t?.close());

  const problem = (res: Awaited<ReturnType<TestApp['request']>>, status: number): Problem => {
    assert.equal(res.statusCode, status, res.body);
    assert.match(String(res.headers['content-type']), /application\/problem\+json/);
    return json<Problem>(res);
  };
  const v2Create = (extra: Record<string, unknown>) =>
    t.request(a.key, 'POST', '/v2/serverless', {
      name: `keep-${Math.random().toString(36).slice(2, 8)}`,
      type: 'QUEUE',
      templateId,
      gpu: { pools: ['ADA_24'] },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
      flashboot: 'FLASHBOOT',
      ...extra,
    });
  const gql = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await t.request(a.key, 'POST', '/graphql', { query, variables });
    assert.equal(res.statusCode, 200, res.body);
    return json<{ data: Record<string, unknown> | null; errors?: Array<{ message: string; extensions?: unknown }> }>(
      res,
    );
  };

  test('an endpoint keeps its suspended workers 10 minutes unless told otherwise, on every API', async () => {
    const res = await v2Create({});
    assert.equal(res.statusCode, 201, res.body);
    const id = json<{ id: string; flashBootKeepSeconds: number }>(res).id;
    assert.equal(json<{ flashBootKeepSeconds: number }>(res).flashBootKeepSeconds, 600);
    const v1 = json<{ flashBootKeepSeconds: number }>(await t.request(a.key, 'GET', `/v1/endpoints/${id}`));
    assert.equal(v1.flashBootKeepSeconds, 600);
    const read = await gql(GQL_READ);
    const mine = (read.data!.myself as { endpoints: Array<{ id: string; flashBootKeepSeconds: number }> }).endpoints;
    assert.equal(mine.find((e) => e.id === id)?.flashBootKeepSeconds, 600);
  });

  test('the keep time is set and read on REST v2, REST v1 and GraphQL, the same stored field', async () => {
    const created = await v2Create({ flashBootKeepSeconds: 120 });
    assert.equal(created.statusCode, 201, created.body);
    const id = json<{ id: string }>(created).id;
    const v2 = () => t.request(a.key, 'GET', `/v2/serverless/${id}`);
    assert.equal(json<{ flashBootKeepSeconds: number }>(await v2()).flashBootKeepSeconds, 120);
    const patched = await t.request(a.key, 'PATCH', `/v2/serverless/${id}`, { flashBootKeepSeconds: 45 });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal(json<{ flashBootKeepSeconds: number }>(await v2()).flashBootKeepSeconds, 45);
    const v1 = await t.request(a.key, 'PATCH', `/v1/endpoints/${id}`, { flashBootKeepSeconds: 1_800 });
    assert.equal(v1.statusCode, 200, v1.body);
    assert.equal(json<{ flashBootKeepSeconds: number }>(v1).flashBootKeepSeconds, 1_800);
    assert.equal(json<{ flashBootKeepSeconds: number }>(await v2()).flashBootKeepSeconds, 1_800);
    const saved = await gql(GQL_ENDPOINT, {
      input: {
        id,
        name: 'renamed',
        templateId,
        gpuIds: 'ADA_24',
        flashBootType: 'FLASHBOOT',
        flashBootKeepSeconds: 300,
      },
    });
    assert.equal(saved.errors, undefined, JSON.stringify(saved.errors));
    assert.deepEqual(saved.data!.saveEndpoint, {
      id,
      name: 'renamed',
      flashBootType: 'FLASHBOOT',
      flashBootKeepSeconds: 300,
    });
    // runpodctl's update: saveEndpoint with an id and the platform's fields only.
    const kept = await gql(GQL_ENDPOINT, { input: { id, name: 'again', templateId, gpuIds: 'ADA_24' } });
    assert.equal((kept.data!.saveEndpoint as { flashBootKeepSeconds: number }).flashBootKeepSeconds, 300);
    const reset = await gql(GQL_ENDPOINT, {
      input: { id, name: 'again', templateId, gpuIds: 'ADA_24', flashBootKeepSeconds: null },
    });
    assert.equal(
      (reset.data!.saveEndpoint as { flashBootKeepSeconds: number }).flashBootKeepSeconds,
      600,
      'null resets it',
    );
    const v1Created = await t.request(a.key, 'POST', '/v1/endpoints', {
      templateId,
      flashboot: true,
      flashBootKeepSeconds: 90,
    });
    assert.equal(v1Created.statusCode, 200, v1Created.body);
    assert.equal(json<{ flashBootKeepSeconds: number }>(v1Created).flashBootKeepSeconds, 90);
  });

  test('a negative, fractional or over-a-day keep time answers a problem+json saying what is valid, and changes nothing', async () => {
    const created = await v2Create({ flashBootKeepSeconds: 60 });
    const id = json<{ id: string }>(created).id;
    for (const bad of [-1, 1.5, 86_401]) {
      // REST v2 answers a body that breaks a rule 422 VALIDATION_FAILED, REST v1 400 (docs/errors.md).
      for (const [res, status] of [
        [await v2Create({ flashBootKeepSeconds: bad }), 422],
        [await t.request(a.key, 'PATCH', `/v2/serverless/${id}`, { flashBootKeepSeconds: bad }), 422],
        [await t.request(a.key, 'PATCH', `/v1/endpoints/${id}`, { flashBootKeepSeconds: bad }), 400],
        [await t.request(a.key, 'POST', '/v1/endpoints', { templateId, flashBootKeepSeconds: bad }), 400],
      ] as const) {
        const p = problem(res, status);
        assert.match(p.detail, /flashBootKeepSeconds: must be (an integer|between 0 and 86400 seconds)/, p.detail);
      }
      const gqlBad = await gql(GQL_ENDPOINT, {
        input: { id, name: 'x', templateId, gpuIds: 'ADA_24', flashBootKeepSeconds: bad },
      });
      assert.ok(gqlBad.errors && gqlBad.errors.length > 0, `GraphQL refuses ${bad}`);
    }
    const gqlNegative = await gql(GQL_ENDPOINT, {
      input: { id, name: 'x', templateId, gpuIds: 'ADA_24', flashBootKeepSeconds: -5 },
    });
    assert.match(gqlNegative.errors![0]!.message, /flashBootKeepSeconds: must be between 0 and 86400 seconds/);
    assert.equal(
      json<{ flashBootKeepSeconds: number }>(await t.request(a.key, 'GET', `/v2/serverless/${id}`))
        .flashBootKeepSeconds,
      60,
    );
  });
}
