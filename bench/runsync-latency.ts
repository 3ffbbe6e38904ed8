// Latency of the job hot path with a warm worker (already long-polling), over real HTTP:
//   node --import tsx bench/runsync-latency.ts [--requests 2000] [--dispatches 1000]
// A real server (startServer: SQLite, HTTP on a loopback port), one Node worker (`serve()`,
// concurrency 1) and the client all run in this process, so one clock times everything.
// 1. POST /v2/{id}/runsync, one request at a time: client round trip until the COMPLETED answer.
//    Goals: p50 <= 2 ms, p99 <= 10 ms.
// 2. dispatch: POST /run while the worker's job-take waits; from the job's commit (the
//    `job:queued` event, emitted right after the transaction) to the worker's handler being
//    called with it (the take reply received and parsed). Goal: p50 <= 1 ms.
// The client uses node:http with keep-alive (bench/support/http-client.ts); the worker library uses
// fetch. For scale, the same client's round trip to the bare Fastify POST
// (bench/support/bare-server.ts) is measured too: /runsync is three HTTP exchanges in a row
// (client → server, take reply → worker, worker's result → server) plus three commits.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { printTable, startChild } from './support/processes.js';
import { percentile, verdict } from './support/gantry.js';
import { httpClient } from './support/http-client.js';
import { loadConfig } from '../src/config.js';
import { startServer, type RunningServer } from '../src/main.js';
import { workerEnvironment } from '../src/serverless/worker-env.js';
import { serve } from '../src/worker/index.js';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '2000' }, dispatches: { type: 'string', default: '1000' } } });
const REQUESTS = Number(values.requests);
const DISPATCHES = Number(values.dispatches);
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

async function main() {
  const rows: Array<Record<string, string | number>> = [];

  // the HTTP floor: a bare Fastify POST, same client, same body size
  const bare = await startChild(['--import', 'tsx', join(root, 'bench/support/bare-server.ts')], {}, /bare listening on (\S+)/);
  try {
    const client = httpClient(bare.url);
    const post = () => client.send('POST', '/bare', '{"input":{"i":0}}').then(() => undefined);
    await sequential(500, post);
    const t = await sequential(REQUESTS, post);
    client.close();
    rows.push({ measure: 'bare Fastify POST round trip (floor)', p50: ms(percentile(t, 50)), p99: ms(percentile(t, 99)), goal: '', verdict: '' });
  } finally {
    await bare.stop();
  }

  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-bench-runsync-'));
  const config = loadConfig({ env: { GANTRY_DATA_DIR: dataDir, GANTRY_LOG_LEVEL: 'silent' }, flags: { port: 0 } });
  const server: RunningServer = await startServer(config, { logger: pino({ level: 'silent' }), print: () => {} });
  const { services } = server;
  const account = await services.accounts.createAccount('bench');
  const key = (await services.accounts.createKey(account.id, { scope: 'write', rateLimitExempt: true })).key;
  const template = await services.templates.create(account.id, { name: 'bench', imageName: 'bench-worker:dev', isServerless: true });
  const endpointId = (await services.endpoints.create(account.id, { name: 'bench', templateId: template.id, gpuIds: 'ADA_24', workersMin: 0, workersMax: 0 })).id;

  const queuedAt = new Map<string, number>();
  const handledAt = new Map<string, number>();
  const off = services.events.on('job:queued', (e) => void queuedAt.set(e.jobId, performance.now()));
  const worker = serve(
    (job) => {
      handledAt.set(job.id, performance.now());
      return { echoed: (job.input as { i: number }).i };
    },
    { env: workerEnvironment({ publicUrl: server.url, endpointId, workerId: 'bench-worker', apiKey: key, pingIntervalMs: 10_000 }), concurrency: 1, handleSignals: false, shutdownGraceMs: 1000 },
  );
  const client = httpClient(server.url, { authorization: `Bearer ${key}` });
  const base = `/v2/${endpointId}`;
  const polling = () => services.jobs.signals.waiting('work', endpointId) > 0;
  try {
    // 1. runsync
    let wrong = 0;
    const runsync = async (i: number) => {
      const res = await client.json<{ status: string; output?: { echoed: number } }>('POST', `${base}/runsync?wait=10000`, { input: { i } });
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
    rows.push({ measure: `POST /run round trip (${DISPATCHES} sequential)`, p50: ms(percentile(s, 50)), p99: ms(percentile(s, 99)), goal: '', verdict: '' });
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
  console.log(`\nJob latency over HTTP (ms), one request at a time; server, worker and client in one process (node ${process.version})\n`);
  printTable(rows);
  if (rows.some((r) => r.verdict === 'FAIL')) process.exitCode = 1;
}

await main();
