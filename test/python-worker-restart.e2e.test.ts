/**
 * The real Python worker SDK (runpod-python) telling a real Gantry server which jobs it holds
 * (docs/serverless.md "Jobs a worker no longer holds"): a worker killed -9 mid-job and started
 * again with the same RUNPOD_POD_ID, as a crashed container comes back with its pod id, gets its
 * job back from the queue and completes it; and the SDK's heartbeat alone (its ping process fed
 * through its shared-memory job mirror, test/fixtures/python-heartbeat.py) gives back a job it
 * does not list, and never one just taken.
 *
 * The server runs on a manual clock with its timekeeper idle, so no job moves because a worker
 * fell silent: whatever goes back to the queue went back on what the worker itself reported.
 * Set up the SDK as the header of test/python-worker.e2e.test.ts says; skipped without it.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import type { RunningServer } from '../src/main.js';
import { FakeClock } from '../src/domain/clock.js';
import { workerEnvironment } from '../src/serverless/worker-env.js';
import { startListeningServer, type ListeningServer } from './support/harness.js';
import { pythonSdkSkipReason, spawnPython, type PythonProcess } from './support/python-sdk.js';

const HANDLER = resolve(import.meta.dirname, 'fixtures/python-handler.py');
const HEARTBEAT = resolve(import.meta.dirname, 'fixtures/python-heartbeat.py');
const HEARTBEAT_TIMEOUT = 30_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits for a condition on real processes (the SDK's import alone takes seconds on a loaded machine). */
async function eventually<T>(
  what: () => string,
  check: () => Promise<T | null | undefined | false>,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await sleep(50);
  }
}

interface JobView {
  id: string;
  status: string;
  output?: unknown;
  workerId?: string;
  retries?: number;
}

