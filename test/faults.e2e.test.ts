/**
 * Faults with real processes: `gantry serve` SIGKILLed under a `/run` load and restarted on the
 * same data dir, a worker process SIGKILLed mid-job, and a webhook receiver that fails twice.
 * Every wait polls real time with a deadline (these are real processes, no clock to inject);
 * every process and temp dir is ended and removed in `after`.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { startReceiver, type WebhookReceiver } from './support/webhook-receiver.js';
import { workerEnvironment } from '../src/serverless/worker-env.js';
import { bearerApi } from './support/bearer-api.js';

const ROOT = resolve(import.meta.dirname, '..');
const WORKER_SCRIPT = resolve(import.meta.dirname, 'fixtures/fault-worker.ts');
const KEY = 'faults-admin-key-0123456789';
const TERMINAL = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it answers a truthy value, or fails after `ms`. */
async function eventually<T>(
  what: string | (() => string),
  check: () => Promise<T | null | undefined | false>,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await sleep(50);
  }
}

interface JobStatus {
  id: string;
  status: string;
  retries?: number;
  workerId?: string;
  output?: unknown;
}

/** A small client of one server: JSON in, JSON out, the admin key. */
const client = (url: () => string) => {
  const call = bearerApi(url, KEY);
  return {
    call,
    /** A serverless template and an endpoint over REST; answers the endpoint id. */
    async endpoint(workersMax: number): Promise<string> {
      const tpl = await call('POST', '/v2/templates', {
        name: `faults-${Date.now()}`,
        image: 'faults-worker:dev',
        serverless: true,
      });
      assert.ok(tpl.status === 200 || tpl.status === 201, JSON.stringify(tpl.body));
      const ep = await call('POST', '/v2/serverless', {
        name: 'faults',
        templateId: tpl.body.id,
        type: 'QUEUE',
        gpu: { pools: ['ADA_24'] },
        scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
        workers: { min: 0, max: workersMax },
      });
      assert.ok(ep.status === 200 || ep.status === 201, JSON.stringify(ep.body));
      return ep.body.id as string;
    },
    status: async (endpointId: string, jobId: string): Promise<JobStatus> =>
      (await call('GET', `/v2/${endpointId}/status/${jobId}`)).body as JobStatus,
  };
};

/** A temp data dir with a JSON config file; answers the dir and the `gantry serve` arguments. */
function dataDir(prefix: string, file: Record<string, unknown>): { dir: string; args: string[] } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(file));
  return { dir, args: ['--data-dir', dir, '--config', join(dir, 'config.json')] };
}

const serverEnv = { GANTRY_BOOTSTRAP_KEY: KEY, GANTRY_LOG_LEVEL: 'error' };

describe('the server killed with SIGKILL under a /run load', () => {
  let dir: string;
  let server: SpawnedGantry | null = null;

  after(async () => {
    await server?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('kill -9 of the server during a /run load loses no acknowledged job', async () => {
    const setup = dataDir('gantry-faults-kill-', {
      jobs: { rateLimits: false },
      rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
    });
    dir = setup.dir;
    server = await spawnGantry(setup.args, serverEnv);
    const api = client(() => server!.url);
    const endpointId = await api.endpoint(0); // workersMax 0: nothing takes the jobs

    const acknowledged: string[] = [];
    let failedRequests = 0;
    let killed = false;
    const loadUrl = `${server.url}/v2/${endpointId}/run`;
    const submitter = async (n: number) => {
      for (let i = 0; !killed; i++) {
        try {
          const res = await fetch(loadUrl, {
            method: 'POST',
            headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
            body: JSON.stringify({ input: { submitter: n, i } }),
          });
          const body = (await res.json()) as { id?: string };
          if (res.status === 200 && typeof body.id === 'string') acknowledged.push(body.id);
        } catch {
          failedRequests += 1; // the server died under this request: it was never acknowledged
        }
      }
    };
    const load = Array.from({ length: 16 }, (_, n) => submitter(n));
    // Kill mid-load: once the load has run for a while and the server acknowledged some jobs.
    await eventually('the load to get going', async () => acknowledged.length >= 50);
    await sleep(1_500);
    const ackedBeforeKill = acknowledged.length;
    await server.stop('SIGKILL');
    killed = true;
    await Promise.all(load);
    assert.ok(ackedBeforeKill >= 50, `the load acknowledged ${ackedBeforeKill} jobs before the kill`);
    assert.ok(failedRequests > 0, 'requests were in flight when the server was killed');

    server = await spawnGantry(setup.args, serverEnv);
    const missing: string[] = [];
    const ids = [...acknowledged];
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let id = ids.pop(); id !== undefined; id = ids.pop()) {
          const s = await api.status(endpointId, id);
          if (s.status !== 'IN_QUEUE') missing.push(`${id}: ${JSON.stringify(s)}`);
        }
      }),
    );
    assert.deepEqual(
      missing.slice(0, 5),
      [],
      `${missing.length} of ${acknowledged.length} acknowledged jobs are not IN_QUEUE after the restart`,
    );
    const health = await api.call('GET', `/v2/${endpointId}/health`);
    assert.ok(
      health.body.jobs.inQueue >= acknowledged.length,
      `health counts ${health.body.jobs.inQueue} queued, ${acknowledged.length} were acknowledged`,
    );
  });
});

