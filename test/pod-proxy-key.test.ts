/**
 * The pod HTTP proxy with `proxy.requireKey` (docs/proxy.md, "Who may reach a port"): a pod's port
 * opens with an API key of its account, or with the cookie a pod answer's signed link sets; never
 * with another account's key, an altered or expired ticket, or another port's cookie. A real
 * server on the process runtime, its clock injected; real clients.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../src/domain/clock.js';
import { startProxyFixture, type ProxiedPod, type ProxyFixture } from './support/proxy-fixture.js';
import { openWebSocket } from './support/websocket-client.js';

describe('the pod HTTP proxy when the account’s key is required', () => {
  let f: ProxyFixture;
  let clock: FakeClock;
  let alice: { key: string; readKey: string };
  let bob: { key: string };
  let ports: ProxiedPod['httpProxy'];

  before(async () => {
    clock = new FakeClock(Date.parse('2026-11-28T12:00:00Z'));
    f = await startProxyFixture({ proxy: { requireKey: true } }, { clock });
    const owner = await f.tenant('key-alice');
    const readKey = (await f.server.server.services.accounts.createKey(owner.accountId, { scope: 'read' })).key;
    alice = { key: owner.key, readKey };
    bob = await f.tenant('key-bob');
    ports = (await f.proxiedPod(owner, { name: 'guarded', ports: ['8000/http', '8001/http'] })).httpProxy;
  });
  after(() => f?.close());

  const web = () => ports.find((p) => p.port === 8000)!;

  test('without a key the port answers 401, with another account’s key 403, saying what opens it', async () => {
    const none = await fetch(`${web().url}echo`);
    assert.equal(none.status, 401);
    assert.match(((await none.json()) as { detail: string }).detail, /API key of its account/);
    const other = await fetch(`${web().url}echo`, { headers: { authorization: `Bearer ${bob.key}` } });
    assert.equal(other.status, 403);
    await other.text();
  });

  test('an API key of the pod’s account opens it, read keys too, and the key never reaches the pod', async () => {
    for (const key of [alice.key, alice.readKey]) {
      const res = await fetch(`${web().url}echo`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(res.status, 200);
      const seen = (await res.json()) as { headers: Record<string, string> };
      assert.equal(seen.headers.authorization, undefined);
    }
    const ws = await openWebSocket(`${web().url}ws`, { authorization: `Bearer ${alice.key}` });
    ws.send('ok?');
    assert.equal(await ws.next(), 'echo: ok?');
    ws.close();
    await assert.rejects(openWebSocket(`${web().url}ws`), /not upgraded: 401/);
  });

  test('a pod answer’s link sets a cookie for that port alone; the cookie opens it and never reaches the pod', async () => {
    assert.ok(web().link, JSON.stringify(ports));
    const followed = await fetch(web().link!, { redirect: 'manual' });
    assert.equal(followed.status, 303);
    assert.equal(followed.headers.get('location'), new URL(web().url).pathname);
    const setCookie = followed.headers.get('set-cookie') ?? '';
    assert.match(setCookie, /^gantry_proxy_session=[^;]+; Path=\/[^;]+\/; Max-Age=43200; HttpOnly; SameSite=Lax$/);
    const cookie = setCookie.split(';')[0]!;
    const res = await fetch(`${web().url}echo`, { headers: { cookie: `${cookie}; app=1` } });
    assert.equal(res.status, 200);
    const seen = (await res.json()) as { headers: Record<string, string> };
    assert.equal(seen.headers.cookie, 'app=1', 'the proxy’s cookie is taken out, the application’s kept');
    const otherPort = ports.find((p) => p.port === 8001)!;
    const elsewhere = await fetch(otherPort.url, { headers: { cookie } });
    assert.equal(elsewhere.status, 401, 'one port’s cookie opens no other');
    await elsewhere.text();
  });

  test('an altered ticket, another port’s ticket and an expired one are refused', async () => {
    const link = new URL(web().link!);
    const ticket = link.searchParams.get('gantry_proxy_ticket')!;
    const altered = ticket.slice(0, -1) + (ticket.endsWith('0') ? '1' : '0');
    const tries = [
      `${web().url}?gantry_proxy_ticket=${altered}`,
      `${ports.find((p) => p.port === 8001)!.url}?gantry_proxy_ticket=${ticket}`,
    ];
    for (const url of tries) {
      const res = await fetch(url, { redirect: 'manual' });
      assert.equal(res.status, 401, url);
      await res.text();
    }
    clock.advance(7 * 60_000);
    const late = await fetch(web().link!, { redirect: 'manual' });
    assert.equal(late.status, 401);
    assert.match(((await late.json()) as { detail: string }).detail, /expired/);
  });
});
