// Latency of the job hot path with a warm worker (already long-polling), over real HTTP:
//   node --import tsx bench/runsync-latency.ts [--requests 2000] [--dispatches 1000] [--rounds 3] [--deployed-requests 1000] [--only deployed] [--profile DIR]
// A real server (startServer: SQLite, HTTP on a loopback port), one Node worker (`serve()`,
// concurrency 1) and the client all run in this process, so one clock times everything.
// 1. POST /v2/{id}/runsync, one request at a time: client round trip until the COMPLETED answer.
//    Goals: p50 <= 2 ms, p99 <= 10 ms.
// 2. dispatch: POST /run while the worker's job-take waits; from the job's commit (the
//    `job:queued` event, emitted right after the transaction) to the worker's handler being
//    called with it (the take reply received and parsed). Goal: p50 <= 1 ms.
// 3. deployed shape: `gantry serve` in its own process, each worker in its own process launched by
//    the autoscaler through the process runtime (an endpoint with workersMin 1): one on Gantry's
//    worker library (bench/support/library-worker.ts), one speaking like the Python SDK without
//    its sleeps (bench/support/sdk-like-worker.ts: fetch, form content type). `--rounds` alternating
//    rounds of the bare floor, the library worker and the SDK-like worker; medians of the rounds'
//    p50 and p99. Goals: p50 <= 2 ms, p99 <= 10 ms for both workers. The server logs at `info`,
//    its default (BENCH_LOG_LEVEL=warn to compare). Each worker stamps when its handler got the job,
//    splitting a call into "send → worker has the job" and "worker → client has the answer"; server
//    and worker CPU per call, and the bare server's per request, are printed beside.
// The client uses node:http with keep-alive (bench/support/http-client.ts); the worker library uses
// node:http too (src/worker/http-call.ts). For scale, the same client's round trip to the bare Fastify POST
// (bench/support/bare-server.ts) is measured too: /runsync is three HTTP exchanges in a row
// (client → server, take reply → worker, worker's result → server) plus three commits.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { printTable, startChild } from './support/processes.js';
import { freePort, percentile, startGantry, verdict } from './support/gantry.js';
import { httpClient } from './support/http-client.js';
import { loadConfig } from '../src/config.js';
import { startServer, type RunningServer } from '../src/main.js';
import { workerEnvironment } from '../src/serverless/worker-env.js';
import { serve } from '../src/worker/index.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    dispatches: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
    'deployed-requests': { type: 'string', default: '1000' },
    only: { type: 'string', default: 'all' },
    /** Writes CPU profiles of the deployed server and workers (node --cpu-prof) into this directory. */
    profile: { type: 'string' },
  },
});
const REQUESTS = Number(values.requests);
const DISPATCHES = Number(values.dispatches);
const ROUNDS = Number(values.rounds);
const DEPLOYED_REQUESTS = Number(values['deployed-requests']);
const root = join(import.meta.dirname, '..');

const sorted = (a: number[]) => [...a].sort((x, y) => x - y);
const ms = (n: number) => n.toFixed(2);

async function sequential(count: number, once: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await once(i);
    out.push(performance.now() - t);
  }
  return sorted(out);
}

/** Resolves once `probe` answers true, checking on every turn of the event loop. */
async function until(probe: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!probe()) {
    if (performance.now() > deadline) throw new Error('timed out waiting for the worker to long-poll');
    await new Promise((r) => setImmediate(r));
  }
}

const median = (a: number[]) => sorted(a)[Math.floor(a.length / 2)]!;

interface Marked {
  /** Client round trip, ms. */
  total: number;
  /** Client's send → the worker's handler has the job (submit, commit, take reply), ms. */
  toWorker: number;
  /** Worker's handler → the client has the answer (result post, commit, runsync reply), ms. */
  back: number;
  /** The worker process's CPU time so far, µs. */
  workerCpuUs: number;
}

