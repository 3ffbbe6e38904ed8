// The server's start order (src/compose/server-steps.ts): stop is the exact reverse of start,
// nothing starts twice, a failed start stops what had started; and until the instances are
// adopted, what needs them answers 503 while liveness answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { startServer, type StartOptions } from '../src/main.js';
import { freePort } from '../src/runtime/runtime-contract.js';
import type { AttachedInstance } from '../src/runtime/runtime.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { testHost } from './support/docker.js';

/** A config over a fresh data dir (SQLite, the process runtime unless a runtime is given). */
function configIn(dataDir: string, file: Record<string, unknown>) {
  writeFileSync(join(dataDir, 'config.json'), JSON.stringify(file));
  return loadConfig({
    env: { GANTRY_DATA_DIR: dataDir, GANTRY_CONFIG: join(dataDir, 'config.json'), GANTRY_LOG_LEVEL: 'silent' },
  });
}

const quiet: StartOptions = { logger: pino({ level: 'silent' }), print: () => {} };

function recorder() {
  const started: string[] = [];
  const stopped: string[] = [];
  return {
    started,
    stopped,
    onStep: (event: 'start' | 'stop', step: string) => (event === 'start' ? started : stopped).push(step),
  };
}

test('a server stops its steps in exactly the reverse of the order it started them, each started once', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-start-order-'));
  try {
    const steps = recorder();
    const config = configIn(dataDir, { server: { port: 0, host: '127.0.0.1' }, ssh: { enabled: false } });
    const server = await startServer(config, { ...quiet, onStep: steps.onStep });
    assert.equal(
      new Set(steps.started).size,
      steps.started.length,
      `a step started twice: ${steps.started.join(', ')}`,
    );
    assert.ok(steps.started.indexOf('listeners') < steps.started.indexOf('pods'), 'the server listens before adoption');
    assert.ok(steps.started.indexOf('pods') < steps.started.indexOf('ready'), 'ready comes after adoption');
    assert.deepEqual(Object.keys(server.startup).slice(2), steps.started, 'each step is timed, in start order');
    assert.deepEqual(steps.stopped, []);
    await server.close();
    await server.close();
    assert.deepEqual(steps.stopped, [...steps.started].reverse());
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a start that fails at a step stops the steps started before it, in reverse, and leaves the port free', async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const sshPort = (holder.address() as { port: number }).port;
  const httpPort = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-start-order-'));
  try {
    const steps = recorder();
    const config = configIn(dataDir, { server: { port: httpPort, host: '127.0.0.1' }, ssh: { port: sshPort } });
    await assert.rejects(startServer(config, { ...quiet, onStep: steps.onStep }), /EADDRINUSE|in use|taken/i);
    assert.equal(steps.started.at(-1), 'ssh');
    assert.deepEqual(steps.stopped, steps.started.slice(0, -1).reverse());
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

/** A runtime whose `attach()` answers only when the test lets it: the start waits in adoption. */
class HeldAttach extends FakeRuntime {
  release!: () => void;
  readonly entered: Promise<void>;
  #entered!: () => void;
  constructor() {
    super();
    this.entered = new Promise((resolve) => (this.#entered = resolve));
  }
  override async attach(): Promise<AttachedInstance[]> {
    this.#entered();
    await new Promise<void>((resolve) => (this.release = resolve));
    return super.attach();
  }
}

test('until the instances are adopted the API answers 503 problem+json with Retry-After, while /healthz answers 200', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-start-order-'));
  const runtime = new HeldAttach();
  try {
    const port = await freePort();
    const config = configIn(dataDir, { server: { port, host: '127.0.0.1' }, ssh: { enabled: false } });
    const starting = startServer(config, { ...quiet, runtime, hosts: [testHost()] });
    await runtime.entered;
    const base = `http://127.0.0.1:${port}`;
    const health = await fetch(`${base}/healthz`);
    assert.equal(health.status, 200);
    await health.text();
    for (const path of ['/readyz', '/v2/pods', '/v2/serverless']) {
      const res = await fetch(`${base}${path}`);
      assert.equal(res.status, 503, path);
      assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8', path);
      assert.equal(res.headers.get('retry-after'), '1', path);
      const problem = (await res.json()) as { code?: string; detail: string };
      assert.match(problem.detail, /starting \(step: attach\)/, path);
    }
    runtime.release();
    const server = await starting;
    try {
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ready' });
      const pods = await fetch(`${base}/v2/pods`);
      assert.equal(pods.status, 401, 'once ready the request reaches the auth check');
      await pods.text();
    } finally {
      await server.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
