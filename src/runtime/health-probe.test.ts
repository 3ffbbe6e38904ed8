import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeTarget, probeOnce, waitUntilHealthy, type ProbeTarget } from './health-probe.js';
import { freePort } from './runtime-contract.js';

async function serve(status: number): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => res.writeHead(status).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}
const http = (port: number, path = '/health'): ProbeTarget => ({ type: 'http', host: '127.0.0.1', port, path });

test('an http probe passes on any answer below 500 and fails on a 5xx, naming the status', async () => {
  const ok = await serve(404);
  const broken = await serve(503);
  try {
    assert.equal(await probeOnce(http(ok.port), 1_000), null);
    assert.equal(await probeOnce(http(broken.port), 1_000), 'answered HTTP 503');
  } finally {
    ok.server.close();
    broken.server.close();
  }
});

test('a tcp probe passes once something accepts, and says why it failed when nothing does', async () => {
  const { server, port } = await serve(200);
  try {
    assert.equal(await probeOnce({ ...http(port), type: 'tcp' }, 1_000), null);
  } finally {
    server.close();
  }
  assert.match((await probeOnce({ ...http(await freePort()), type: 'tcp' }, 1_000)) ?? '', /ECONNREFUSED/);
});

test('waiting for health ends with the last error once the timeout passes, and at once when aborted', async () => {
  const target = http(await freePort());
  const t0 = performance.now();
  // a second of attempts: on a loaded machine one attempt at a refused port can take a while
  const result = await waitUntilHealthy(target, {
    intervalMs: 20,
    timeoutMs: 1_000,
    signal: new AbortController().signal,
  });
  assert.equal(result.ok, false);
  assert.ok(!result.ok && !result.aborted && /ECONNREFUSED/.test(result.lastError), JSON.stringify(result));
  assert.ok(performance.now() - t0 < 5_000);
  const abort = new AbortController();
  abort.abort();
  const aborted = await waitUntilHealthy(target, { intervalMs: 20, timeoutMs: 10_000, signal: abort.signal });
  assert.ok(!aborted.ok && aborted.aborted);
});

test('targets read as a URL or as tcp host:port', () => {
  assert.equal(describeTarget(http(31000, 'ping')), 'http://127.0.0.1:31000/ping');
  assert.equal(describeTarget({ ...http(31000), type: 'tcp' }), 'tcp 127.0.0.1:31000');
});
