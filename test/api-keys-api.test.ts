// API keys over REST (Gantry extension, docs/api-keys.md): an account lists, creates and revokes
// its own read and write keys. The secret is answered once and stored as a hash; a revoked key is
// refused from the next request; names are checked; `quotas.apiKeys` caps the live keys. Over
// SQLite and PostgreSQL.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { FakeClock } from '../src/domain/clock.js';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';

const CAP = 5;

interface Listed {
  id: string;
  name: string;
  scope: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  current: boolean;
}

for (const dialect of dialects()) {
  describe(`API keys over REST (${dialect.name})`, { skip: dialect.skip }, () => {
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

    const create = (key: string, body: unknown) => t.request(key, 'POST', '/v2/account/api-keys', body);
    const list = async (key: string): Promise<Listed[]> => {
      const res = await t.request(key, 'GET', '/v2/account/api-keys');
      assert.equal(res.statusCode, 200, res.body);
      return json(res).apiKeys as Listed[];
    };
    const whoAmI = (key: string) => t.request(key, 'GET', '/v2/account');
    const storedRow = (id: string) =>
      t.services.db.kysely.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();

    test('a write key creates a key whose secret is answered once, works at once, and is listed without it', async () => {
      const a = await t.newAccount();
      const res = await create(a.key, { name: 'ci deploys', scope: 'write' });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.headers['cache-control'], 'no-store');
      const made = json(res);
      assert.match(made.key, /^gty_[A-Za-z0-9]{40}$/);
      assert.equal(made.name, 'ci deploys');
      assert.equal(made.scope, 'write');
      assert.equal(made.prefix, made.key.slice(0, 8));
      assert.equal(made.current, false);
      assert.ok(!Number.isNaN(Date.parse(made.createdAt)));

      const me = await whoAmI(made.key);
      assert.equal(me.statusCode, 200, me.body);
      assert.deepEqual(json(me).key, { id: made.id, scope: 'write' });
      assert.equal(json(me).id, a.accountId);

      const listRes = await t.request(a.key, 'GET', '/v2/account/api-keys');
      assert.ok(!listRes.body.includes(made.key), 'the list never shows a secret');
      const listed = json(listRes).apiKeys as Listed[];
      assert.equal(listed.length, 3, 'the write key, the read key and the new one');
      const entry = listed.find((k) => k.id === made.id)!;
      const { key: _secret, lastUsedAt: _never, ...withoutKey } = made;
      assert.equal(made.lastUsedAt, null, 'a new key was never used');
      const { lastUsedAt: usedAt, ...listedRest } = entry;
      assert.deepEqual(listedRest, withoutKey);
      assert.ok(usedAt !== null, 'used by the call above');
      assert.ok(!('key' in entry));
      assert.deepEqual(
        listed.filter((k) => k.current).map((k) => k.scope),
        ['write'],
        'exactly the calling key is marked current',
      );
      // and from the new key's side, it is the current one
      assert.deepEqual(
        (await list(made.key)).filter((k) => k.current).map((k) => k.id),
        [made.id],
      );

      const row = await storedRow(made.id);
      assert.equal(row?.hash, createHash('sha256').update(made.key).digest('hex'), 'stored as its SHA-256');
      assert.ok(!Object.values(row ?? {}).includes(made.key), 'no column holds the key itself');
    });

    test("a key's last use is listed (written in batches, never per request), never moves back, and a key never used is listed as never used", async () => {
      const a = await t.newAccount();
      const idle = json(await create(a.key, { name: 'idle' }));
      const busy = json(await create(a.key, { name: 'busy' }));
      const clock = t.clock as FakeClock;
      clock.advance(60_000);
      const at = clock.now();
      assert.equal((await whoAmI(busy.key)).statusCode, 200);
      assert.equal((await storedRow(busy.id))?.last_used_at, null, 'a request writes nothing by itself');
      const listed = await list(a.key);
      const byId = (id: string) => listed.find((k) => k.id === id)!;
      assert.equal(byId(idle.id).lastUsedAt, null);
      const usedAt = Date.parse(byId(busy.id).lastUsedAt!);
      assert.equal(usedAt, at, 'the time of its use');
      assert.notEqual(listed.find((k) => k.current)!.lastUsedAt, null, 'the listing key is used by the listing');
      assert.equal(Number((await storedRow(busy.id))?.last_used_at), usedAt, 'written to the store');
      // a listing writes its own account's uses, never another account's
      const other = await t.newAccount();
      assert.equal((await whoAmI(other.key)).statusCode, 200);
      await list(a.key);
      const otherKeyId = json(await whoAmI(other.key)).key.id as string;
      assert.equal((await storedRow(otherKeyId))?.last_used_at, null, "another account's use waits for its flush");
      assert.notEqual((await list(other.key)).find((k) => k.current)!.lastUsedAt, null);
      // an older use written later (another replica's batch) does not move it back
      await t.services.accounts.store.touchKeys([[busy.id, usedAt - 60_000]]);
      assert.equal((await list(a.key)).find((k) => k.id === busy.id)!.lastUsedAt, new Date(usedAt).toISOString());
    });

    test('a key made without a scope is a read key: it reads, and its writes are refused with 403', async () => {
      const a = await t.newAccount();
      const made = json(await create(a.key, { name: 'dashboard' }));
      assert.equal(made.scope, 'read');
      assert.equal((await whoAmI(made.key)).statusCode, 200);
      const refused = await create(made.key, { name: 'escalate', scope: 'write' });
      assert.equal(refused.statusCode, 403, refused.body);
    });

    test('a key made over REST is never rate-limit exempt, even by an exempt caller, and asking for it is refused with 422', async () => {
      const a = await t.newAccount();
      const exempt = await t.services.accounts.createKey(a.accountId, { scope: 'write', rateLimitExempt: true });
      const asked = await create(exempt.key, { name: 'exempt please', scope: 'write', rateLimitExempt: true });
      assert.equal(asked.statusCode, 422, asked.body);
      assert.match(String(asked.headers['content-type']), /application\/problem\+json/);
      assert.match(json(asked).detail, /rateLimitExempt/);
      const made = json(await create(exempt.key, { name: 'plain', scope: 'write' }));
      assert.equal((await storedRow(made.id))?.rate_limit_exempt, 0);
      assert.equal((await t.services.accounts.authenticate(made.key))?.rateLimitExempt, false);
    });

    test('a revoked key answers 401 from the next request on, even one this replica had just seen, and is no longer listed', async () => {
      const a = await t.newAccount();
      const made = json(await create(a.key, { name: 'short-lived', scope: 'write' }));
      // seen a moment ago: its principal is in this replica's key cache
      assert.equal((await whoAmI(made.key)).statusCode, 200);
      const revoked = await t.request(a.key, 'DELETE', `/v2/account/api-keys/${made.id}`);
      assert.equal(revoked.statusCode, 204, revoked.body);
      const after = await whoAmI(made.key);
      assert.equal(after.statusCode, 401, after.body);
      assert.match(String(after.headers['content-type']), /application\/problem\+json/);
      assert.ok(!(await list(a.key)).some((k) => k.id === made.id));
      // once revoked, it is gone: a second revoke is the same 404 as an unknown id
      const again = await t.request(a.key, 'DELETE', `/v2/account/api-keys/${made.id}`);
      assert.equal(again.statusCode, 404, again.body);
      assert.equal(json(again).code, 'NOT_FOUND');
      assert.notEqual((await storedRow(made.id))?.revoked_at, null, 'the row is kept, marked revoked');
    });

    test('a key may revoke itself: the answer is 204 and its next request is 401', async () => {
      const a = await t.newAccount();
      const made = json(await create(a.key, { name: 'self-destruct', scope: 'write' }));
      const own = (await list(made.key)).find((k) => k.current)!;
      assert.equal(own.id, made.id);
      const res = await t.request(made.key, 'DELETE', `/v2/account/api-keys/${made.id}`);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal((await whoAmI(made.key)).statusCode, 401);
      // the account's other keys are untouched
      assert.equal((await whoAmI(a.key)).statusCode, 200);
    });

    test('names of 1 to 100 characters are accepted; empty, blank, longer or control-character names are refused at the name field', async () => {
      const a = await t.newAccount();
      for (const name of ['x', 'é'.repeat(100), 'CI key — prod 🚀', 'with  inner  spaces']) {
        const res = await create(a.key, { name });
        assert.equal(res.statusCode, 201, `${JSON.stringify(name)}: ${res.body}`);
        assert.equal(json(res).name, name);
        const revoked = await t.request(a.key, 'DELETE', `/v2/account/api-keys/${json(res).id as string}`);
        assert.equal(revoked.statusCode, 204);
      }
      const before = (await list(a.key)).length;
      const odd: unknown[] = [
        '',
        '   ',
        'x'.repeat(101),
        '🚀'.repeat(101),
        'line\nbreak',
        'tab\there',
        'esc\u001b[31mred',
        'nul\u0000',
        'c1\u0085',
        'bidi\u202Eevil',
        'zero\u200Bwidth',
        'sep\u2028line',
        5,
        null,
        ['a'],
      ];
      for (const name of odd) {
        const res = await create(a.key, { name });
        assert.equal(res.statusCode, 422, `${JSON.stringify(name)}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /application\/problem\+json/);
        const problem = json(res);
        assert.equal(problem.code, 'VALIDATION_FAILED');
        assert.ok(
          (problem.errors as string[]).every((e) => e.startsWith('name')),
          `${JSON.stringify(name)}: ${res.body}`,
        );
      }
      const missing = await create(a.key, { scope: 'read' });
      assert.equal(missing.statusCode, 422, missing.body);
      assert.equal((await list(a.key)).length, before, 'no refused name made a key');
    });

    test('an account holding quotas.apiKeys live keys is refused the next one naming the quota, and a revoke frees a slot', async () => {
      const a = await t.newAccount(); // holds 2 keys already
      const ids: string[] = [];
      for (let i = 2; i < CAP; i++) {
        const res = await create(a.key, { name: `k${i}` });
        assert.equal(res.statusCode, 201, res.body);
        ids.push(json(res).id as string);
      }
      const over = await create(a.key, { name: 'one too many' });
      assert.equal(over.statusCode, 400, over.body);
      assert.equal(json(over).code, 'RESOURCE_QUOTA_EXCEEDED');
      assert.match(json(over).detail, new RegExp(`quotas\\.apiKeys = ${CAP}`));
      assert.equal((await list(a.key)).length, CAP);
      assert.equal((await t.request(a.key, 'DELETE', `/v2/account/api-keys/${ids[0]!}`)).statusCode, 204);
      assert.equal((await create(a.key, { name: 'fits again' })).statusCode, 201);
      assert.equal((await create(a.key, { name: 'over again' })).statusCode, 400);
      // another account is not held back by this one
      const b = await t.newAccount();
      assert.equal((await create(b.key, { name: 'b key' })).statusCode, 201);
    });

    test('creating and revoking in a loop keeps at most quotas.apiKeys revoked keys of the account in the store', async () => {
      const a = await t.newAccount();
      for (let i = 0; i < CAP * 3; i++) {
        const made = json(await create(a.key, { name: `churn ${i}` }));
        assert.equal((await t.request(a.key, 'DELETE', `/v2/account/api-keys/${made.id as string}`)).statusCode, 204);
      }
      const rows = await t.services.db.kysely
        .selectFrom('api_keys')
        .select(['id', 'revoked_at'])
        .where('account_id', '=', a.accountId)
        .execute();
      assert.equal(rows.filter((r) => r.revoked_at !== null).length, CAP);
      assert.equal(rows.filter((r) => r.revoked_at === null).length, 2);
    });
  });
}
