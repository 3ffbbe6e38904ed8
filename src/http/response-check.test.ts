import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { Type } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { checkResponses, serializerCheck, type ResponseMismatch } from './response-check.js';
import { useRouteCompilers } from './lazy-schemas.js';
import { registerErrorHandling } from './plugins/errors.js';
import { errorResponses, Nullable } from './schemas.js';
import { ApiError } from '../domain/errors.js';
import { JOB_ANSWERS } from './routes/job-answers.js';

const Thing = Type.Object({
  id: Type.String(),
  size: Type.Integer({ minimum: 1 }),
  state: Type.Unsafe<string>({ type: 'string', enum: ['ON', 'OFF'] }),
  owner: Nullable(Type.String()),
});

async function app() {
  const mismatches: ResponseMismatch[] = [];
  const a = Fastify();
  const ajv = new Ajv({ strict: false });
  useRouteCompilers(a, {
    bodyAjv: ajv,
    paramAjv: ajv,
    eager: false,
    wrapSerializer: serializerCheck((m) => mismatches.push(m)),
  });
  registerErrorHandling(a);
  checkResponses(a, (m) => mismatches.push(m));
  const response = { 200: Thing, ...errorResponses };
  a.get('/good', { schema: { response } }, async () => ({ id: 'a', size: 2, state: 'ON', owner: null }));
  a.get('/missing', { schema: { response } }, async () => ({ id: 'a', size: 2, state: 'ON' }));
  a.get('/enum', { schema: { response } }, async () => ({ id: 'a', size: 2, state: 'MAYBE', owner: 'x' }));
  a.get('/raw', { schema: { response } }, async (_req, reply) =>
    reply.type('application/json').send('{"id":"a","size":0,"state":"ON","owner":null}'),
  );
  a.post('/created', { schema: { response } }, async (_req, reply) =>
    reply.code(201).send({ id: 'a', size: 2, state: 'ON', owner: null }),
  );
  a.get('/refused', { schema: { response } }, async () => {
    throw new ApiError('NOT_FOUND', 'no such thing');
  });
  a.get('/unstated', async () => ({ anything: true }));
  await a.ready();
  return { a, mismatches };
}

test('an answer inside its route schema is sent unchanged and reports nothing', async () => {
  const { a, mismatches } = await app();
  const res = await a.inject({ method: 'GET', url: '/good' });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { id: 'a', size: 2, state: 'ON', owner: null });
  const refused = await a.inject({ method: 'GET', url: '/refused' });
  assert.equal(refused.statusCode, 404);
  assert.equal((await a.inject({ method: 'GET', url: '/unstated' })).statusCode, 200);
  assert.deepEqual(mismatches, []);
  await a.close();
});

test('a route answering outside its response schema answers 500 naming each violation, and is reported', async () => {
  const { a, mismatches } = await app();
  const missing = await a.inject({ method: 'GET', url: '/missing' });
  assert.equal(missing.statusCode, 500);
  assert.match(String(missing.headers['content-type']), /application\/problem\+json/);
  assert.match(
    missing.json().detail,
    /The 200 answer of GET \/missing breaks the response schema .*"owner" is required/,
  );
  const badEnum = await a.inject({ method: 'GET', url: '/enum' });
  assert.equal(badEnum.statusCode, 500);
  assert.deepEqual(badEnum.json().errors, ['state: must be one of ON, OFF']);
  // a body the handler serialized itself is checked too
  const raw = await a.inject({ method: 'GET', url: '/raw' });
  assert.equal(raw.statusCode, 500);
  assert.match(raw.json().detail, /size: must be >= 1/);
  // a success status the route does not state
  const created = await a.inject({ method: 'POST', url: '/created' });
  assert.equal(created.statusCode, 500);
  assert.match(created.json().detail, /states no response schema for status 201/);
  assert.deepEqual(
    mismatches.map((m) => [m.route, m.status]),
    [
      ['GET /missing', 200],
      ['GET /enum', 200],
      ['GET /raw', 200],
      ['POST /created', 201],
    ],
  );
  await a.close();
});

test("a job API success is checked against the protocol's answer shape its route names, without a serializing schema", async () => {
  const mismatches: ResponseMismatch[] = [];
  const a = Fastify();
  registerErrorHandling(a);
  checkResponses(a, (m) => mismatches.push(m));
  const config = { jobApi: true, answers: JOB_ANSWERS.status };
  a.get('/v2/e/status/good', { config, schema: { response: errorResponses } }, async () => ({
    id: 'j1',
    status: 'COMPLETED',
    delayTime: 3,
    executionTime: 40,
    output: { any: ['shape'] },
    retries: 0,
  }));
  // a status outside the protocol's six, and a field the protocol does not have
  a.get('/v2/e/status/bad', { config, schema: { response: errorResponses } }, async () => ({
    id: 'j1',
    status: 'DONE',
    input: { leaked: true },
  }));
  // the worker protocol's and the OpenAI proxy's answers stay what the worker sent
  a.get('/v2/e/free', { config: { jobApi: true }, schema: { response: errorResponses } }, async () => ({ x: 1 }));
  await a.ready();
  const good = await a.inject({ method: 'GET', url: '/v2/e/status/good' });
  assert.equal(good.statusCode, 200);
  assert.equal((await a.inject({ method: 'GET', url: '/v2/e/free' })).statusCode, 200);
  assert.equal(mismatches.length, 0);
  const bad = await a.inject({ method: 'GET', url: '/v2/e/status/bad' });
  assert.equal(bad.statusCode, 500);
  assert.match(bad.json().detail, /status: must be (one of|equal to)/);
  assert.match(bad.json().detail, /input/);
  assert.deepEqual(
    mismatches.map((m) => [m.route, m.status]),
    [['GET /v2/e/status/bad', 200]],
  );
  await a.close();
});
