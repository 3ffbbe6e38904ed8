// Shutting the server down: connections that never carried a request do not hold it up, and a
// request under way finishes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
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
  const inTime = await Promise.race([
    closing.then(() => true),
    new Promise<boolean>((r) => setTimeout(() => r(false), PROMPT_MS).unref()),
  ]);
  // (when it fails: the client leaves, so the close ends and the test does not hang)
  if (!inTime) for (const socket of silent) socket.destroy();
  await closing;
  assert.ok(inTime, `the close did not end within ${PROMPT_MS} ms`);
  await Promise.all(ended);
});

test('a start that fails after the server listened (its configured SSH port is taken) stops what it started: the HTTP port is free again', async () => {
  const { createServer } = await import('node:net');
  const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { pino } = await import('pino');
  const { loadConfig } = await import('../src/config.js');
  const { startServer } = await import('../src/main.js');
  const { freePort } = await import('../src/runtime/runtime-contract.js');
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const sshPort = (holder.address() as { port: number }).port;
  const httpPort = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-failed-start-'));
  try {
    writeFileSync(
      join(dataDir, 'config.json'),
      JSON.stringify({ server: { port: httpPort, host: '127.0.0.1' }, ssh: { port: sshPort } }),
    );
    const config = loadConfig({
      env: { GANTRY_DATA_DIR: dataDir, GANTRY_CONFIG: join(dataDir, 'config.json'), GANTRY_LOG_LEVEL: 'silent' },
    });
    await assert.rejects(
      startServer(config, { logger: pino({ level: 'silent' }), print: () => {} }),
      /EADDRINUSE|in use|taken/i,
    );
    // nothing answers on the HTTP port any more: a new listener takes it
    const again = createServer();
    await new Promise<void>((resolve, reject) => {
      again.once('error', reject);
      again.listen(httpPort, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => again.close(resolve));
  } finally {
    await new Promise((resolve) => holder.close(resolve));
    rmSync(dataDir, { recursive: true, force: true });
  }
});