describe('workers killed mid-job, and webhooks retried', () => {
  let dir: string;
  let server: SpawnedGantry;
  let api: ReturnType<typeof client>;
  let endpointId: string;
  let receiver: WebhookReceiver;
  const workers: ChildProcess[] = [];

  /** Starts a fault-worker process; resolves once it is spawned. `taken` lists the job ids it reported. */
  const startWorker = (workerId: string, mode: 'block' | 'echo') => {
    const env = workerEnvironment({ publicUrl: server.url, endpointId, workerId, apiKey: KEY, pingIntervalMs: 200 });
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER_SCRIPT], {
      cwd: ROOT,
      env: { ...process.env, ...env, FAULT_WORKER_MODE: mode },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    workers.push(child);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    return { child, output: () => out, taken: () => [...out.matchAll(/^took (\S+)$/gm)].map((m) => m[1]!) };
  };
  const killed = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });

  before(async () => {
    const setup = dataDir('gantry-faults-worker-', {
      jobs: {
        heartbeatTimeoutMs: 1_500,
        timekeeperIntervalMs: 200,
        pingIntervalMs: 200,
        takeWaitMs: 2_000,
        stopWaitMs: 2_000,
      },
      serverless: { webhooks: { retryDelayMs: 200, pollIntervalMs: 50, timeoutMs: 2_000 } },
    });
    dir = setup.dir;
    server = await spawnGantry(setup.args, serverEnv);
    api = client(() => server.url);
    endpointId = await api.endpoint(0); // workers are attached by hand, not launched
    receiver = await startReceiver();
  });
  after(async () => {
    await Promise.all(workers.map(killed));
    await server?.stop();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a worker killed mid-job has its job requeued by the heartbeat timeout and finished by another worker', async () => {
    const first = startWorker('fault-first', 'block');
    const run = await api.call('POST', `/v2/${endpointId}/run`, { input: { n: 1 } });
    assert.equal(run.status, 200);
    const jobId = run.body.id as string;
    await eventually(
      () => `the first worker to take the job (${first.output()})`,
      async () => first.taken().includes(jobId),
    );
    const running = await api.status(endpointId, jobId);
    assert.deepEqual([running.status, running.workerId], ['IN_PROGRESS', 'fault-first']);

    const second = startWorker('fault-second', 'echo');
    await killed(first.child);
    const done = await eventually(
      () => `the job to finish (second worker: ${second.output()})`,
      async () => {
        const s = await api.status(endpointId, jobId);
        return TERMINAL.includes(s.status) ? s : null;
      },
    );
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.equal(done.workerId, 'fault-second');
    assert.ok((done.retries ?? 0) >= 1, `retries counted: ${JSON.stringify(done)}`);
    assert.deepEqual(done.output, { echo: { n: 1 }, worker: 'fault-second' });
    assert.ok(second.taken().includes(jobId));
  });

  test('a webhook receiver failing twice then succeeding receives exactly one success', async () => {
    // Needs the echo worker of the previous test; start one if that test was skipped or failed early.
    if (!workers.some((w) => w.exitCode === null && w.signalCode === null)) startWorker('fault-webhook', 'echo');
    receiver.script = [500, 503];
    const run = await api.call('POST', `/v2/${endpointId}/run`, {
      input: { hook: true },
      webhook: `${receiver.url}/hook`,
    });
    assert.equal(run.status, 200);
    await eventually(
      () => `three webhook attempts (got ${receiver.calls.length})`,
      async () => receiver.calls.length >= 3,
    );
    // No fourth call: the third attempt succeeded. Wait several retry delays to be sure.
    await sleep(1_000);
    assert.equal(receiver.calls.length, 3);
    for (const call of receiver.calls) {
      assert.equal(call.path, '/hook');
      assert.deepEqual([(call.body as JobStatus).id, (call.body as JobStatus).status], [run.body.id, 'COMPLETED']);
    }
  });
});
