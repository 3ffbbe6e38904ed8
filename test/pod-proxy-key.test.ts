/**
 * The pod HTTP proxy with `proxy.requireKey` (docs/proxy.md, "Who may reach a port"): a pod's port
 * opens with an API key of its account, or with the cookie a pod answer's signed link sets; never
 * with another account's key, an altered or expired ticket, or another port's cookie. A real
 * server on the process runtime, its clock injected; real clients.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FakeClock } from '../src/domain/clock.js';
import { startListeningServer, type ListeningServer } from './support/harness.js';
import { eventually, freePortRange } from './support/eventually.js';
import { openWebSocket } from './support/websocket-client.js';

const UPSTREAM = 'test/proxy-upstream';
const fixture = join(import.meta.dirname, 'fixtures', 'proxy-upstream.mjs');

interface HttpPort {
  port: number;
  url: string;
  link?: string;
}

describe('the pod HTTP proxy when the account’s key is required', () => {
  let server: ListeningServer;
  let clock: FakeClock;
  let alice: { key: string; readKey: string };
  let bob: { key: string };
  let ports: HttpPort[];

  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.server.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };

  before(async () => {
    clock = new FakeClock(Date.parse('2026-11-28T12:00:00Z'));
    server = await startListeningServer(
      {
        images: {
          [UPSTREAM]: {
            command: [process.execPath, fixture],
            health: { type: 'http', port: 8000, path: '/health', intervalMs: 25, timeoutMs: 20_000 },
          },
        },
        pods: { reconcileIntervalMs: 100, stopGraceMs: 1000 },
        // host ports of this server's own: a pod's process listens on them, beside other tests' servers
        fleet: [
          {
            id: 'proxy-host',
            dataCenterId: 'US-TX-3',
            gpuTypeId: 'NVIDIA GeForce RTX 4090',
            gpuCount: 8,
            cudaVersion: '12.4',
            portRange: await freePortRange(20),
          },
        ],
        proxy: { requireKey: true },
      },
      { clock },
    );
    const { accounts } = server.server.services;
    const a = await accounts.createAccount('key-alice');
    alice = {
      key: (await accounts.createKey(a.id, { scope: 'write' })).key,
      readKey: (await accounts.createKey(a.id, { scope: 'read' })).key,
    };
    const b = await accounts.createAccount('key-bob');
    bob = { key: (await accounts.createKey(b.id, { scope: 'write' })).key };
    const created = await call(alice.key, 'POST', '/v2/pods', {
      name: 'guarded',
      image: UPSTREAM,
      gpu: { id: 'NVIDIA GeForce RTX 4090' },
      ports: ['8000/http', '8001/http'],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ports = await eventually('the pod to run', async () => {
      const got = await call(alice.key, 'GET', `/v2/pods/${created.body.id}`);
      return got.body.status === 'RUNNING' ? (got.body.httpProxy as HttpPort[]) : null;
    });
  });
  after(() => server?.close());

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
