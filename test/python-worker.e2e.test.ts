/**
 * The real Python worker SDK (runpod-python) against a real Gantry server. Each kind of worker in
 * test/fixtures/python-handler.py runs as its own process on its own endpoint, started with
 * `runpod.serverless.start(config)` and the environment `workerEnvironment` hands workers; jobs
 * are driven over HTTP with fetch. Covered: plain, raising and `{"error"}` handlers, non-ASCII
 * results, runsync, `refresh_worker` (returned, and as a start() option), sync and async
 * generators (with and without return_aggregate_stream, and raising mid-stream),
 * progress_update (shown while running, ignored once late), cancel and executionTimeout stopping
 * the job on the worker through the job-stop channel, concurrency_modifier with job-take-batch,
 * and heartbeats in /health.
 *
 * Skipped unless GANTRY_PYTHON_WORKER_SDK names a checkout of runpod-python whose dependencies the
 * chosen Python can import. To set one up (outside this repository; never commit it):
 *
 *   1. Fetch github:runpod/runpod-python with the search tool's `fetch` and clone the mirror:
 *      `git clone /work/.mirror/runpod+runpod-python/repo /tmp/pyw/src/runpod-python`.
 *      Four dependencies are not on the local wheel indexes: fetch inyutin/aiohttp_retry,
 *      tradingstrategy-ai/tqdm-loggable, kazhala/InquirerPy and kazhala/pfzy the same way and clone
 *      each to /tmp/pyw/src/<name> (aiohttp_retry, tqdm-loggable, InquirerPy, pfzy). All four keep
 *      their package at the top of the checkout, so the checkout itself goes on PYTHONPATH.
 *   2. `python3 -m venv /tmp/pyw/venv` and install the rest from the local indexes (name them, so
 *      pip does not stall on the public index):
 *      /tmp/pyw/venv/bin/pip install --index-url file:///opt/pypi/simple \
 *        --extra-index-url file:///opt/pypi-more/simple --find-links /opt/wheels \
 *        aiohttp backoff boto3 click colorama cryptography fastapi uvicorn paramiko prettytable \
 *        psutil py-cpuinfo requests tomli tomlkit urllib3 watchdog prompt_toolkit tqdm
 *      Check: `PYTHONPATH=/tmp/pyw/src/runpod-python:$DEPS RUNPOD_SKIP_AUTO_SYSTEM_CHECKS=true \
 *      /tmp/pyw/venv/bin/python -c 'import runpod.serverless'` with DEPS as below.
 *   3. Run with:
 *      export DEPS=/tmp/pyw/src/aiohttp_retry:/tmp/pyw/src/tqdm-loggable:/tmp/pyw/src/InquirerPy:/tmp/pyw/src/pfzy
 *      GANTRY_PYTHON_WORKER_SDK=/tmp/pyw/src/runpod-python GANTRY_PYTHON=/tmp/pyw/venv/bin/python \
 *      PYTHONPATH=$DEPS node scripts/test.mjs python-worker
 *
 * GANTRY_PYTHON defaults to `python3`. The SDK's own checks are skipped with
 * RUNPOD_SKIP_AUTO_SYSTEM_CHECKS=true (workerEnvironment sets it). The suite takes ~30 s (the
 * executionTimeout case waits out the 5 s minimum).
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RunningServer } from '../src/main.js';
import { workerEnvironment } from '../src/serverless/worker-env.js';
import { startListeningServer, type ListeningServer } from './support/harness.js';
import { pythonSdkSkipReason, spawnPython, type PythonProcess } from './support/python-sdk.js';

const HANDLER = resolve(import.meta.dirname, 'fixtures/python-handler.py');

const TERMINAL = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually<T>(
  what: string | (() => string),
  check: () => Promise<T | null | undefined | false>,
  ms = 30_000,
): Promise<T> {
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

type Kind = 'plain' | 'stream' | 'astream' | 'async' | 'concurrent' | 'refresh';
const KINDS: readonly Kind[] = ['plain', 'stream', 'astream', 'async', 'concurrent', 'refresh'];

/** A worker post as the server handled it (job-done), for assertions on what the SDK sent. */
interface Post {
  jobId: string;
  body: any;
  outcome: string;
}

