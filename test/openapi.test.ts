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
  for (const path of ['/v2/pods', '/v2/pods/{id}', '/v2/pods/{id}/action', '/v2/templates', '/v2/templates/{id}', '/v2/network-volumes', '/v2/registries', '/v2/catalog/gpus', '/v2/account/ssh-keys']) {
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

test('internal routes (health, docs) do not appear in the document', async () => {
  const doc = json(await t.request(null, 'GET', '/v2/openapi.json'));
  assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/docs') || p === '/healthz'));
});
