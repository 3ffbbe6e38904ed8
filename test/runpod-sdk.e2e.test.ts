// End to end with real clients: a real server on a random port, the Node worker library attached
// by hand with the environment `gantry worker env` prints, and jobs driven by the npm `runpod-sdk`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import runpodSdk from 'runpod-sdk';
import type { RunningServer } from '../src/main.js';
import { workerEnvironment } from '../src/serverless/worker-env.js';
import { serve, type Handler, type WorkerHandle } from '../src/worker/index.js';
import { startListeningServer, type ListeningServer } from './support/harness.js';

type SdkEndpoint = NonNullable<ReturnType<ReturnType<typeof runpodSdk>['endpoint']>>;

let listening: ListeningServer;
let server: RunningServer;
let key: string;
let endpointId: string;
let idleEndpointId: string;
let ep: SdkEndpoint;
let workerHandle: WorkerHandle;
const aborted: string[] = [];
let flakyAttempts = 0;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const handler: Handler = async (job, context) => {
  const input = job.input as { kind: string; value?: unknown; words?: string[] };
  switch (input.kind) {
    case 'echo':
      return { echoed: input.value, worker: context.workerId };
    case 'stream':
      return (async function* () {
        for (const word of input.words ?? []) {
          await sleep(30);
          yield word;
        }
      })();
    case 'progress':
      await context.progress({ pct: 50 });
      await sleep(400);
      return 'finished';
    case 'fail':
      throw new Error('handler exploded');
    case 'flaky':
      flakyAttempts += 1;
      if (flakyAttempts === 1) throw new Error('first attempt fails');
      return 'second attempt ok';
    case 'wait':
      // Runs until the platform stops it (cancel, execution timeout).
      await new Promise<void>((resolve) => context.signal.addEventListener('abort', () => resolve(), { once: true }));
      aborted.push(job.id);
      return 'never posted';
    default:
      throw new Error(`unknown kind ${input.kind}`);
  }
};

async function until<T>(what: string, probe: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
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
  listening = await startListeningServer({ jobs: { timekeeperIntervalMs: 200 } });
  server = listening.server;
  const { services } = server;
  const account = await services.accounts.createAccount('sdk-user');
  key = (await services.accounts.createKey(account.id, { scope: 'write' })).key;
  const template = await services.templates.create(account.id, { name: 'worker', imageName: 'worker:dev', isServerless: true });
  endpointId = (await services.endpoints.create(account.id, { name: 'sdk', templateId: template.id, gpuIds: 'ADA_24' })).id;
  idleEndpointId = (await services.endpoints.create(account.id, { name: 'no-workers', templateId: template.id, gpuIds: 'ADA_24' })).id;
  const workerKey = (await services.accounts.createKey(account.id, { scope: 'write', name: `worker ${endpointId}` })).key;
  const env = workerEnvironment({ publicUrl: server.url, endpointId, workerId: 'local-e2e', apiKey: workerKey, gpuType: 'NVIDIA GeForce RTX 4090', pingIntervalMs: 500 });
  workerHandle = serve(handler, { env, concurrency: 2, handleSignals: false, shutdownGraceMs: 1000 });
  ep = runpodSdk(key, { baseUrl: `${server.url}/v2` }).endpoint(endpointId)!;
});

after(async () => {
  await workerHandle?.stop();
  await listening?.close();
});

test('run then status: a plain handler\'s output comes back', async () => {
  const run = await ep.run({ input: { kind: 'echo', value: 'hello' } });
  assert.equal(run.status, 'IN_QUEUE');
  const done = await finalStatus(run.id);
  assert.equal(done.status, 'COMPLETED');
  assert.deepEqual(done.output, { echoed: 'hello', worker: 'local-e2e' });
});

test('runSync answers the finished job', async () => {
  const res = (await ep.runSync({ input: { kind: 'echo', value: 42 } }, 20_000)) as unknown as { status: string; output: unknown; completed: boolean };
  assert.equal(res.status, 'COMPLETED');
  assert.equal(res.completed, true);
  assert.deepEqual(res.output, { echoed: 42, worker: 'local-e2e' });
});

test('a streaming handler\'s chunks reach the SDK\'s stream generator in order', async () => {
  const run = await ep.run({ input: { kind: 'stream', words: ['a', 'b', 'c', 'd'] } });
  const chunks: unknown[] = [];
  for await (const chunk of ep.stream(run.id)) chunks.push(chunk);
  assert.deepEqual(chunks, [{ output: 'a' }, { output: 'b' }, { output: 'c' }, { output: 'd' }]);
  assert.equal((await finalStatus(run.id)).status, 'COMPLETED');
});

test('progress updates are visible while the job runs', async () => {
  const run = await ep.run({ input: { kind: 'progress' } });
  const seen = await until('progress', () => ep.status(run.id) as Promise<{ status: string; output?: unknown }>, (s) => s.status !== 'IN_QUEUE' && s.output !== undefined);
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
  const res = await fetch(`${server.url}/v2/${endpointId}/retry/${run.id}`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { id: run.id, status: 'IN_QUEUE' });
  const done = await finalStatus(run.id);
  assert.equal(done.status, 'COMPLETED');
  assert.equal(done.output, 'second attempt ok');
});

test('cancel stops a running job: the handler sees its abort signal and the job stays CANCELLED', async () => {
  const run = await ep.run({ input: { kind: 'wait' } });
  await until('the job to start', () => ep.status(run.id), (s) => s.status === 'IN_PROGRESS');
  const cancelled = await ep.cancel(run.id);
  assert.deepEqual({ id: cancelled.id, status: cancelled.status }, { id: run.id, status: 'CANCELLED' });
  await until('the handler to be aborted', async () => aborted.includes(run.id), Boolean, 10_000);
  await sleep(300);
  assert.equal((await ep.status(run.id)).status, 'CANCELLED');
});

test('a job past its execution timeout is TIMED_OUT and its handler aborted', async () => {
  const run = await ep.run({ input: { kind: 'wait' }, policy: { executionTimeout: 5000 } });
  const done = await finalStatus(run.id);
  assert.equal(done.status, 'TIMED_OUT');
  await until('the handler to be aborted', async () => aborted.includes(run.id), Boolean, 5000);
});

test('health reports the attached worker; purgeQueue removes queued jobs', async () => {
  const health = await ep.health();
  assert.ok(health.workers.ready >= 1, JSON.stringify(health));
  assert.ok(health.jobs.completed >= 4, JSON.stringify(health));
  assert.ok(health.jobs.retried >= 1, JSON.stringify(health));
  const idle = runpodSdk(key, { baseUrl: `${server.url}/v2` }).endpoint(idleEndpointId)!;
  await idle.run({ input: { kind: 'echo' } });
  await idle.run({ input: { kind: 'echo' } });
  assert.deepEqual(await idle.purgeQueue(), { removed: 2, status: 'completed' });
});