/** Part 3: server and workers each in their own process, the workers launched by the autoscaler. */
async function deployed(rows: Array<Record<string, string | number>>): Promise<void> {
  const prof = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : [];
  const node = (script: string) => ({
    command: [process.execPath, ...prof, '--import', 'tsx', join(root, 'bench/support', script)],
    cwd: root,
  });
  const gantry = await startGantry({
    port: await freePort(),
    nodeArgs: prof,
    // as `gantry serve` runs by default: request lines at info (set BENCH_LOG_LEVEL to compare)
    env: { GANTRY_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info' },
    config: {
      images: {
        'bench-library-worker:dev': node('library-worker.ts'),
        'bench-sdk-like-worker:dev': node('sdk-like-worker.ts'),
      },
    },
  });
  const bare = await startChild(
    ['--import', 'tsx', join(root, 'bench/support/bare-server.ts')],
    {},
    /bare listening on (\S+)/,
  );
  const client = httpClient(gantry.url, { authorization: `Bearer ${gantry.key}` });
  const bareClient = httpClient(bare.url);
  const wall = () => performance.timeOrigin + performance.now();
  try {
    const shapes = {
      library: await gantry.createEndpoint({
        imageName: 'bench-library-worker:dev',
        workersMin: 1,
        workersMax: 1,
        idleTimeout: 3600,
      }),
      'sdk-like': await gantry.createEndpoint({
        imageName: 'bench-sdk-like-worker:dev',
        workersMin: 1,
        workersMax: 1,
        idleTimeout: 3600,
      }),
    };
    type Shape = keyof typeof shapes;
    const wrong: Record<Shape, number> = { library: 0, 'sdk-like': 0 };
    const runsync = async (name: Shape, i: number): Promise<Marked> => {
      const sent = wall();
      const res = await client.json<{ status: string; output?: { echoed: number; at: number; cpuUs: number } }>(
        'POST',
        `/v2/${shapes[name]}/runsync?wait=60000`,
        { input: { i } },
      );
      const got = wall();
      const out = res.body.output;
      if (res.status !== 200 || res.body.status !== 'COMPLETED' || out?.echoed !== i) wrong[name]++;
      return {
        total: got - sent,
        toWorker: (out?.at ?? NaN) - sent,
        back: got - (out?.at ?? NaN),
        workerCpuUs: out?.cpuUs ?? NaN,
      };
    };
    const series = async (name: Shape, n: number) => {
      const serverCpu0 = gantry.cpuMs();
      const marks: Marked[] = [];
      for (let i = 0; i < n; i++) marks.push(await runsync(name, i));
      const serverCpuUs = ((gantry.cpuMs() - serverCpu0) * 1000) / n;
      const workerCpuUs = (marks.at(-1)!.workerCpuUs - marks[0]!.workerCpuUs) / (n - 1);
      return { marks, serverCpuUs, workerCpuUs };
    };
    const bareOnce = () => bareClient.send('POST', '/bare', '{"input":{"i":0}}').then(() => undefined);
    // the first job waits for the autoscaler to launch the worker; then warm up
    for (const name of Object.keys(shapes) as Shape[]) {
      await runsync(name, 0);
      await series(name, 500);
      wrong[name] = 0;
    }
    await sequential(500, bareOnce);
    type Round = {
      p50: number;
      p99: number;
      toWorker50: number;
      toWorker99: number;
      back50: number;
      back99: number;
      serverCpuUs: number;
      workerCpuUs: number;
    };
    const per: Record<'bare' | Shape, Round[]> = { bare: [], library: [], 'sdk-like': [] };
    for (let r = 0; r < ROUNDS; r++) {
      const bareCpu0 = bare.cpuMs();
      const t = await sequential(DEPLOYED_REQUESTS, bareOnce);
      const bareCpuUs = ((bare.cpuMs() - bareCpu0) * 1000) / DEPLOYED_REQUESTS;
      per.bare.push({
        p50: percentile(t, 50),
        p99: percentile(t, 99),
        toWorker50: NaN,
        toWorker99: NaN,
        back50: NaN,
        back99: NaN,
        serverCpuUs: bareCpuUs,
        workerCpuUs: NaN,
      });
      for (const name of Object.keys(shapes) as Shape[]) {
        const { marks, serverCpuUs, workerCpuUs } = await series(name, DEPLOYED_REQUESTS);
        const [total, toWorker, back] = [
          sorted(marks.map((m) => m.total)),
          sorted(marks.map((m) => m.toWorker)),
          sorted(marks.map((m) => m.back)),
        ];
        per[name].push({
          p50: percentile(total, 50),
          p99: percentile(total, 99),
          toWorker50: percentile(toWorker, 50),
          toWorker99: percentile(toWorker, 99),
          back50: percentile(back, 50),
          back99: percentile(back, 99),
          serverCpuUs,
          workerCpuUs,
        });
      }
    }
    const med = (name: 'bare' | Shape, f: (r: Round) => number) => median(per[name].map(f));
    const list = (name: 'bare' | Shape, f: (r: Round) => number) => per[name].map((r) => ms(f(r))).join('/');
    rows.push({
      measure: 'deployed: bare Fastify POST round trip (floor)',
      p50: ms(med('bare', (r) => r.p50)),
      p99: ms(med('bare', (r) => r.p99)),
      goal: '',
      verdict: '',
      rounds: `p50 ${list('bare', (r) => r.p50)}; CPU µs/request ${med('bare', (r) => r.serverCpuUs).toFixed(0)}`,
    });
    for (const name of Object.keys(shapes) as Shape[]) {
      const p50 = med(name, (r) => r.p50);
      const p99 = med(name, (r) => r.p99);
      rows.push({
        measure: `deployed: POST /runsync, ${name} worker process (${wrong[name]} not COMPLETED)`,
        p50: ms(p50),
        p99: ms(p99),
        goal: 'p50 <= 2, p99 <= 10',
        verdict: verdict(p50 <= 2 && p99 <= 10 && wrong[name] === 0),
        rounds: `p50 ${list(name, (r) => r.p50)}; p99 ${list(name, (r) => r.p99)}`,
      });
      rows.push({
        measure: `  ${name}: client send → worker handler has the job`,
        p50: ms(med(name, (r) => r.toWorker50)),
        p99: ms(med(name, (r) => r.toWorker99)),
        goal: '',
        verdict: '',
        rounds: '',
      });
      rows.push({
        measure: `  ${name}: worker handler → client has the answer`,
        p50: ms(med(name, (r) => r.back50)),
        p99: ms(med(name, (r) => r.back99)),
        goal: '',
        verdict: '',
        rounds: `CPU µs/runsync: server ${med(name, (r) => r.serverCpuUs).toFixed(0)}, worker ${med(name, (r) => r.workerCpuUs).toFixed(0)}`,
      });
    }
  } finally {
    client.close();
    bareClient.close();
    await bare.stop();
    await gantry.stop();
  }
}

async function main() {
  const rows: Array<Record<string, string | number>> = [];
  if (values.only === 'deployed') {
    await deployed(rows);
    console.log(
      `\nJob latency over HTTP (ms), one request at a time: deployed shape, ${ROUNDS} alternating rounds of ${DEPLOYED_REQUESTS} (node ${process.version})\n`,
    );
    printTable(rows);
    if (rows.some((r) => r.verdict === 'FAIL')) process.exitCode = 1;
    return;
  }

  // the HTTP floor: a bare Fastify POST, same client, same body size
  const bare = await startChild(
    ['--import', 'tsx', join(root, 'bench/support/bare-server.ts')],
    {},
    /bare listening on (\S+)/,
  );
  try {
    const client = httpClient(bare.url);
    const post = () => client.send('POST', '/bare', '{"input":{"i":0}}').then(() => undefined);
    await sequential(500, post);
    const t = await sequential(REQUESTS, post);
    client.close();
    rows.push({
      measure: 'bare Fastify POST round trip (floor)',
      p50: ms(percentile(t, 50)),
      p99: ms(percentile(t, 99)),
      goal: '',
      verdict: '',
    });
  } finally {
    await bare.stop();
  }

  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-bench-runsync-'));
  const config = loadConfig({ env: { GANTRY_DATA_DIR: dataDir, GANTRY_LOG_LEVEL: 'silent' }, flags: { port: 0 } });
  const server: RunningServer = await startServer(config, { logger: pino({ level: 'silent' }), print: () => {} });
  const { services } = server;
  const account = await services.accounts.createAccount('bench');
  const key = (await services.accounts.createKey(account.id, { scope: 'write', rateLimitExempt: true })).key;
  const template = await services.templates.create(account.id, {
    name: 'bench',
    imageName: 'bench-worker:dev',
    isServerless: true,
  });
  const endpointId = (
    await services.endpoints.create(account.id, {
      name: 'bench',
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMin: 0,
      workersMax: 0,
    })
  ).id;

  const queuedAt = new Map<string, number>();
  const handledAt = new Map<string, number>();
  const off = services.events.on('job:queued', (e) => void queuedAt.set(e.jobId, performance.now()));
  const worker = serve(
    (job) => {
      handledAt.set(job.id, performance.now());
      return { echoed: (job.input as { i: number }).i };
    },
    {
      env: workerEnvironment({
        publicUrl: server.url,
        endpointId,
        workerId: 'bench-worker',
        apiKey: key,
        pingIntervalMs: 10_000,
      }),
      concurrency: 1,
      handleSignals: false,
      shutdownGraceMs: 1000,
    },
  );
  const client = httpClient(server.url, { authorization: `Bearer ${key}` });
  const base = `/v2/${endpointId}`;
  const polling = () => services.jobs.signals.waiting('work', endpointId) > 0;
  try {
    // 1. runsync
    let wrong = 0;
    const runsync = async (i: number) => {
      const res = await client.json<{ status: string; output?: { echoed: number } }>(
        'POST',
        `${base}/runsync?wait=10000`,
        { input: { i } },
      );
      const view = res.body;
      if (res.status !== 200 || view.status !== 'COMPLETED' || view.output?.echoed !== i) wrong++;
    };
    await until(polling);
    await sequential(300, runsync);
    wrong = 0;
    const t = await sequential(REQUESTS, runsync);
    rows.push({
      measure: `POST /runsync, warm worker (${REQUESTS} sequential, ${wrong} not COMPLETED)`,
      p50: ms(percentile(t, 50)),
      p99: ms(percentile(t, 99)),
      goal: 'p50 <= 2, p99 <= 10',
      verdict: verdict(percentile(t, 50) <= 2 && percentile(t, 99) <= 10 && wrong === 0),
    });

    // 2. dispatch: each /run is sent only once the worker's take is waiting
    const submitRoundTrip: number[] = [];
    const dispatch: number[] = [];
    for (let i = 0; i < DISPATCHES + 100; i++) {
      await until(polling);
      const t0 = performance.now();
      const { id } = (await client.json<{ id: string }>('POST', `${base}/run`, { input: { i } })).body;
      const t1 = performance.now();
      await until(() => handledAt.has(id));
      if (i < 100) continue; // warm-up
      submitRoundTrip.push(t1 - t0);
      dispatch.push(handledAt.get(id)! - queuedAt.get(id)!);
    }
    const d = sorted(dispatch);
    const s = sorted(submitRoundTrip);
    rows.push({
      measure: `POST /run round trip (${DISPATCHES} sequential)`,
      p50: ms(percentile(s, 50)),
      p99: ms(percentile(s, 99)),
      goal: '',
      verdict: '',
    });
    rows.push({
      measure: 'dispatch: committed → worker handler called',
      p50: ms(percentile(d, 50)),
      p99: ms(percentile(d, 99)),
      goal: 'p50 <= 1',
      verdict: verdict(percentile(d, 50) <= 1),
    });
  } finally {
    off();
    client.close();
    await worker.stop();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  if (values.only === 'all') await deployed(rows);
  console.log(
    `\nJob latency over HTTP (ms), one request at a time; parts 1-2: server, worker and client in one process; deployed: each its own process (node ${process.version})\n`,
  );
  printTable(rows);
  if (rows.some((r) => r.verdict === 'FAIL')) process.exitCode = 1;
}

await main();
