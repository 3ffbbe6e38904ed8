// A hostile tenant against the API key routes (GET/POST /v2/account/api-keys, DELETE
// /v2/account/api-keys/{keyId}): account B cannot see or revoke account A's keys (a revoke of one
// answers exactly the 404 of a missing id), a read key cannot create or revoke, a worker's key is
// out of reach of both, a new key's secret shows in its create answer only (never a list, an error
// or the server's log), the per-account cap holds under concurrent creates, and odd names are
// refused with nothing stored. Over SQLite and PostgreSQL.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { buildApp, loggerOptions } from '../src/http/app.js';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';

const CAP = 6;

type Tenant = { accountId: string; key: string; readKey: string };

for (const dialect of dialects()) {
  describe(`API keys against a hostile tenant (${dialect.name})`, { skip: dialect.skip }, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({
        dialect: dialect.name,
        file: {
          rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
          quotas: { apiKeys: CAP },
        },
      });
    });
    after(() => t?.close());

    const listIds = async (key: string): Promise<string[]> => {
      const res = await t.request(key, 'GET', '/v2/account/api-keys');
      assert.equal(res.statusCode, 200, res.body);
      return (json(res).apiKeys as Array<{ id: string }>).map((k) => k.id);
    };
    const create = async (tenant: Tenant, name: string, scope: 'read' | 'write' = 'read') => {
      const res = await t.request(tenant.key, 'POST', '/v2/account/api-keys', { name, scope });
      assert.equal(res.statusCode, 201, res.body);
      return json<{ id: string; key: string }>(res);
    };
    const works = async (key: string) => (await t.request(key, 'GET', '/v2/account')).statusCode === 200;
    const liveRows = async (accountId: string) =>
      Number(
        (
          await t.services.db.kysely
            .selectFrom('api_keys')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('account_id', '=', accountId)
            .where('revoked_at', 'is', null)
            .executeTakeFirstOrThrow()
        ).n,
      );

    test("account B's list shows only B's keys, never one of account A's", async () => {
      const a = await t.newAccount();
      const b = await t.newAccount();
      const secret = await create(a, 'a-private-name');
      const res = await t.request(b.key, 'GET', '/v2/account/api-keys');
      assert.equal(res.statusCode, 200);
      assert.ok(!res.body.includes(secret.id) && !res.body.includes('a-private-name'), res.body);
      assert.equal((json(res).apiKeys as unknown[]).length, 2, "B's own write and read keys");
      assert.ok((await listIds(a.key)).includes(secret.id));
    });

    test("account B's revoke of account A's key answers exactly the 404 of a missing id, and A's key keeps working", async () => {
      const a = await t.newAccount();
      const b = await t.newAccount();
      const target = await create(a, 'target', 'write');
      const theirs = await t.request(b.key, 'DELETE', `/v2/account/api-keys/${target.id}`);
      const missing = await t.request(b.key, 'DELETE', '/v2/account/api-keys/no-such-key-0000');
      assert.equal(theirs.statusCode, 404, theirs.body);
      assert.equal(missing.statusCode, 404, missing.body);
      const shape = (body: Record<string, unknown>, id: string) => ({
        ...body,
        detail: String(body.detail).replace(id, '<id>'),
      });
      assert.deepEqual(shape(json(theirs), target.id), shape(json(missing), 'no-such-key-0000'));
      assert.ok(!theirs.body.includes('target'), 'the 404 names nothing of the key');
      // A's own write and read keys too
      for (const id of await listIds(a.key)) {
        const res = await t.request(b.key, 'DELETE', `/v2/account/api-keys/${id}`);
        assert.equal(res.statusCode, 404, res.body);
      }
      assert.ok(await works(target.key));
      assert.ok(await works(a.key));
      assert.equal((await listIds(a.key)).length, 3);
    });

    test('a read key lists keys but its create and revoke are refused with 403, and nothing changes', async () => {
      const a = await t.newAccount();
      const before = await listIds(a.readKey);
      assert.equal(before.length, 2);
      const created = await t.request(a.readKey, 'POST', '/v2/account/api-keys', { name: 'sneaky', scope: 'read' });
      assert.equal(created.statusCode, 403, created.body);
      assert.match(String(created.headers['content-type']), /application\/problem\+json/);
      for (const id of before) {
        const res = await t.request(a.readKey, 'DELETE', `/v2/account/api-keys/${id}`);
        assert.equal(res.statusCode, 403, res.body);
      }
      assert.deepEqual(await listIds(a.key), before);
      assert.ok(await works(a.key));
    });

    test("a worker's key is neither listed nor revocable through the account's key routes, and cannot call them", async () => {
      const a = await t.newAccount();
      const worker = await t.services.accounts.createKey(a.accountId, {
        scope: 'worker',
        endpointId: 'ep-of-a',
        workerId: 'w-1',
      });
      assert.ok(!(await listIds(a.key)).includes(worker.record.id));
      const revoke = await t.request(a.key, 'DELETE', `/v2/account/api-keys/${worker.record.id}`);
      assert.equal(revoke.statusCode, 404, revoke.body);
      assert.notEqual(await t.services.accounts.authenticate(worker.key), null, 'the worker key still works');
      for (const [method, body] of [
        ['GET', undefined],
        ['POST', { name: 'from a worker' }],
      ] as const) {
        const res = await t.request(worker.key, method, '/v2/account/api-keys', body);
        assert.equal(res.statusCode, 403, res.body);
      }
      const self = await t.request(worker.key, 'DELETE', `/v2/account/api-keys/${worker.record.id}`);
      assert.equal(self.statusCode, 403, self.body);
    });

    test("a new key's secret appears in its create answer only: never in a list, an error or the server's log", async () => {
      const lines: string[] = [];
      const sink = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      });
      const logged = await buildApp(t.services, { logger: pino(loggerOptions('trace'), sink) });
      try {
        const a = await t.newAccount();
        const send = (key: string, method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
          logged.inject({
            method,
            url,
            headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
            ...(body ? { payload: JSON.stringify(body) } : {}),
          });
        const made = await send(a.key, 'POST', '/v2/account/api-keys', { name: 'logged', scope: 'write' });
        assert.equal(made.statusCode, 201, made.body);
        const { id, key } = json<{ id: string; key: string }>(made);
        const answers = [
          await send(a.key, 'GET', '/v2/account/api-keys'),
          await send(key, 'GET', '/v2/account/api-keys'),
          await send(key, 'GET', '/v2/account'),
          await send(key, 'POST', '/v2/account/api-keys', { name: 'bad\nname' }),
          await send(key, 'POST', '/v2/account/api-keys', { name: 'x', rateLimitExempt: true }),
          await send(key, 'DELETE', `/v2/account/api-keys/${id}`),
          await send(key, 'GET', '/v2/account/api-keys'),
        ];
        assert.deepEqual(
          answers.map((r) => r.statusCode),
          [200, 200, 200, 422, 422, 204, 401],
        );
        for (const res of answers) assert.ok(!res.body.includes(key), `an answer holds the secret: ${res.body}`);
        assert.ok(lines.length >= answers.length, 'the server logged the requests');
        const log = lines.join('');
        for (const secret of [key, a.key]) assert.ok(!log.includes(secret), 'the log holds a key');
        assert.ok(!log.includes(key.slice(4)), 'the log holds the body of a key');
      } finally {
        await logged.close();
      }
    });

    test('concurrent creates cannot take an account past quotas.apiKeys; every refused one is stored nowhere', async () => {
      const a = await t.newAccount();
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          t.request(a.key, 'POST', '/v2/account/api-keys', { name: `burst ${i}`, scope: 'read' }),
        ),
      );
      const kept = answers.filter((r) => r.statusCode === 201);
      const refused = answers.filter((r) => r.statusCode !== 201);
      assert.equal(kept.length, CAP - 2, 'the account held 2 keys: it gets exactly the rest of its cap');
      for (const r of refused) {
        assert.equal(r.statusCode, 400, r.body);
        assert.equal(json(r).code, 'RESOURCE_QUOTA_EXCEEDED');
        assert.ok(!('key' in json(r)));
      }
      assert.equal(await liveRows(a.accountId), CAP);
      assert.equal((await listIds(a.key)).length, CAP);
      // and B, beside it, still creates
      const b = await t.newAccount();
      await create(b, 'b still can');
    });

    test('oversize and odd names, and bodies asking for more power, are refused and store nothing', async () => {
      const a = await t.newAccount();
      const bodies: unknown[] = [
        { name: 'n'.repeat(100_000) },
        { name: '\u001b]0;owned\u0007' },
        { name: '\u202Egnp.exe' },
        { name: 'ok', scope: 'admin' },
        { name: 'ok', scope: 'worker' },
        { name: 'ok', rateLimitExempt: true },
        { name: 'ok', endpointId: 'ep' },
        { name: { toString: 'x' } },
        [],
        'plain text',
      ];
      for (const body of bodies) {
        const res = await t.request(a.key, 'POST', '/v2/account/api-keys', body);
        assert.ok([400, 413, 415, 422].includes(res.statusCode), `${JSON.stringify(body).slice(0, 60)}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /application\/problem\+json/);
      }
      const huge = await t.request(a.key, 'POST', '/v2/account/api-keys', { name: 'n'.repeat(2_000_000) });
      assert.equal(huge.statusCode, 413, huge.body);
      assert.equal(await liveRows(a.accountId), 2, 'nothing was stored');
      // ids that are not ids are refused before any lookup
      for (const id of ['..%2F..%2Fetc', 'bad.id', 'x'.repeat(300), '%00']) {
        const res = await t.request(a.key, 'DELETE', `/v2/account/api-keys/${id}`);
        assert.ok([400, 414].includes(res.statusCode), `${id}: ${res.statusCode} ${res.body}`);
      }
      assert.equal(await liveRows(a.accountId), 2);
    });
  });
}
