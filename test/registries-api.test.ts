import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createTestApp, json, openTestDb, type TestApp } from './support/harness.js';
import { loadConfig } from '../src/config.js';
import { FakeClock } from '../src/domain/clock.js';
import { bootstrapAdmin, createServices } from '../src/main.js';
import { buildApp, loggerOptions } from '../src/http/app.js';

const USERNAME = 'robot$acme-pull-user';
const PASSWORD = 'pw-Zq8!never-show-me-4711';

let t: TestApp;
let a: { accountId: string; key: string; readKey: string };
let b: { accountId: string; key: string; readKey: string };
before(async () => {
  t = await createTestApp();
  a = await t.newAccount('reg-a');
  b = await t.newAccount('reg-b');
});
after(() => t.close());

const create = async (key: string, body: Record<string, unknown> = {}) => {
  const res = await t.request(key, 'POST', '/v2/registries', {
    name: 'ghcr',
    username: USERNAME,
    password: PASSWORD,
    ...body,
  });
  assert.equal(res.statusCode, 201, res.body);
  return json<{ id: string; name: string }>(res);
};

const assertProblem = (
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  code?: string,
) => {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  const body = json(res as never);
  if (code) assert.equal(body.code, code);
  return body as { detail: string; errors?: string[] };
};

const assertNoSecret = (text: string, where: string) => {
  assert.ok(!text.includes(PASSWORD), `${where} contains the password`);
  assert.ok(!text.includes(USERNAME), `${where} contains the username`);
};

test('a created credential answers 201 with only id and name; list and get show no secret either', async () => {
  const created = await t.request(a.key, 'POST', '/v2/registries', {
    name: 'ghcr',
    username: USERNAME,
    password: PASSWORD,
  });
  assert.equal(created.statusCode, 201);
  const registry = json(created);
  assert.deepEqual(Object.keys(registry).sort(), ['id', 'name']);
  assert.equal(registry.name, 'ghcr');
  const list = await t.request(a.readKey, 'GET', '/v2/registries');
  const one = await t.request(a.readKey, 'GET', `/v2/registries/${registry.id}`);
  assert.deepEqual(json(one), registry);
  assert.ok(json(list).registries.some((r: { id: string }) => r.id === registry.id));
  for (const [where, res] of [
    ['create', created],
    ['list', list],
    ['get', one],
  ] as const)
    assertNoSecret(res.body, where);
  const deleted = await t.request(a.key, 'DELETE', `/v2/registries/${registry.id}`);
  assert.equal(deleted.statusCode, 204);
  assert.equal(deleted.body, '');
});

test('the stored row holds only ciphertext, and credentials() opens it for the runtime', async () => {
  const registry = await create(a.key);
  const row = await t.services.db.kysely
    .selectFrom('registries')
    .selectAll()
    .where('id', '=', registry.id)
    .executeTakeFirstOrThrow();
  assertNoSecret(JSON.stringify(row), 'the registries row');
  assert.notEqual(row.username_enc, USERNAME);
  assert.deepEqual(await t.services.registries.credentials(a.accountId, registry.id), {
    username: USERNAME,
    password: PASSWORD,
  });
  await assert.rejects(t.services.registries.credentials(b.accountId, registry.id), { code: 'NOT_FOUND' });
  assert.deepEqual(await t.services.registries.get(a.accountId, registry.id), {
    id: registry.id,
    accountId: a.accountId,
    name: 'ghcr',
    createdAt: t.clock.now(),
  });
});

test('missing and unknown properties answer 422 with one entry each and never echo the password', async () => {
  const unknown = await t.request(a.key, 'POST', '/v2/registries', {
    name: 'x',
    username: USERNAME,
    password: PASSWORD,
    server: 'ghcr.io',
    email: 'a@b',
  });
  assert.deepEqual(assertProblem(unknown, 422, 'VALIDATION_FAILED').errors, [
    'server: unknown property',
    'email: unknown property',
  ]);
  assertNoSecret(unknown.body, 'the 422');
  const missing = assertProblem(
    await t.request(a.key, 'POST', '/v2/registries', { name: 'x' }),
    422,
    'VALIDATION_FAILED',
  );
  assert.equal(missing.errors?.length, 2);
  const empty = await t.request(a.key, 'POST', '/v2/registries', { name: 'x', username: USERNAME, password: '' });
  assert.equal(assertProblem(empty, 422).errors?.length, 1);
});

