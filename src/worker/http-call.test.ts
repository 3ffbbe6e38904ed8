import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { getEventListeners } from 'node:events';
import { httpCaller } from './http-call.js';

async function withServer(fn: (url: string) => Promise<void>): Promise<void> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/hang') return; // never answers: a long-poll
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.writeHead(req.url === '/missing' ? 404 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, body, auth: req.headers.authorization ?? null }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  try {
    await fn(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

test('a call sends method, headers and body and reads the status and JSON answer', () =>
  withServer(async (url) => {
    const http = httpCaller();
    const res = await http.call(`${url}/x`, { method: 'POST', headers: { authorization: 'k' }, body: '{"é":1}' });
    assert.equal(res.status, 200);
    assert.equal(res.ok, true);
    assert.deepEqual(await res.json(), { method: 'POST', body: '{"é":1}', auth: 'k' });
    const missing = await http.call(`${url}/missing`);
    assert.equal(missing.ok, false);
    assert.equal(missing.status, 404);
    http.close();
  }));

test('aborting a pending long-poll rejects it with an AbortError', () =>
  withServer(async (url) => {
    const http = httpCaller();
    const stop = new AbortController();
    const pending = http.call(`${url}/hang`, { signal: stop.signal });
    setImmediate(() => stop.abort());
    await assert.rejects(pending, { name: 'AbortError' });
    http.close();
  }));

test('calls sharing one long-lived signal leave no listener on it once answered', () =>
  withServer(async (url) => {
    const http = httpCaller();
    const stopping = new AbortController();
    for (let i = 0; i < 200; i++) await (await http.call(`${url}/x`, { signal: stopping.signal })).arrayBuffer();
    assert.equal(getEventListeners(stopping.signal, 'abort').length, 0);
    http.close();
  }));
