/**
 * The pod HTTP proxy under a hostile tenant (docs/security.md, "The HTTP edge"): a client that
 * opens 10,000 idle connections to the proxy listener, and one that starts a large download and
 * never reads it, leave another tenant's traffic through the proxy answered as before. The
 * attacker is a process of its own (its own descriptors), on another loopback address.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { startListeningServer, type ListeningServer } from './support/harness.js';
import { eventually, freePortRange } from './support/eventually.js';

const UPSTREAM = 'test/proxy-upstream';
const fixture = join(import.meta.dirname, 'fixtures', 'proxy-upstream.mjs');
const CAP = 1024;

/** Opens `count` connections from 127.0.0.2 and holds them; prints how many are still open once all have settled. */
const HOARDER = `
const net = require('node:net');
const [port, count] = process.argv.slice(1).map(Number);
const open = new Set();
let settled = 0;
for (let i = 0; i < count; i++) {
  const s = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
  let done = false;
  const settle = () => {
    if (done) return;
    done = true;
    if (++settled === count) console.log(JSON.stringify({ open: open.size }));
  };
  s.on('connect', () => { open.add(s); setTimeout(settle, 2000); });
  s.on('close', () => { open.delete(s); settle(); });
  s.on('error', () => {});
  s.on('data', () => {});
}
process.stdin.on('data', (d) => {
  if (String(d).includes('stop')) process.exit(0);
  console.log(JSON.stringify({ open: open.size }));
});
`;

describe('the pod HTTP proxy under a hostile tenant', () => {
  let server: ListeningServer;
  let url: string;

  before(async () => {
    server = await startListeningServer({
      server: { maxConnectionsPerClient: CAP },
      images: {
        [UPSTREAM]: {
          command: [process.execPath, fixture],
          health: { type: 'http', port: 8000, path: '/health', intervalMs: 25, timeoutMs: 20_000 },
        },
      },
      pods: { reconcileIntervalMs: 100, stopGraceMs: 1000 },
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
    });
    const { accounts } = server.server.services;
    const account = await accounts.createAccount('victim');
    const key = (await accounts.createKey(account.id, { scope: 'write' })).key;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const created = await fetch(`${server.server.url}/v2/pods`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        name: 'victim',
        image: UPSTREAM,
        gpu: { id: 'NVIDIA GeForce RTX 4090' },
        ports: ['8000/http'],
      }),
    });
    const { id } = (await created.json()) as { id: string };
    url = await eventually('the pod to run', async () => {
      const pod = (await (await fetch(`${server.server.url}/v2/pods/${id}`, { headers })).json()) as {
        status: string;
        httpProxy: Array<{ url: string }>;
      };
      return pod.status === 'RUNNING' ? pod.httpProxy[0]!.url : null;
    });
  });
  after(() => server?.close());

  const timed = async (n: number): Promise<number> => {
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${url}health`);
      assert.equal(res.status, 200);
      await res.text();
    }
    return performance.now() - started;
  };

  test('a client holding 10,000 idle connections keeps at most its cap, and another client’s requests are answered all the while', async () => {
    await timed(20);
    const port = new URL(url).port;
    const hoarder = spawn(process.execPath, ['-e', HOARDER, port, '10000'], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      let out = '';
      hoarder.stdout.on('data', (d) => (out += String(d)));
      const settled = eventually(
        'the hoarder’s connections to settle',
        async () => (out.includes('}') ? out : null),
        120_000,
      );
      // while it connects and after: the victim is answered (each request bounded by the test's own timeout)
      assert.ok((await timed(50)) < 30_000);
      await settled;
      // counted where it matters, on the proxy's side (a client past the kernel's accept queue may
      // believe itself connected to nothing); refused connections close as the server gets to them
      const proxyListener = server.server.proxy!.server;
      const connections = () =>
        new Promise<number>((resolve, reject) =>
          proxyListener.getConnections((err, n) => (err ? reject(err) : resolve(n))),
        );
      const held = await eventually(
        'the proxy to hold no more than the cap of the hoarder’s connections',
        async () => {
          const n = await connections();
          return n <= CAP + 10 ? n : null;
        },
        60_000,
        200,
      );
      assert.ok(held >= CAP / 2, `the hoarder holds connections up to the cap (${held})`);
      assert.ok((await timed(50)) < 30_000);
    } finally {
      hoarder.stdin.end('stop');
      await new Promise((r) => hoarder.once('exit', r));
    }
  });

  test('a client that starts a 1 GiB download and never reads it stalls nobody else', async () => {
    const stalled = request(`${url}download?bytes=${1024 * 1024 * 1024}`);
    const answer = new Promise<import('node:http').IncomingMessage>((resolve) => stalled.on('response', resolve));
    stalled.on('error', () => undefined);
    stalled.end();
    const res = await answer;
    res.pause();
    assert.ok((await timed(50)) < 30_000);
    stalled.destroy();
  });
});
