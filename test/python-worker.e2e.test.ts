/**
 * The real Python worker SDK (runpod-python) against a real Gantry server: a plain handler, a
 * generator handler (streaming) and a raising handler (FAILED with the traceback in `error`),
 * started with `runpod.serverless.start({"handler": fn})` (test/fixtures/python-handler.py) and
 * the environment `workerEnvironment` hands workers, jobs driven over HTTP with fetch.
 *
 * Skipped unless GANTRY_PYTHON_WORKER_SDK names a checkout of runpod-python whose dependencies the
 * chosen Python can import. To set one up (outside this repository; never commit it):
 *
 *   1. Fetch github:runpod/runpod-python with the search tool's `fetch` and clone the mirror into
 *      a scratch folder, e.g. `git clone /work/.mirror/runpod+runpod-python/repo /tmp/pyw/src/runpod-python`.
 *      Four dependencies are not on the local wheel indexes: fetch and clone inyutin/aiohttp_retry,
 *      tradingstrategy-ai/tqdm-loggable, kazhala/InquirerPy and kazhala/pfzy the same way.
 *   2. `python3 -m venv /tmp/pyw/venv` and install the rest from the local indexes (name them, so
 *      pip does not stall on the public index):
 *      /tmp/pyw/venv/bin/pip install --index-url file:///opt/pypi/simple \
 *        --extra-index-url file:///opt/pypi-more/simple --find-links /opt/wheels \
 *        aiohttp backoff boto3 click colorama cryptography fastapi uvicorn paramiko prettytable \
 *        psutil py-cpuinfo requests tomli tomlkit urllib3 watchdog prompt_toolkit tqdm
 *   3. Run with:
 *      GANTRY_PYTHON_WORKER_SDK=/tmp/pyw/src/runpod-python GANTRY_PYTHON=/tmp/pyw/venv/bin/python \
 *      PYTHONPATH=<the four dependency checkouts, colon-separated> node scripts/test.mjs python-worker
 *
 * GANTRY_PYTHON defaults to `python3`. The SDK's own checks are skipped with
 * RUNPOD_SKIP_AUTO_SYSTEM_CHECKS=true (workerEnvironment sets it).
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { startServer, type RunningServer } from '../src/main.js';
import { workerEnvironment } from '../src/serverless/worker-env.js';

const HANDLER = resolve(import.meta.dirname, 'fixtures/python-handler.py');
const sdk = process.env.GANTRY_PYTHON_WORKER_SDK;
const python = process.env.GANTRY_PYTHON ?? 'python3';
const pythonPath = [sdk, process.env.PYTHONPATH].filter(Boolean).join(delimiter);
const pythonEnv = { ...process.env, PYTHONPATH: pythonPath, RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true', PYTHONUNBUFFERED: '1' };

/** Why the suite cannot run here, or false. */
function skipReason(): string | false {
  if (!sdk) return 'GANTRY_PYTHON_WORKER_SDK is not set: point it to a runpod-python checkout (see the header of test/python-worker.e2e.test.ts)';
  const probe = spawnSync(python, ['-c', 'import runpod.serverless'], { env: pythonEnv, encoding: 'utf8', timeout: 60_000 });
  if (probe.status !== 0) {
    const why = (probe.error?.message ?? probe.stderr ?? '').trim().split('\n').slice(-1)[0];
    return `${python} cannot import runpod.serverless from ${sdk} (${why}); see the header of test/python-worker.e2e.test.ts`;
  }
  return false;
}

const TERMINAL = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually<T>(what: string | (() => string), check: () => Promise<T | null | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await sleep(50);
  }
}

interface JobView {
  id: string;
  status: string;
  output?: unknown;
  error?: string;
  workerId?: string;
}

