import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from '../../../test/support/harness.js';

let t: TestApp;
before(async () => {
  t = await createTestApp({ file: { rateLimits: { minute: 5, hour: 100, day: 1000 } } });
});
after(() => t.close());

test('a request without a key answers 401 problem+json', async () => {
  const res = await t.request(null, 'GET', '/v2/account/ssh-keys');
  assert.equal(res.statusCode, 401);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  const body = json(res);
  assert.equal(body.status, 401);
  assert.equal(body.title, 'Unauthorized');
  assert.ok(body.detail.length > 0);
});

test('an unknown key and a revoked key both answer 401', async () => {
  assert.equal((await t.request('gty_not-a-real-key-at-all', 'GET', '/v2/account/ssh-keys')).statusCode, 401);
  const acct = await t.newAccount();
  const keys = await t.services.accounts.store.listKeys(acct.accountId);
  await t.services.accounts.revokeKey(keys[0]!.id);
  assert.equal((await t.request(acct.key, 'GET', '/v2/account/ssh-keys')).statusCode, 401);
});

test('the raw key without Bearer is accepted', async () => {
  const res = await t.request(null, 'GET', '/v2/account/ssh-keys', undefined, { authorization: t.adminKey });
  assert.equal(res.statusCode, 200);
});

test('a read-scope key cannot write: 403', async () => {
  const acct = await t.newAccount();
  const res = await t.request(acct.readKey, 'PUT', '/v2/account/ssh-keys', []);
  assert.equal(res.statusCode, 403);
  assert.equal(json(res).title, 'Forbidden');
  assert.equal((await t.request(acct.readKey, 'GET', '/v2/account/ssh-keys')).statusCode, 200);
});

test('authenticated responses carry RateLimit headers and the quota is enforced with 429 and Retry-After', async () => {
  const acct = await t.newAccount();
  let last;
  for (let i = 0; i < 5; i++) {
    last = await t.request(acct.key, 'GET', '/v2/account/ssh-keys');
    assert.equal(last.statusCode, 200);
  }
  assert.ok(last);
  assert.match(String(last.headers['ratelimit']), /^"minute";r=0;t=\d+, "hour";r=95;t=\d+, "day";r=995;t=\d+$/);
  assert.equal(last.headers['ratelimit-policy'], '"minute";q=5;w=60, "hour";q=100;w=3600, "day";q=1000;w=86400');
  const refused = await t.request(acct.key, 'GET', '/v2/account/ssh-keys');
  assert.equal(refused.statusCode, 429);
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  assert.match(json(refused).detail, /minute/);
});

test('exempt keys get no rate-limit headers', async () => {
  const account = await t.services.accounts.createAccount('exempt-co');
  const { key } = await t.services.accounts.createKey(account.id, { scope: 'write', rateLimitExempt: true });
  for (let i = 0; i < 7; i++) {
    const res = await t.request(key, 'GET', '/v2/account/ssh-keys');
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['ratelimit'], undefined);
  }
});

test('unknown routes, malformed JSON and schema failures are problem+json with the right status', async () => {
  const unknown = await t.request(t.adminKey, 'GET', '/v2/nope');
  assert.equal(unknown.statusCode, 404);
  assert.match(String(unknown.headers['content-type']), /problem\+json/);
  const acct = await t.newAccount();
  const malformed = await t.request(acct.key, 'PUT', '/v2/account/ssh-keys', '{"oops', {
    'content-type': 'application/json',
  });
  assert.equal(malformed.statusCode, 400);
  const invalid = await t.request(acct.key, 'PUT', '/v2/account/ssh-keys', { keys: [1, 'x'] });
  assert.equal(invalid.statusCode, 422);
  // one entry per bad key: 1 is not a string, 'x' is not an authorized_keys line
  assert.equal(json(invalid).errors.length, 2);
});

test('ssh keys are validated as authorized_keys lines and replaced whole, as { keys } in and out', async () => {
  const acct = await t.newAccount();
  const blob = Buffer.concat([
    Buffer.from([0, 0, 0, 11]),
    Buffer.from('ssh-ed25519'),
    Buffer.from([0, 0, 0, 32]),
    Buffer.alloc(32, 7),
  ]).toString('base64');
  const good = `ssh-ed25519 ${blob} me@laptop`;
  const put = await t.request(acct.key, 'PUT', '/v2/account/ssh-keys', { keys: [good] });
  assert.equal(put.statusCode, 200);
  assert.deepEqual(json(put), { keys: [good] });
  const bad = await t.request(acct.key, 'PUT', '/v2/account/ssh-keys', { keys: [good, 'ssh-rsa notbase64!!'] });
  assert.equal(bad.statusCode, 422);
  assert.match(json(bad).detail, /keys\/1/);
  const extra = await t.request(acct.key, 'PUT', '/v2/account/ssh-keys', { keys: [], other: 1 });
  assert.equal(extra.statusCode, 422);
  assert.deepEqual(json(await t.request(acct.key, 'GET', '/v2/account/ssh-keys')), { keys: [good] });
  assert.deepEqual(json(await t.request(acct.key, 'PUT', '/v2/account/ssh-keys', { keys: [] })), { keys: [] });
});

test('a bare array of ssh keys (the older body) is still accepted as { keys }, and answered as { keys }', async () => {
  const acct = await t.newAccount();
  const blob = Buffer.concat([Buffer.from([0, 0, 0, 7]), Buffer.from('ssh-rsa'), Buffer.alloc(64, 3)]).toString(
    'base64',
  );
  const key = `ssh-rsa ${blob}`;
  const put = await t.request(acct.key, 'PUT', '/v2/account/ssh-keys', [key]);
  assert.equal(put.statusCode, 200);
  assert.deepEqual(json(put), { keys: [key] });
  assert.deepEqual(json(await t.request(acct.key, 'GET', '/v2/account/ssh-keys')), { keys: [key] });
});

test('healthz answers 200 without a key', async () => {
  const res = await t.request(null, 'GET', '/healthz');
  assert.equal(res.statusCode, 200);
});
