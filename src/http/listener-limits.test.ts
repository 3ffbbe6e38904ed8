import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { applyRequestTimeouts, checkingIntervalMs } from './listener-limits.js';

test('slow clients are looked for every quarter of the shortest timeout, between 10 ms and 1 s', () => {
  assert.equal(checkingIntervalMs({ requestTimeoutMs: 60_000, headersTimeoutMs: 10_000 }), 1000);
  assert.equal(checkingIntervalMs({ requestTimeoutMs: 400, headersTimeoutMs: 300 }), 75);
  assert.equal(checkingIntervalMs({ requestTimeoutMs: 20, headersTimeoutMs: 0 }), 10);
  assert.equal(checkingIntervalMs({ requestTimeoutMs: 0, headersTimeoutMs: 0 }), 30_000);
});

test('a listener gets the request timeouts, headers never due after the whole request', () => {
  const server = createServer();
  applyRequestTimeouts(server, { requestTimeoutMs: 5000, headersTimeoutMs: 8000, keepAliveTimeoutMs: 72_000, maxConnectionsPerClient: 1 });
  assert.deepEqual([server.requestTimeout, server.headersTimeout, server.keepAliveTimeout], [5000, 5000, 72_000]);
  assert.equal((server as unknown as { connectionsCheckingInterval: number }).connectionsCheckingInterval, 1000);
});