describe('runpod-python workers against a real server', { skip: skipReason() }, () => {
  let dir: string;
  let server: RunningServer;
  let key: string;
  let plainEndpoint: string;
  let streamEndpoint: string;
  const workers: Array<{ child: ChildProcess; output: () => string }> = [];

  const call = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    assert.equal(res.status, 200, `${method} ${path}`);
    return res.json();
  };
  const logs = () => workers.map((w) => w.output().slice(-2_000)).join('\n---\n');
  const finished = (endpointId: string, id: string) =>
    eventually(
      () => `job ${id} to finish; worker output:\n${logs()}`,
      async () => {
        const s = (await call('GET', `/v2/${endpointId}/status/${id}`)) as JobView;
        return TERMINAL.includes(s.status) ? s : null;
      },
    );

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gantry-python-'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ jobs: { timekeeperIntervalMs: 200, takeWaitMs: 2_000, stopWaitMs: 2_000 } }));
    const config = loadConfig({ env: { GANTRY_DATA_DIR: dir, GANTRY_CONFIG: join(dir, 'config.json'), GANTRY_LOG_LEVEL: 'silent' }, flags: { port: 0 } });
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = (() => true) as typeof process.stdout.write; // the start-up banner
    try {
      server = await startServer(config, { logger: pino({ level: 'silent' }) });
    } finally {
      process.stdout.write = write;
    }
    const { services } = server;
    const account = await services.accounts.createAccount('python-user');
    key = (await services.accounts.createKey(account.id, { scope: 'write' })).key;
    const template = await services.templates.create(account.id, { name: 'py', imageName: 'python-worker:dev', isServerless: true });
    plainEndpoint = (await services.endpoints.create(account.id, { name: 'py-plain', templateId: template.id, gpuIds: 'ADA_24', workersMax: 0 })).id;
    streamEndpoint = (await services.endpoints.create(account.id, { name: 'py-stream', templateId: template.id, gpuIds: 'ADA_24', workersMax: 0 })).id;
    const workerKey = (await services.accounts.createKey(account.id, { scope: 'write', name: 'python workers' })).key;
    for (const [endpointId, kind] of [
      [plainEndpoint, 'plain'],
      [streamEndpoint, 'stream'],
    ] as const) {
      const env = workerEnvironment({ publicUrl: server.url, endpointId, workerId: `py-${kind}`, apiKey: workerKey, pingIntervalMs: 1_000 });
      // Its own process group: runpod-python pings from a forked process, which must end with it.
      const child = spawn(python, [HANDLER], { cwd: dir, env: { ...pythonEnv, ...env, PY_HANDLER_KIND: kind }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      workers.push({ child, output: () => out });
    }
  });

  after(async () => {
    await Promise.all(
      workers.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            // The group first (the heartbeat process holds the stdio pipes open too), then the leader.
            try {
              process.kill(-child.pid!, 'SIGKILL');
            } catch {
              // the group is gone already
            }
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a plain Python handler completes a job and its return value is the output', async () => {
    const { id } = await call('POST', `/v2/${plainEndpoint}/run`, { input: { hello: 'python', n: [1, 2] } });
    const done = await finished(plainEndpoint, id);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output, { echo: { hello: 'python', n: [1, 2] }, worker: 'py-plain' });
    assert.equal(done.workerId, 'py-plain');
  });

  test('a generator handler streams its chunks in order, and the aggregate is the final output', async () => {
    const words = ['alpha', 'beta', 'gamma', 'delta'];
    const { id } = await call('POST', `/v2/${streamEndpoint}/run`, { input: { words } });
    const chunks: unknown[] = [];
    await eventually(
      () => `the stream of ${id} to end (chunks so far ${JSON.stringify(chunks)}); worker output:\n${logs()}`,
      async () => {
        const r = (await call('GET', `/v2/${streamEndpoint}/stream/${id}?wait=500`)) as { status: string; stream: Array<{ output: unknown }> };
        chunks.push(...r.stream.map((c) => c.output));
        return TERMINAL.includes(r.status);
      },
    );
    assert.deepEqual(chunks, words);
    const done = await finished(streamEndpoint, id);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output, words);
  });

  test('a raising handler fails the job, with the Python traceback in error', async () => {
    const { id } = await call('POST', `/v2/${plainEndpoint}/run`, { input: { fail: true } });
    const done = await finished(plainEndpoint, id);
    assert.equal(done.status, 'FAILED', JSON.stringify(done));
    assert.match(done.error ?? '', /python handler exploded/);
    assert.match(done.error ?? '', /Traceback|ValueError/);
  });
});
