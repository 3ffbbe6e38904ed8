// A caller who writes `X-Forwarded-For` (and `-Proto`, `-Host`) to pass for someone else: the
// headers are believed only from the peers `server.trustedProxies` lists, and then the client is
// the right-most address in the chain that is not a trusted proxy. From anyone else they change
// nothing: a spoofer cannot spread over many addresses to escape the per-address rate limit, nor
// spend another address's. The limit observed is the one on GraphQL callers without a key (30
// root fields a minute here). SQLite (the rule is in the transport, not the store).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from './support/harness.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';

const PROXY = '10.9.0.2';
const WINDOW = 30;

async function appWith(trustedProxies: string[]): Promise<TestApp> {
  return createTestApp({
    runtime: new FakeRuntime(),
    file: { server: { trustedProxies }, rateLimits: { minute: WINDOW, hour: 1_000, day: 10_000 } },
  });
}

const ask = (t: TestApp, remoteAddress: string, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: 'POST',
    url: '/graphql',
    remoteAddress,
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify({ query: '{ countryCodes }' }),
  });

/** Requests admitted before the first 429, asking with `headersOf(i)` from `peer`. */
async function admittedUntilLimited(
  t: TestApp,
  peer: string,
  headersOf: (i: number) => Record<string, string>,
): Promise<number> {
  for (let i = 0; i <= WINDOW + 5; i++) {
    const res = await ask(t, peer, headersOf(i));
    if (res.statusCode === 429) return i;
    assert.equal(res.statusCode, 200, res.body);
  }
  return Infinity;
}

describe('forwarded headers from a peer that is not a trusted proxy', () => {
  let t: TestApp;
  before(async () => (t = await appWith([])));
  after(() => t?.close());

  test('a spoofer writing a new X-Forwarded-For on each request is still one address, limited after the window', async () => {
    const admitted = await admittedUntilLimited(t, '198.51.100.20', (i) => ({
      'x-forwarded-for': `203.0.113.${i}`,
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'evil.example',
    }));
    assert.equal(admitted, WINDOW);
  });

  test("a spoofer naming another caller's address spends nothing of that caller's window", async () => {
    const victim = '198.51.100.21';
    assert.equal(await admittedUntilLimited(t, '198.51.100.22', () => ({ 'x-forwarded-for': victim })), WINDOW);
    assert.equal((await ask(t, victim)).statusCode, 200, "the victim's own window is whole");
  });

  test('a request from the address a proxy would have is not believed either when no proxy is configured', async () => {
    assert.equal(await admittedUntilLimited(t, PROXY, (i) => ({ 'x-forwarded-for': `192.0.2.${i}` })), WINDOW);
  });
});

describe('forwarded headers from a trusted proxy (server.trustedProxies)', () => {
  let t: TestApp;
  before(async () => (t = await appWith([`${PROXY}/32`, '10.8.0.0/16'])));
  after(() => t?.close());

  test('each client behind the proxy has a window of its own, keyed on its forwarded address', async () => {
    assert.equal(await admittedUntilLimited(t, PROXY, () => ({ 'x-forwarded-for': '203.0.113.50' })), WINDOW);
    assert.equal((await ask(t, PROXY, { 'x-forwarded-for': '203.0.113.51' })).statusCode, 200);
    // the proxy's own requests (no header) are its own address's
    assert.equal((await ask(t, PROXY)).statusCode, 200);
  });

  test('a client that writes its own X-Forwarded-For through the proxy is keyed on the address the proxy saw', async () => {
    // the proxy appends the address it saw: the right-most address that is not a trusted proxy counts
    const admitted = await admittedUntilLimited(t, PROXY, (i) => ({
      'x-forwarded-for': `192.0.2.${i}, 203.0.113.60`,
    }));
    assert.equal(admitted, WINDOW, 'the forged left-most addresses were ignored');
    // a chain through a second trusted proxy reaches the same client
    assert.equal(
      (await ask(t, PROXY, { 'x-forwarded-for': '203.0.113.60, 10.8.3.4' })).statusCode,
      429,
      'the client behind two trusted proxies is the same client',
    );
  });

  test('a peer outside the list is not believed although the list has proxies', async () => {
    assert.equal(await admittedUntilLimited(t, '10.7.0.1', (i) => ({ 'x-forwarded-for': `192.0.2.${i}` })), WINDOW);
  });
});
