// End to end with real clients: a real server on a loopback port, the autoscaler launching the
// endpoint's worker (test/fixtures/sdk-worker.ts, on the Node worker library) through the process
// runtime, and jobs driven by the npm `runpod-sdk`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import runpodSdk from 'runpod-sdk';
import type { RunningServer } from '../src/main.js';
import { startListeningServer, type ListeningServer } from './support/harness.js';

type SdkEndpoint = NonNullable<ReturnType<ReturnType<typeof runpodSdk>['endpoint']>>;

let listening: ListeningServer;
let server: RunningServer;
let key: string;
let endpointId: string;
let idleEndpointId: string;
let ep: SdkEndpoint;
/** Where the worker process leaves what the tests observe of it. */
const workerDir = mkdtempSync(join(tmpdir(), 'gantry-sdk-worker-'));
const aborted = (): string[] =>
  existsSync(join(workerDir, 'aborted'))
    ? readFileSync(join(workerDir, 'aborted'), 'utf8').split('\n').filter(Boolean)
    : [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(
  what: string,
  probe: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)}`);
    await sleep(100);
  }
}

const finalStatus = (id: string) =>
  until(
    `job ${id} to finish`,
    () => ep.status(id) as Promise<{ status: string; output?: unknown; error?: string; retries?: number }>,
    (s) => ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'].includes(s.status),
  );

before(async () => {
  listening = await startListeningServer({
    images: {
      // cwd: the repository, so that `--import tsx` resolves
      'sdk-worker:dev': {
        command: [process.execPath, '--import', 'tsx', resolve(import.meta.dirname, 'fixtures/sdk-worker.ts')],
        cwd: resolve(import.meta.dirname, '..'),
        env: { SDK_WORKER_DIR: workerDir },
      },
    },
    jobs: { timekeeperIntervalMs: 200, pingIntervalMs: 500 },
    serverless: { autoscaler: { intervalMs: 100 } },
  });
  server = listening.server;
  const { services } = server;
  const account = await services.accounts.createAccount('sdk-user');
  key = (await services.accounts.createKey(account.id, { scope: 'write' })).key;
  const template = await services.templates.create(account.id, {
    name: 'worker',
    imageName: 'sdk-worker:dev',
    isServerless: true,
  });
  // scaled from zero by the first job; a long idle timeout keeps the worker for the whole file
  endpointId = (
    await services.endpoints.create(account.id, {
      name: 'sdk',
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMin: 0,
      workersMax: 1,
      idleTimeout: 600,
    })
  ).id;
  idleEndpointId = (
    await services.endpoints.create(account.id, {
      name: 'no-workers',
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMax: 0,
    })
  ).id;
  ep = runpodSdk(key, { baseUrl: `${server.url}/v2` }).endpoint(endpointId)!;
});

after(async () => {
  await listening?.close();
  rmSync(workerDir, { recursive: true, force: true });
});

test("run then status: a plain handler's output comes back, from the worker the autoscaler launched for it", async () => {
  const run = await ep.run({ input: { kind: 'echo', value: 'hello' } });
  assert.equal(run.status, 'IN_QUEUE');
  const done = await finalStatus(run.id);
  assert.equal(done.status, 'COMPLETED');
  const output = done.output as { echoed: string; worker: string };
  assert.equal(output.echoed, 'hello');
  assert.deepEqual(server.services.autoscaler.workerIds(endpointId), [output.worker]);
});

test('runSync answers the finished job', async () => {
  const res = (await ep.runSync({ input: { kind: 'echo', value: 42 } }, 20_000)) as unknown as {
    status: string;
    output: unknown;
    completed: boolean;
  };
  assert.equal(res.status, 'COMPLETED');
  assert.equal(res.completed, true);
  assert.deepEqual(res.output, { echoed: 42, worker: server.services.autoscaler.workerIds(endpointId)[0] });
});

test("a streaming handler's chunks reach the SDK's stream generator in order", async () => {
  const run = await ep.run({ input: { kind: 'stream', words: ['a', 'b', 'c', 'd'] } });
  const chunks: unknown[] = [];
  for await (const chunk of ep.stream(run.id)) chunks.push(chunk);
  assert.deepEqual(chunks, [{ output: 'a' }, { output: 'b' }, { output: 'c' }, { output: 'd' }]);
  assert.equal((await finalStatus(run.id)).status, 'COMPLETED');
});

test('progress updates are visible while the job runs', async () => {
  const run = await ep.run({ input: { kind: 'progress' } });
  const seen = await until(
    'progress',
    () => ep.status(run.id) as Promise<{ status: string; output?: unknown }>,
    (s) => s.status !== 'IN_QUEUE' && s.output !== undefined,
  );
  assert.ok(seen.status === 'COMPLETED' || JSON.stringify(seen.output) === '{"pct":50}', JSON.stringify(seen));
  assert.equal((await finalStatus(run.id)).output, 'finished');
});

test('a handler that throws fails the job with its error', async () => {
  const res = (await ep.runSync({ input: { kind: 'fail' } }, 20_000)) as unknown as { status: string; error: string };
  assert.equal(res.status, 'FAILED');
  assert.match(res.error, /handler exploded/);
});

test('a failed job retried through /retry runs again with the same id and input', async () => {
  const run = await ep.run({ input: { kind: 'flaky' } });
  assert.equal((await finalStatus(run.id)).status, 'FAILED');
  const res = await fetch(`${server.url}/v2/${endpointId}/retry/${run.id}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { id: run.id, status: 'IN_QUEUE' });
  const done = await finalStatus(run.id);
  assert.equal(done.status, 'COMPLETED');
  assert.equal(done.output, 'second attempt ok');
});

test('cancel stops a running job: the handler sees its abort signal and the job stays CANCELLED', async () => {
  const run = await ep.run({ input: { kind: 'wait' } });
  await until(
    'the job to start',
    () => ep.status(run.id),
    (s) => s.status === 'IN_PROGRESS',
  );
  const cancelled = await ep.cancel(run.id);
  assert.deepEqual({ id: cancelled.id, status: cancelled.status }, { id: run.id, status: 'CANCELLED' });
  await until('the handler to be aborted', async () => aborted().includes(run.id), Boolean, 10_000);
  await sleep(300);
  assert.equal((await ep.status(run.id)).status, 'CANCELLED');
});

test('a job past its execution timeout is TIMED_OUT and its handler aborted', async () => {
  const run = await ep.run({ input: { kind: 'wait' }, policy: { executionTimeout: 5000 } });
  const done = await finalStatus(run.id);
  assert.equal(done.status, 'TIMED_OUT');
  await until('the handler to be aborted', async () => aborted().includes(run.id), Boolean, 5000);
});

test('health reports the launched worker; purgeQueue removes queued jobs', async () => {
  const health = await ep.health();
  assert.ok(health.workers.ready >= 1, JSON.stringify(health));
  assert.ok(health.jobs.completed >= 4, JSON.stringify(health));
  assert.ok(health.jobs.retried >= 1, JSON.stringify(health));
  const idle = runpodSdk(key, { baseUrl: `${server.url}/v2` }).endpoint(idleEndpointId)!;
  await idle.run({ input: { kind: 'echo' } });
  await idle.run({ input: { kind: 'echo' } });
  assert.deepEqual(await idle.purgeQueue(), { removed: 2, status: 'completed' });
});
