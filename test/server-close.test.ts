// Shutting the server down: connections that never carried a request do not hold it up, and a
// request under way finishes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { startListeningServer } from './support/harness.js';

/** Far under Node's headers timeout (a minute), which is what a silent connection used to cost. */
const PROMPT_MS = 5_000;

const open = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });

test('a server closes at once though a client holds connections on which it sent nothing', async () => {
  const s = await startListeningServer();
  const port = Number(new URL(s.server.url).port);
  const silent = await Promise.all([open(port), open(port)]);
  const ended = silent.map((socket) => new Promise<void>((r) => socket.once('close', () => r())));
  const healthy = await fetch(`${s.server.url}/healthz`);
  assert.equal(healthy.status, 200);
  await healthy.text();
  const closing = s.close();
  const inTime = await Promise.race([closing.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), PROMPT_MS).unref())]);
  // (when it fails: the client leaves, so the close ends and the test does not hang)
  if (!inTime) for (const socket of silent) socket.destroy();
  await closing;
  assert.ok(inTime, `the close did not end within ${PROMPT_MS} ms`);
  await Promise.all(ended);
});