describe('runpod-python workers against a real server', { skip: pythonSdkSkipReason() }, () => {
  let listening: ListeningServer;
  let dir: string;
  let server: RunningServer;
  let key: string;
  const endpoint = {} as Record<Kind, string>;
  const workers = {} as Record<Kind, PythonProcess>;
  const posts: Post[] = [];
  const takes: Array<{ workerId: string; batchSize: number; taken: number }> = [];

  const request = async (method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(`${server.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const call = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await request(method, path, body);
    assert.equal(res.status, 200, `${method} ${path}: ${await res.clone().text()}`);
    return res.json();
  };
  const logs = () =>
    Object.entries(workers)
      .map(([kind, w]) => `[${kind}] ${w.output().slice(-2_000)}`)
      .join('\n---\n');
  const run = async (kind: Kind, input: unknown, extra: Record<string, unknown> = {}): Promise<string> =>
    (await call('POST', `/v2/${endpoint[kind]}/run`, { input, ...extra })).id;
  const status = (kind: Kind, id: string) => call('GET', `/v2/${endpoint[kind]}/status/${id}`) as Promise<JobView>;
  const until = (kind: Kind, id: string, what: string, check: (s: JobView) => boolean, ms?: number) =>
    eventually(
      () => `job ${id} ${what}; worker output:\n${logs()}`,
      async () => {
        const s = await status(kind, id);
        return check(s) ? s : null;
      },
      ms,
    );
  const finished = (kind: Kind, id: string, ms?: number) =>
    until(kind, id, 'to finish', (s) => TERMINAL.includes(s.status), ms);
  /** Drains `/stream` until the job ends; answers the chunks' outputs in order. */
  const drain = async (kind: Kind, id: string): Promise<unknown[]> => {
    const chunks: unknown[] = [];
    await eventually(
      () => `the stream of ${id} to end (chunks so far ${JSON.stringify(chunks)}); worker output:\n${logs()}`,
      async () => {
        const r = (await call('GET', `/v2/${endpoint[kind]}/stream/${id}?wait=500`)) as {
          status: string;
          stream: Array<{ output: unknown }>;
        };
        assert.ok(Array.isArray(r.stream), 'every stream reply carries `stream`');
        chunks.push(...r.stream.map((c) => c.output));
        return TERMINAL.includes(r.status);
      },
    );
    return chunks;
  };

  before(async () => {
    listening = await startListeningServer({
      jobs: { timekeeperIntervalMs: 200, takeWaitMs: 2_000, stopWaitMs: 2_000 },
    });
    server = listening.server;
    dir = listening.dataDir;
    const { services } = server;
    // Record every job-done post and what became of it (the route calls services.jobs.worker.complete).
    const complete = services.jobs.worker.complete.bind(services.jobs.worker);
    services.jobs.worker.complete = async (workerId, jobId, body) => {
      const outcome = await complete(workerId, jobId, body);
      posts.push({ jobId, body, outcome: outcome.outcome });
      return outcome;
    };
    // And the batch sizes each worker asked for (job-take and job-take-batch call services.jobs.worker.take).
    const take = services.jobs.worker.take.bind(services.jobs.worker);
    services.jobs.worker.take = async (endpointId, workerId, options) => {
      const taken = await take(endpointId, workerId, options);
      if (taken.length > 0) takes.push({ workerId, batchSize: options?.batchSize ?? 1, taken: taken.length });
      return taken;
    };
    const account = await services.accounts.createAccount('python-user');
    key = (await services.accounts.createKey(account.id, { scope: 'write' })).key;
    const template = await services.templates.create(account.id, {
      name: 'py',
      imageName: 'python-worker:dev',
      isServerless: true,
    });
    const workerKey = (await services.accounts.createKey(account.id, { scope: 'write', name: 'python workers' })).key;
    for (const kind of KINDS) {
      endpoint[kind] = (
        await services.endpoints.create(account.id, {
          name: `py-${kind}`,
          templateId: template.id,
          gpuIds: 'ADA_24',
          workersMax: 0,
        })
      ).id;
      const env = workerEnvironment({
        publicUrl: server.url,
        endpointId: endpoint[kind],
        workerId: `py-${kind}`,
        apiKey: workerKey,
        pingIntervalMs: 1_000,
      });
      // Its own process group: runpod-python pings from a forked process, which must end with it.
      workers[kind] = spawnPython(HANDLER, [], { ...env, PY_HANDLER_KIND: kind }, dir);
    }
  });

  after(async () => {
    await Promise.all(Object.values(workers).map((w) => w.kill()));
    await listening?.close();
  });

  test('a plain Python handler completes a job and its return value is the output', async () => {
    const id = await run('plain', { hello: 'python', n: [1, 2] });
    const done = await finished('plain', id);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output, { echo: { hello: 'python', n: [1, 2] }, worker: 'py-plain' });
    assert.equal(done.workerId, 'py-plain');
  });

  test('non-ASCII input and output survive the form-urlencoded JSON result post', async () => {
    const input = { text: 'héllo ✓ 日本語 🚀', quote: 'a "b" & c=d+e%20' };
    const id = await run('plain', input);
    const done = await finished('plain', id);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output, { echo: input, worker: 'py-plain' });
  });

  test("runsync answers the Python handler's output directly", async () => {
    const done = (await call('POST', `/v2/${endpoint.plain}/runsync?wait=30000`, { input: { sync: true } })) as JobView;
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output, { echo: { sync: true }, worker: 'py-plain' });
  });

  test('a raising handler fails the job, with the Python traceback in error', async () => {
    const id = await run('plain', { fail: true });
    const done = await finished('plain', id);
    assert.equal(done.status, 'FAILED', JSON.stringify(done));
    assert.match(done.error ?? '', /python handler exploded/);
    assert.match(done.error ?? '', /Traceback|ValueError/);
  });

  test('a handler returning an "error" key fails the job with that message, even with other output', async () => {
    const id = await run('plain', { error: 'bad input: n must be positive' });
    const done = await finished('plain', id);
    assert.equal(done.status, 'FAILED', JSON.stringify(done));
    assert.equal(done.error, 'bad input: n must be positive');
  });

  test('a handler returning {"refresh_worker": true} completes, asks to be recycled, and keeps serving', async () => {
    server.services.workers.takeRecycleRequest(endpoint.plain, 'py-plain'); // nothing earlier counts
    const id = await run('plain', { refresh: true });
    const done = await finished('plain', id);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output, { refreshed: true }, 'the SDK strips refresh_worker from the output');
    const post = posts.find((p) => p.jobId === id);
    assert.equal(post?.body?.stopPod, true, 'the SDK turns refresh_worker into stopPod');
    assert.equal(
      server.services.workers.takeRecycleRequest(endpoint.plain, 'py-plain'),
      true,
      'the server recorded the recycle request',
    );
    // A worker attached by hand is not stopped by the platform: it goes on taking jobs.
    const next = await finished('plain', await run('plain', { after: 'refresh' }));
    assert.equal(next.status, 'COMPLETED', JSON.stringify(next));
  });

  test('a worker started with refresh_worker runs one job, then exits; the server records the recycle request', async () => {
    const id = await run('refresh', { once: true });
    const done = await finished('refresh', id);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output, { echo: { once: true }, worker: 'py-refresh' });
    assert.equal(server.services.workers.takeRecycleRequest(endpoint.refresh, 'py-refresh'), true);
    const code = await Promise.race([
      workers.refresh.exited,
      new Promise<'still running'>((r) => setTimeout(() => r('still running'), 20_000).unref()),
    ]);
    assert.equal(
      code,
      0,
      `the worker process should exit by itself; output:\n${workers.refresh.output().slice(-2_000)}`,
    );
    // Its next job stays queued: nobody takes it.
    const orphan = await run('refresh', { once: 'more' });
    await sleep(500);
    assert.equal((await status('refresh', orphan)).status, 'IN_QUEUE');
  });

  test('a generator handler streams its chunks in order, and the aggregate is the final output', async () => {
    const words = ['alpha', 'beta', 'gamma', 'delta'];
    const id = await run('stream', { words });
    assert.deepEqual(await drain('stream', id), words);
    const done = await finished('stream', id);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output, words);
  });

  test('a generator that raises after some chunks fails the job; the chunks before it were streamed', async () => {
    const id = await run('stream', { words: ['one', 'two'], fail: true });
    assert.deepEqual(await drain('stream', id), ['one', 'two']);
    const done = await finished('stream', id);
    assert.equal(done.status, 'FAILED', JSON.stringify(done));
    assert.match(done.error ?? '', /python stream broke/);
  });

  test('an async generator handler without return_aggregate_stream streams its chunks and completes', async () => {
    const words = ['uno', 'dos', 'tres'];
    const id = await run('astream', { words });
    assert.deepEqual(await drain('astream', id), words);
    const done = await finished('astream', id);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
  });

  test('progress_update shows as the output of the running job, then the result replaces it', async () => {
    const progress = { step: 1, of: 2, note: 'warming up' };
    const id = await run('async', { progress });
    const running = await until(
      'async',
      id,
      'to show its progress',
      (s) => s.status === 'IN_PROGRESS' && s.output !== undefined && s.output !== null,
    );
    assert.deepEqual(running.output, progress);
    writeFileSync(join(dir, `release-${id}`), '');
    const done = await finished('async', id);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output, { released: true });
  });

  test('a progress update that arrives after the result is ignored: the job stays COMPLETED with its output', async () => {
    const id = await run('async', { late: 'too late' });
    const done = await finished('async', id);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    const late = await eventually(
      () => `the late progress post of ${id}; posts: ${JSON.stringify(posts.filter((p) => p.jobId === id))}`,
      async () => posts.find((p) => p.jobId === id && p.body?.status === 'IN_PROGRESS'),
    );
    assert.equal(late.outcome, 'ignored');
    const after = await status('async', id);
    assert.equal(after.status, 'COMPLETED');
    assert.deepEqual(after.output, { final: true });
  });

  test('cancelling a running job stops it on the worker (job-stop channel), which then takes the next job', async () => {
    const id = await run('async', { sleep: 120 });
    // Its progress post proves the handler runs (the SDK tracks the task by then).
    await until('async', id, 'to start', (s) => s.status === 'IN_PROGRESS' && s.output === 'started');
    const cancelled = await call('POST', `/v2/${endpoint.async}/cancel/${id}`);
    assert.equal(cancelled.status, 'CANCELLED');
    // The worker runs one job at a time: the next one completes only if the cancelled one stopped.
    const next = await run('async', { after: 'cancel' });
    const done = await finished('async', next, 20_000);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output, { echo: { after: 'cancel' } });
    assert.equal((await status('async', id)).status, 'CANCELLED');
    assert.equal(
      posts.filter((p) => p.jobId === id && p.body?.status !== 'IN_PROGRESS').length,
      0,
      'a stopped job posts no result',
    );
  });

  test('a job past its executionTimeout is TIMED_OUT and stopped on the worker, which then takes the next job', async () => {
    const id = await run('async', { sleep: 120 }, { policy: { executionTimeout: 5_000 } });
    await until('async', id, 'to start', (s) => s.status === 'IN_PROGRESS' && s.output === 'started');
    const timedOut = await finished('async', id, 20_000);
    assert.equal(timedOut.status, 'TIMED_OUT', JSON.stringify(timedOut));
    const done = await finished('async', await run('async', { after: 'timeout' }), 20_000);
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
  });

  test('a concurrency_modifier worker runs several jobs at once (taken with job-take-batch)', async () => {
    const ids = await Promise.all([1, 2, 3].map(() => run('concurrent', { barrier: 3 })));
    const done = await Promise.all(ids.map((id) => finished('concurrent', id)));
    for (const d of done) {
      assert.equal(d.status, 'COMPLETED', JSON.stringify(d));
      assert.deepEqual(d.output, { peak: 3 }, 'the three jobs ran at the same time');
      assert.equal(d.workerId, 'py-concurrent');
    }
    const asked = takes.filter((t) => t.workerId === 'py-concurrent');
    assert.ok(asked.length >= 1 && asked.every((t) => t.batchSize >= 1 && t.batchSize <= 3), JSON.stringify(asked));
    assert.ok(
      asked.some((t) => t.batchSize > 1),
      `the SDK asked for more than one job at a time: ${JSON.stringify(asked)}`,
    );
    assert.equal(
      asked.reduce((n, t) => n + t.taken, 0),
      3,
    );
  });

  test('the heartbeat keeps the worker counted as ready in /health', async () => {
    const health = await call('GET', `/v2/${endpoint.plain}/health`);
    assert.ok(health.workers.ready >= 1, JSON.stringify(health));
    assert.equal(health.workers.unhealthy, 0, JSON.stringify(health));
  });
});
