/**
 * The pod HTTP proxy (docs/proxy.md) on the process runtime: a real Gantry server and its proxy
 * listener, a real HTTP server in the pod (test/fixtures/proxy-upstream.mjs), driven by real
 * clients — fetch, a raw WebSocket, an event stream, a 100 MB upload and download.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import type { ListeningServer } from './support/harness.js';
import { eventually } from './support/eventually.js';
import { startProxyFixture, type ProxiedPod, type ProxyFixture } from './support/proxy-fixture.js';
import type { SshTenant } from './support/ssh-fixture.js';
import { openWebSocket } from './support/websocket-client.js';

const METRICS_TOKEN = 'pod-proxy-metrics-token-0123456789';

describe('the pod HTTP proxy on the process runtime', () => {
  let f: ProxyFixture;
  let server: ListeningServer;
  let alice: SshTenant;
  let bob: SshTenant;
  let proxyUrl: string;
  let pod: ProxiedPod;

  /** `gantry_proxy_bytes_total{direction}` now. */
  const proxyBytes = async (direction: 'in' | 'out'): Promise<number> => {
    const text = await (
      await fetch(`${server.server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    return Number(
      new RegExp(`^gantry_proxy_bytes_total\\{direction="${direction}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0,
    );
  };
  const call = (key: string, method: string, path: string, body?: unknown) => f.call(key, method, path, body);
  const runningPod = (owner: SshTenant, body: Record<string, unknown> = {}) => f.proxiedPod(owner, body);

  before(async () => {
    f = await startProxyFixture({ metrics: { token: METRICS_TOKEN, refreshMs: 0 } });
    server = f.server;
    assert.ok(server.server.proxy, 'the proxy listens');
    proxyUrl = server.server.proxy.url;
    alice = await f.tenant('proxy-alice');
    bob = await f.tenant('proxy-bob');
    pod = await runningPod(alice);
  });
  after(() => f?.close());

  test('a running pod lists one proxy URL per HTTP port, under the proxy listener, with an unguessable name', () => {
    assert.equal(pod.httpProxy.length, 1, JSON.stringify(pod.httpProxy));
    const [entry] = pod.httpProxy;
    assert.equal(entry!.port, 8000);
    const match = new RegExp(`^${proxyUrl}/${pod.id}-8000-([a-z2-7]{20})/$`).exec(entry!.url);
    assert.ok(match, entry!.url);
  });

  test('a request goes to the pod with its method, path and query, X-Forwarded headers, and without the caller’s Gantry key', async () => {
    const res = await fetch(`${pod.httpProxy[0]!.url}echo/a?b=1`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${alice.key}`, 'x-custom': 'kept', 'x-forwarded-for': '6.6.6.6' },
      body: 'hello',
    });
    assert.equal(res.status, 200);
    const seen = (await res.json()) as { method: string; url: string; headers: Record<string, string> };
    assert.equal(seen.method, 'PUT');
    assert.equal(seen.url, '/echo/a?b=1');
    assert.equal(seen.headers['x-custom'], 'kept');
    assert.equal(seen.headers.authorization, undefined, 'the Gantry key is not passed to the pod');
    assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1', 'a client cannot forge where it comes from');
    assert.equal(seen.headers['x-forwarded-proto'], 'http');
    assert.equal(seen.headers['x-forwarded-prefix'], `/${new URL(pod.httpProxy[0]!.url).pathname.split('/')[1]}`);
  });

  test('an Authorization that is not a Gantry key reaches the pod (the application’s own password)', async () => {
    const res = await fetch(`${pod.httpProxy[0]!.url}echo`, { headers: { authorization: 'Bearer app-token' } });
    const seen = (await res.json()) as { headers: Record<string, string> };
    assert.equal(seen.headers.authorization, 'Bearer app-token');
  });

  test('under a path prefix, a local redirect and a cookie’s path stay under the prefix; the bare name redirects to its slash', async () => {
    const base = pod.httpProxy[0]!.url;
    const prefix = new URL(base).pathname.replace(/\/$/, '');
    const redirected = await fetch(`${base}echo/redirect`, { redirect: 'manual' });
    assert.equal(redirected.status, 302);
    assert.equal(redirected.headers.get('location'), `${prefix}/echo/landed`);
    await redirected.text();
    assert.match(redirected.headers.get('set-cookie') ?? '', new RegExp(`Path=${prefix}/;`));
    const bare = await fetch(`${proxyUrl}${prefix}?x=1`, { redirect: 'manual' });
    assert.equal(bare.status, 308);
    assert.equal(bare.headers.get('location'), `${prefix}/?x=1`);
    await bare.text();
  });

  test('Server-Sent Events arrive as the pod sends them, before its answer ends', async () => {
    const res = await fetch(`${pod.httpProxy[0]!.url}events`);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.equal(new TextDecoder().decode(first.value), 'data: first\n\n');
    await (await fetch(`${pod.httpProxy[0]!.url}events/next`)).text();
    let rest = '';
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      rest += new TextDecoder().decode(chunk.value);
    }
    assert.equal(rest, 'data: second\n\n');
  });

  test('a WebSocket is joined to the pod: messages go both ways, under the pod’s own path', async () => {
    const ws = await openWebSocket(`${pod.httpProxy[0]!.url}ws?room=1`, { authorization: `Bearer ${alice.key}` });
    assert.equal(ws.headers['x-seen-path'], '/ws?room=1');
    const open = server.server.proxy!.proxy.openFor(pod.id);
    ws.send('hello');
    assert.equal(await ws.next(), 'echo: hello');
    ws.send('x'.repeat(1000));
    assert.equal(await ws.next(), `echo: ${'x'.repeat(1000)}`);
    ws.close();
    await ws.closed;
    await eventually('the proxy to let go of the WebSocket', async () =>
      server.server.proxy!.proxy.openFor(pod.id) < open ? true : null,
    );
  });

  test('100 MB go up and 100 MB come down through the proxy intact, and /metrics counts them each way', async () => {
    const size = 100 * 1024 * 1024;
    const [inBefore, outBefore] = [await proxyBytes('in'), await proxyBytes('out')];
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const sum = createHash('sha256');
    for (let i = 0; i < 100; i++) sum.update(chunk);
    const body = Readable.toWeb(Readable.from(Array.from({ length: 100 }, () => chunk)));
    const init = { method: 'POST', body, duplex: 'half' } as unknown as RequestInit;
    const upload = await fetch(`${pod.httpProxy[0]!.url}count`, init);
    assert.equal(upload.status, 200);
    assert.deepEqual(await upload.json(), { bytes: size, sha256: sum.digest('hex') });
    const download = await fetch(`${pod.httpProxy[0]!.url}download?bytes=${size}`);
    assert.equal(download.headers.get('content-length'), String(size));
    let received = 0;
    let intact = true;
    for await (const part of download.body as unknown as AsyncIterable<Uint8Array>) {
      for (let i = 0; i < part.length; i += 4096) if (part[i] !== ((received + i) % (64 * 1024)) % 251) intact = false;
      received += part.length;
    }
    assert.equal(received, size);
    assert.ok(intact, 'the bytes arrive as the pod sent them');
    // each way: the body, with at most the framing and heads of the two exchanges besides
    const counted = { in: (await proxyBytes('in')) - inBefore, out: (await proxyBytes('out')) - outBefore };
    for (const way of ['in', 'out'] as const)
      assert.ok(counted[way] >= size && counted[way] < size + 64 * 1024, `${way}: ${counted[way]}`);
  });

  test('a port that is not an HTTP port, a name with a wrong token and an unknown name: one 404 problem each, naming nothing of other pods', async () => {
    const url = new URL(pod.httpProxy[0]!.url);
    const label = url.pathname.split('/')[1]!;
    const token = label.split('-').at(-1)!;
    // a valid name of its TCP port (made as the server makes names; no answer shows it)
    const notHttp = await fetch(`${proxyUrl}/${server.server.services.podHttpTargets.label(pod.id, 9000)}/`);
    assert.equal(notHttp.status, 404);
    const wrongToken = await fetch(`${proxyUrl}/${pod.id}-8000-${'a'.repeat(20)}/`);
    const unknown = await fetch(`${proxyUrl}/nosuchpod-8000-${token}/`);
    const nothing = await fetch(`${proxyUrl}/`);
    for (const res of [wrongToken, unknown, nothing]) {
      assert.equal(res.status, 404);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      const problem = (await res.json()) as { detail: string };
      assert.ok(!problem.detail.includes(pod.id), problem.detail);
    }
    const problem = (await notHttp.json()) as { detail: string };
    assert.match(problem.detail, /Port 9000 .* is not exposed over HTTP/);
  });

  test('odd Host headers and a request with both Content-Length and Transfer-Encoding reach no pod', async () => {
    const label = new URL(pod.httpProxy[0]!.url).pathname.split('/')[1]!;
    const raw = (text: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(Number(new URL(proxyUrl).port), '127.0.0.1', () => socket.end(text));
        let answer = '';
        socket.on('data', (d) => (answer += String(d)));
        socket.on('close', () => resolve(answer));
        socket.on('error', () => resolve(answer));
      });
    const smuggled = await raw(
      `POST /${label}/count HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /${label}/echo HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    assert.match(smuggled, /^HTTP\/1\.1 400 /, smuggled);
    assert.doesNotMatch(smuggled, /"method"/, 'the smuggled request did not reach the pod');
    for (const host of ['', `${label}.evil.example`, `${'a'.repeat(300)}`, '[::1]:x']) {
      const answer = await raw(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      assert.match(answer, /^HTTP\/1\.1 (400|404) /, `${host}: ${answer}`);
    }
  });

  test('another account’s key does not matter: the URL is the capability, and bob cannot learn alice’s URL from the API', async () => {
    const seen = await call(bob.key, 'GET', `/v2/pods/${pod.id}`);
    assert.equal(seen.status, 404);
    const list = await call(bob.key, 'GET', '/v2/pods');
    assert.ok(!JSON.stringify(list.body).includes(pod.httpProxy[0]!.url));
  });

  test('a pod stopped mid-request ends the answer under way, and then answers 502 saying it is not running', async () => {
    const own = await runningPod(alice, { name: 'stopping' });
    const url = own.httpProxy[0]!.url;
    const cut = new Promise<string>((resolve) => {
      const req = request(`${url}hold`, (res) => {
        res.once('data', () => {
          void call(alice.key, 'POST', `/v2/pods/${own.id}/action`, { action: 'stop' });
        });
        res.on('error', () => resolve('cut'));
        res.on('aborted', () => resolve('cut'));
        res.on('end', () => resolve('ended'));
        res.resume();
      });
      req.on('error', () => resolve('cut'));
      req.end();
    });
    assert.equal(await cut, 'cut');
    await eventually(
      'the pod to stop',
      async () => (await call(alice.key, 'GET', `/v2/pods/${own.id}`)).body.status === 'EXITED',
    );
    const after = await fetch(url);
    assert.equal(after.status, 502);
    assert.match(((await after.json()) as { detail: string }).detail, /is EXITED: nothing answers/);
    assert.equal(after.headers.get('retry-after'), '5');
  });

  test('an answer Node would not pass on (a status outside 200-599, a bad header) is a 502, and the proxy goes on', async () => {
    for (const head of [
      'HTTP/1.1 099 Odd',
      'HTTP/1.1 600 Beyond',
      'HTTP/1.1 200 OK\r\nbad header: x',
      'HTTP/1.1 200 OK\r\nx-ok: \u0001',
    ]) {
      const res = await fetch(`${pod.httpProxy[0]!.url}raw?head=${encodeURIComponent(head)}`);
      assert.equal(res.status, 502, JSON.stringify(head));
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      await res.text();
    }
    const after = await fetch(`${pod.httpProxy[0]!.url}health`);
    assert.equal(after.status, 200);
    await after.text();
  });

  test('a pod port where nothing listens answers 502 at once, saying so', async () => {
    const own = await runningPod(alice, { name: 'deaf', ports: ['8000/http', '8001/http'] });
    const deaf = own.httpProxy.find((p: { port: number }) => p.port === 8001)!;
    const res = await fetch(deaf.url);
    assert.equal(res.status, 502);
    assert.match(((await res.json()) as { detail: string }).detail, /nothing listens on port 8001/);
  });
});
