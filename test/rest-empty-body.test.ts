/**
 * An empty body sent as `Content-Type: application/json` is no body on every REST route that takes
 * none, whatever its method: SkyPilot's REST v2 client (pull request #10846, `sky/adaptors/runpod.py`)
 * sends that header on every call and python-requests adds `Content-Length: 0` to a DELETE; runpodctl
 * (2e2df89e) sends it on REST v1's start, stop and delete. Routes are read from the two OpenAPI
 * documents, so a route added later is covered. A route that takes a body still answers an empty
 * one 400, and a non-empty malformed body is 400 everywhere.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';

let t: TestApp;
let key: string;
before(async () => {
  t = await createTestApp();
  key = (await t.newAccount()).key;
});
after(() => t.close());

interface Operation {
  method: string;
  path: string;
  takesBody: boolean;
}

/** Every operation of a document, its path parameters filled with an id no resource has. */
async function operations(doc: string, prefix: string): Promise<Operation[]> {
  const res = await t.request(key, 'GET', doc);
  assert.equal(res.statusCode, 200, res.body);
  const paths = json<{ paths: Record<string, Record<string, { requestBody?: unknown }>> }>(res).paths;
  return Object.entries(paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path: `${path.startsWith(prefix) ? '' : prefix}${path.replace(/\{[^}]+\}/g, 'nosuchid0')}`,
        takesBody: op.requestBody !== undefined,
      })),
  );
}

const send = (op: Operation, payload: string, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: op.method as 'POST',
    url: op.path,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    payload,
  });

test('every route that takes no body answers an empty application/json body as no body, on every method', async () => {
  const ops = [...(await operations('/v2/openapi.json', '')), ...(await operations('/v1/openapi.json', '/v1'))];
  const bodiless = ops.filter((o) => !o.takesBody && o.method !== 'GET');
  assert.ok(bodiless.length >= 20, `only ${bodiless.length} routes take no body`);
  assert.ok(bodiless.some((o) => o.method === 'DELETE' && o.path === '/v2/pods/nosuchid0'));
  for (const op of bodiless)
    for (const length of [{ 'content-length': '0' }, { 'transfer-encoding': 'chunked' }] as Record<string, string>[]) {
      const res = await send(op, '', length);
      assert.notEqual(
        json(res).code,
        'MALFORMED_JSON',
        `${op.method} ${op.path} ${JSON.stringify(length)}: ${res.body}`,
      );
      assert.ok(res.statusCode < 500, `${op.method} ${op.path}: ${res.body}`);
    }
});

test('a route that takes a body answers an empty one 400 naming the route, and a malformed one 400', async () => {
  const create = { method: 'POST', path: '/v2/pods', takesBody: true };
  const empty = await send(create, '', { 'content-length': '0' });
  assert.equal(empty.statusCode, 400, empty.body);
  assert.equal(json(empty).code, 'MALFORMED_JSON');
  assert.match(json(empty).detail, /empty; POST \/v2\/pods takes a JSON body/);
  for (const op of [create, { method: 'DELETE', path: '/v2/pods/nosuchid0', takesBody: false }]) {
    const res = await send(op, '{"action": ');
    assert.equal(res.statusCode, 400, `${op.method} ${op.path}: ${res.body}`);
    assert.equal(json(res).code, 'MALFORMED_JSON');
  }
});
