import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

test('the OpenAPI document is served without a key and describes every resource route', async () => {
  const res = await t.request(null, 'GET', '/v2/openapi.json');
  assert.equal(res.statusCode, 200);
  const doc = json(res);
  assert.match(doc.openapi, /^3\./);
  for (const path of [
    '/v2/pods',
    '/v2/pods/{id}',
    '/v2/pods/{id}/action',
    '/v2/templates',
    '/v2/templates/{id}',
    '/v2/network-volumes',
    '/v2/registries',
    '/v2/catalog/gpus',
    '/v2/account/ssh-keys',
  ]) {
    assert.ok(doc.paths[path], `${path} is missing from the OpenAPI document`);
  }
  // the request schemas that validate are the ones documented
  const create = doc.paths['/v2/pods'].post.requestBody.content['application/json'].schema;
  assert.equal(create.additionalProperties, false);
  assert.ok(create.properties.gpu && create.properties.cpu && create.properties.mounts);
});

test('the browsable docs page is served without a key', async () => {
  let res = await t.request(null, 'GET', '/docs');
  if (res.statusCode === 302) res = await t.request(null, 'GET', String(res.headers.location));
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /text\/html/);
});

test('GET /v1/docs, which the v1 document lists (runpod/docs a900806e api-reference/openapi.json, GetDocs), serves the browsable page over the v1 document without a key', async () => {
  let res = await t.request(null, 'GET', '/v1/docs');
  if (res.statusCode === 302) res = await t.request(null, 'GET', String(res.headers.location));
  assert.equal(res.statusCode, 200, res.body);
  assert.match(String(res.headers['content-type']), /text\/html/);
  const init = await t.request(null, 'GET', '/v1/docs/static/swagger-initializer.js');
  assert.equal(init.statusCode, 200);
  assert.match(init.body, /\/v1\/openapi\.json/, 'the page loads the v1 document');
  const served = json(await t.request(null, 'GET', '/v1/docs/json'));
  assert.equal(served.info.title, json(await t.request(null, 'GET', '/v1/openapi.json')).info.title);
  for (const doc of ['/v1/openapi.json', '/v2/openapi.json'])
    assert.ok(!Object.keys(json(await t.request(null, 'GET', doc)).paths).some((p) => p.includes('/docs')), doc);
});

test('internal routes (health, docs) do not appear in the document', async () => {
  const doc = json(await t.request(null, 'GET', '/v2/openapi.json'));
  assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/docs') || p === '/healthz'));
});

test('every route’s schemas compile when built eagerly, and a route compiled on first use answers bad input exactly as an eager one', async () => {
  // Built eagerly, a schema that Ajv or fast-json-stringify refuses fails the build here rather
  // than a user's first request to that route (the server compiles each route's on first use).
  const { buildApp } = await import('../src/http/app.js');
  const eager = await buildApp(t.services, { logger: false, eagerSchemas: true });
  try {
    const routes = eager
      .printRoutes({ commonPrefix: false })
      .split('\n')
      .filter((l) => l.includes('v2/')).length;
    assert.ok(routes >= 20, `only ${routes} routes were built`);
    const { key } = await t.newAccount();
    const bad = {
      method: 'POST' as const,
      url: '/v2/pods',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ imageName: 12, gpuCount: 'x', nope: true }),
    };
    const [a, b] = [await t.app.inject(bad), await eager.inject(bad)];
    assert.ok(a.statusCode >= 400 && a.statusCode < 500, `bad input is a client error: ${a.statusCode}`);
    assert.equal(a.statusCode, b.statusCode);
    const strip = (text: string) => text.replace(/"(instance|requestId)":"[^"]*"/g, '');
    assert.equal(strip(a.body), strip(b.body));
    for (const name of ['nope', 'gpuCount', 'imageName'])
      assert.ok(a.body.includes(name), `the answer names ${name}: ${a.body}`);
    // and a response serialized on first use is the one an eager serializer writes
    const [x, y] = [
      await t.app.inject({ method: 'GET', url: '/v2/pods', headers: { authorization: `Bearer ${key}` } }),
      await eager.inject({ method: 'GET', url: '/v2/pods', headers: { authorization: `Bearer ${key}` } }),
    ];
    assert.equal(x.statusCode, 200);
    assert.equal(x.body, y.body);
  } finally {
    await eager.close();
  }
});

test('the log routes are described as event streams with the source, tail, since and Last-Event-ID parameters', async () => {
  const doc = json(await t.request(null, 'GET', '/v2/openapi.json'));
  for (const path of ['/v2/pods/{id}/logs', '/v2/serverless/{id}/workers/{workerId}/logs']) {
    const get = doc.paths[path]?.get;
    assert.ok(get, `${path} is missing from the OpenAPI document`);
    assert.ok(get.responses['200'].content['text/event-stream'], `${path} answers text/event-stream`);
    const params = Object.fromEntries(
      get.parameters.map((p: { name: string; in: string; schema: Record<string, unknown> }) => [
        `${p.in}:${p.name}`,
        p.schema,
      ]),
    );
    assert.deepEqual(params['query:source'].enum, ['container', 'system']);
    assert.equal(params['query:tail'].minimum, 0);
    assert.equal(params['query:tail'].maximum, 5000);
    assert.ok(params['query:since']);
    assert.ok(params['header:last-event-id']);
  }
  assert.equal(doc.paths['/v2/pods/{id}/logs'].get.operationId, 'getPodLogs');
  assert.equal(doc.paths['/v2/serverless/{id}/workers/{workerId}/logs'].get.operationId, 'getWorkerLogs');
});