describe('runpod-python workers reporting the jobs they hold', { skip: pythonSdkSkipReason() }, () => {
  const clock = new FakeClock(Date.now());
  let listening: ListeningServer;
  let server: RunningServer;
  let key: string;
  let workerKey: string;
  let accountId: string;
  let templateId: string;
  const processes: PythonProcess[] = [];
  /** The takes and pings the server handled, as the worker side saw them. */
  const takes: Array<{ workerId: string; holdsNone: boolean; taken: string[] }> = [];
  const pings: Array<{ workerId: string; listed: readonly string[]; requeued: string[] }> = [];

  const call = async (method: string, path: string, body?: unknown, auth = `Bearer ${key}`): Promise<any> => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    assert.ok(res.status === 200 || res.status === 204, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
    return res.status === 204 ? null : res.json();
  };
  const endpoint = async (name: string) =>
    (await server.services.endpoints.create(accountId, { name, templateId, gpuIds: 'ADA_24', workersMax: 0 })).id;
  const envOf = (endpointId: string, workerId: string) =>
    workerEnvironment({ publicUrl: server.url, endpointId, workerId, apiKey: workerKey, pingIntervalMs: 1_000 });
  const status = (ep: string, id: string) => call('GET', `/v2/${ep}/status/${id}`) as Promise<JobView>;
  const logs = () => processes.map((p) => p.output().slice(-2_000)).join('\n---\n');
  const until = (ep: string, id: string, what: string, check: (s: JobView) => boolean) =>
    eventually(
      () => `job ${id} ${what}; worker output:\n${logs()}`,
      async () => {
        const s = await status(ep, id);
        return check(s) ? s : null;
      },
    );
  /** A take as the SDK sends it (its URL from the environment, `&job_in_progress=` appended). */
  const sdkTake = async (ep: string, workerId: string, holds: boolean): Promise<string> => {
    const url = envOf(ep, workerId).RUNPOD_WEBHOOK_GET_JOB!.replace('$ID', workerId);
    const job = await call(
      'GET',
      `${url.slice(server.url.length)}&job_in_progress=${holds ? 1 : 0}`,
      undefined,
      workerKey,
    );
    assert.ok(job?.id, 'a job was queued');
    return job.id as string;
  };

  before(async () => {
    // The timekeeper idles: a worker falling silent never moves a job here.
    listening = await startListeningServer(
      {
        jobs: {
          timekeeperIntervalMs: 3_600_000,
          takeWaitMs: 2_000,
          stopWaitMs: 2_000,
          heartbeatTimeoutMs: HEARTBEAT_TIMEOUT,
        },
      },
      { clock },
    );
    server = listening.server;
    const worker = server.services.jobs.worker;
    const take = worker.take.bind(worker);
    worker.take = async (endpointId, workerId, options) => {
      const taken = await take(endpointId, workerId, options);
      takes.push({ workerId, holdsNone: options?.holdsNone === true, taken: taken.map((j) => j.id) });
      return taken;
    };
    const pinged = worker.pinged.bind(worker);
    worker.pinged = async (endpointId, workerId, listed) => {
      const moved = await pinged(endpointId, workerId, listed);
      pings.push({ workerId, listed, requeued: moved.requeued });
      return moved;
    };
    const account = await server.services.accounts.createAccount('python-restarts');
    accountId = account.id;
    key = (await server.services.accounts.createKey(accountId, { scope: 'write' })).key;
    workerKey = (await server.services.accounts.createKey(accountId, { scope: 'write', name: 'python workers' })).key;
    templateId = (
      await server.services.templates.create(accountId, {
        name: 'py',
        imageName: 'python-worker:dev',
        isServerless: true,
      })
    ).id;
  });

  after(async () => {
    await Promise.all(processes.map((p) => p.kill()));
    await listening?.close();
  });

  test('a worker killed -9 mid-job and started again with the same RUNPOD_POD_ID gets its job back, as a retry, and completes it', async () => {
    const ep = await endpoint('restart');
    const env = { ...envOf(ep, 'py-restart'), PY_HANDLER_KIND: 'async' };
    const first = spawnPython(HANDLER, [], env, listening.dataDir);
    processes.push(first);
    const id = (await call('POST', `/v2/${ep}/run`, { input: { once: 600 } })).id as string;
    await until(ep, id, 'to start', (s) => s.status === 'IN_PROGRESS' && s.output === 'started');
    await first.kill();
    const held = await status(ep, id);
    assert.deepEqual([held.status, held.workerId, held.retries ?? 0], ['IN_PROGRESS', 'py-restart', 0], 'stranded');

    const again = spawnPython(HANDLER, [], env, listening.dataDir);
    processes.push(again);
    const done = await until(ep, id, 'to complete', (s) => s.status === 'COMPLETED');
    assert.deepEqual(done.output, { second_run: true, worker: 'py-restart' });
    assert.equal(done.retries, 1, 'counted as a retry, as for a lost worker');
    const handedOut = takes.filter((t) => t.taken.includes(id));
    assert.deepEqual(
      handedOut.map((t) => [t.workerId, t.holdsNone]),
      [
        ['py-restart', true],
        ['py-restart', true],
      ],
      "handed out twice: the restarted worker's take said it holds no job, and got it back",
    );
    assert.deepEqual(
      pings.filter((p) => p.requeued.includes(id)),
      [],
      'no ping gave it back: the job was taken moments ago by the clock',
    );
  });

  test("the SDK's heartbeat, listing the job its worker took last, gives back the one it took before and dropped", async () => {
    const ep = await endpoint('anchored');
    const [dropped, kept] = [
      (await call('POST', `/v2/${ep}/run`, { input: { n: 1 } })).id as string,
      (await call('POST', `/v2/${ep}/run`, { input: { n: 2 } })).id as string,
    ];
    assert.equal(await sdkTake(ep, 'py-beat', false), dropped);
    assert.equal(await sdkTake(ep, 'py-beat', true), kept);
    const beat = spawnPython(HEARTBEAT, [kept], envOf(ep, 'py-beat'), listening.dataDir);
    processes.push(beat);
    const back = await until(ep, dropped, 'to go back to the queue', (s) => s.status === 'IN_QUEUE');
    assert.equal(back.retries, 1);
    const ping = pings.find((p) => p.workerId === 'py-beat' && p.requeued.includes(dropped));
    assert.deepEqual(ping?.listed, [kept], 'the ping that gave it back listed the other job');
    assert.deepEqual(
      [(await status(ep, kept)).status, (await status(ep, kept)).workerId],
      ['IN_PROGRESS', 'py-beat'],
      'the job it listed stays',
    );
    await beat.kill();
  });

  test("the SDK's heartbeat listing nothing leaves a job just taken, and gives it back once it was taken longer than the heartbeat timeout ago", async () => {
    const ep = await endpoint('empty');
    const id = (await call('POST', `/v2/${ep}/run`, { input: { n: 3 } })).id as string;
    const beat = spawnPython(HEARTBEAT, [], envOf(ep, 'py-idle'), listening.dataDir);
    processes.push(beat);
    await eventually(
      () => `a first ping of py-idle; output:\n${beat.output()}`,
      async () => pings.some((p) => p.workerId === 'py-idle'),
    );
    assert.equal(await sdkTake(ep, 'py-idle', false), id);
    // Pings built before the take, or since, arrive: none gives the job back while it is fresh.
    const seen = pings.length;
    await eventually(
      () => `two more pings of py-idle; output:\n${beat.output()}`,
      async () => pings.slice(seen).filter((p) => p.workerId === 'py-idle').length >= 2,
    );
    assert.deepEqual(
      pings.filter((p) => p.workerId === 'py-idle').flatMap((p) => p.listed),
      [],
    );
    assert.equal((await status(ep, id)).status, 'IN_PROGRESS');
    clock.advance(HEARTBEAT_TIMEOUT + 1);
    const back = await until(ep, id, 'to go back to the queue', (s) => s.status === 'IN_QUEUE');
    assert.equal(back.retries, 1);
    await beat.kill();
  });
});