test('a credential a live pod or a template uses cannot be deleted (400 naming them)', async () => {
  const registry = await create(a.key);
  const tpl = json(
    await t.request(a.key, 'POST', '/v2/templates', {
      name: 'private',
      imageName: 'ghcr.io/acme/app:1',
      containerRegistryAuthId: registry.id,
    }),
  );
  await t.services.db.kysely
    .insertInto('pods')
    .values({
      id: `pod${registry.id}`,
      account_id: a.accountId,
      name: 'p',
      status: 'RUNNING',
      desired_status: 'RUNNING',
      image: 'x',
      disk: 20,
      cloud: 'SECURE',
      registry: registry.id,
      created_at: 1,
      updated_at: 1,
    } as never)
    .execute();
  const both = assertProblem(await t.request(a.key, 'DELETE', `/v2/registries/${registry.id}`), 400, 'REGISTRY_IN_USE');
  assert.match(both.detail, new RegExp(`pod "pod${registry.id}"`));
  assert.match(both.detail, new RegExp(`template "${tpl.id}"`));
  await t.services.db.kysely
    .updateTable('pods')
    .set({ status: 'TERMINATED' })
    .where('id', '=', `pod${registry.id}`)
    .execute();
  const templateOnly = assertProblem(
    await t.request(a.key, 'DELETE', `/v2/registries/${registry.id}`),
    400,
    'REGISTRY_IN_USE',
  );
  assert.ok(!templateOnly.detail.includes('pod "'));
  assert.equal(
    (await t.request(a.key, 'PATCH', `/v2/templates/${tpl.id}`, { containerRegistryAuthId: null })).statusCode,
    200,
  );
  assert.equal((await t.request(a.key, 'DELETE', `/v2/registries/${registry.id}`)).statusCode, 204);
  assertProblem(await t.request(a.key, 'GET', `/v2/registries/${registry.id}`), 404, 'NOT_FOUND');
});

test('another account’s credential is 404 on GET and DELETE, and never listed', async () => {
  const registry = await create(a.key, { name: 'a-private-registry' });
  for (const method of ['GET', 'DELETE'] as const) {
    const problem = assertProblem(await t.request(b.key, method, `/v2/registries/${registry.id}`), 404, 'NOT_FOUND');
    assert.ok(!problem.detail.includes('a-private-registry'));
  }
  assert.ok(!JSON.stringify(json(await t.request(b.key, 'GET', '/v2/registries'))).includes(registry.id));
  assert.deepEqual(json(await t.request(a.key, 'GET', `/v2/registries/${registry.id}`)), registry);
});

test('a read key may list credentials but not create or delete them (403)', async () => {
  const registry = await create(a.key);
  assert.equal((await t.request(a.readKey, 'GET', '/v2/registries')).statusCode, 200);
  assertProblem(
    await t.request(a.readKey, 'POST', '/v2/registries', { name: 'x', username: 'u', password: 'p' }),
    403,
    'FORBIDDEN',
  );
  assertProblem(await t.request(a.readKey, 'DELETE', `/v2/registries/${registry.id}`), 403, 'FORBIDDEN');
});

// The app as `gantry serve` builds it, but logging at trace level into memory.
for (const variant of ['the server logger options', 'a bare pino logger'] as const) {
  describe(`with ${variant} at trace level`, () => {
    test('the username and password never reach the logs', async () => {
      const lines: string[] = [];
      const sink = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      });
      const logger =
        variant === 'a bare pino logger' ? pino({ level: 'trace' }, sink) : pino(loggerOptions('trace'), sink);
      const testDb = await openTestDb('sqlite');
      const configPath = join(testDb.dataDir, 'config.json');
      writeFileSync(configPath, '{}');
      const config = loadConfig({
        env: { GANTRY_DATA_DIR: testDb.dataDir, GANTRY_CONFIG: configPath, GANTRY_LOG_LEVEL: 'trace' },
      });
      const services = await createServices(config, { db: testDb.db, clock: new FakeClock(), logger });
      const adminKey = (await bootstrapAdmin(services))!;
      const app = await buildApp(services, { logger });
      try {
        const send = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
          app.inject({
            method,
            url,
            headers: { authorization: `Bearer ${adminKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
            ...(body ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
          });
        const created = await send('POST', '/v2/registries', { name: 'ghcr', username: USERNAME, password: PASSWORD });
        assert.equal(created.statusCode, 201);
        const id = json(created).id as string;
        assert.equal((await send('GET', '/v2/registries')).statusCode, 200);
        assert.equal((await send('GET', `/v2/registries/${id}`)).statusCode, 200);
        assert.equal(
          (await send('POST', '/v2/registries', { name: 'bad', username: USERNAME, password: PASSWORD, extra: 1 }))
            .statusCode,
          422,
        );
        assert.equal(
          (await send('POST', '/v2/registries', `{"name":"broken","username":"${USERNAME}","password":"${PASSWORD}"`))
            .statusCode,
          400,
        );
        assert.equal(
          (await send('POST', '/v2/registries', `{"name":"broken","username":"${USERNAME}","password": ${PASSWORD}}`))
            .statusCode,
          400,
        );
        await services.registries.credentials((await services.accounts.accountByName('admin')).id, id);
        assert.equal((await send('DELETE', `/v2/registries/${id}`)).statusCode, 204);
        const output = lines.join('');
        assert.ok(output.includes('/v2/registries'), 'the requests were logged at all');
        assertNoSecret(output, 'the log output');
      } finally {
        await app.close();
        await services.podController.stop();
        await services.runtime.close();
        await testDb.cleanup();
      }
    });
  });
}
