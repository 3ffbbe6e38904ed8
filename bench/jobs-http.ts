// The job API over real HTTP, against a `gantry serve` child process:
//   node --import tsx bench/jobs-http.ts [--seconds 8] [--connections 64] [--jobs 20000] [--clients 128] [--workers 4] [--concurrency 64]
// 1. ingest: POST /v2/{id}/run with autocannon against the bare Fastify POST of
//    bench/support/bare-server.ts, measured in the same run. Goal: >= 70% of the bare route.
//    Every 200 is sent only after its job's group-commit transaction committed; checked here by
//    killing the server with SIGKILL (no graceful flush) and counting the endpoint's rows in the
//    store: there must be at least as many as 200s (at most `connections` more: requests in flight
//    when autocannon stopped counting).
// 2. end to end: client loops (node:http keep-alive) POST /run then GET /status-sync/{id} until COMPLETED, while in-process
//    workers built on the Node worker library (`serve()`, batch takes) take and complete the jobs.
//    Goal: >= 5,000 jobs/s on SQLite.
// SQLite always; PostgreSQL too when GANTRY_TEST_DATABASE_URL is set (a private schema, dropped after).
// The key is rate-limit exempt, so the spec 8.1 limits do not cap the load.
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import autocannon from 'autocannon';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { printTable, startChild } from './support/processes.js';
import { loops, startGantry, verdict, type Gantry } from './support/gantry.js';
import { httpClient } from './support/http-client.js';
import { workerEnvironment } from '../src/serverless/worker-env.js';
import { serve, type WorkerHandle } from '../src/worker/index.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '64' },
    jobs: { type: 'string', default: '20000' },
    clients: { type: 'string', default: '128' },
    workers: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '64' },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const N = Number(values.jobs);
const CLIENTS = Number(values.clients);
const WORKERS = Number(values.workers);
const CONCURRENCY = Number(values.concurrency);
const root = join(import.meta.dirname, '..');
const pgUrl = process.env.GANTRY_TEST_DATABASE_URL;

const runBody = JSON.stringify({ input: { prompt: 'a photo of an astronaut riding a horse', max_tokens: 64 } });
const rows: Array<Record<string, string | number>> = [];
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

interface Load {
  rps: number;
  ok: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(opts: autocannon.Options): Promise<Load> {
  const r = await autocannon({ connections, duration: seconds, ...opts });
  return { rps: r.requests.average, ok: r['2xx'], p50: r.latency.p50, p99: r.latency.p99, errors: r.non2xx + r.errors + r.timeouts };
}

/** Submit → take → done → COMPLETED over HTTP; answers jobs/s. */
async function endToEnd(gantry: Gantry): Promise<{ rate: number; completed: number; seconds: number }> {
  const endpointId = await gantry.createEndpoint();
  const handles: WorkerHandle[] = Array.from({ length: WORKERS }, (_, w) =>
    serve(async (job) => ({ echoed: (job.input as { i: number }).i }), {
      env: workerEnvironment({ publicUrl: gantry.url, endpointId, workerId: `bench-w${w}`, apiKey: gantry.key, pingIntervalMs: 10_000 }),
      concurrency: CONCURRENCY,
      handleSignals: false,
      shutdownGraceMs: 1_000,
    }),
  );
  const client = httpClient(gantry.url, { authorization: `Bearer ${gantry.key}` }, CLIENTS);
  const base = `/v2/${endpointId}`;
  let completed = 0;
  const job = async (i: number) => {
    const run = await client.json<{ id: string }>('POST', `${base}/run`, { input: { i } });
    if (run.status !== 200) throw new Error(`/run answered ${run.status}`);
    const done = await client.json<{ status: string; output?: { echoed: number } }>('GET', `${base}/status-sync/${run.body.id}?wait=60000`);
    if (done.body.status === 'COMPLETED' && done.body.output?.echoed === i) completed++;
  };
  // a short warm-up (JITs, connection pools), then the measured run
  await loops(Math.min(2000, N), CLIENTS, job);
  completed = 0;
  const s = await loops(N, CLIENTS, job);
  await Promise.all(handles.map((h) => h.stop()));
  client.close();
  return { rate: N / s, completed, seconds: s };
}

async function ingest(gantry: Gantry, store: string, bare: Load): Promise<{ endpointId: string; ok: number }> {
  const warmEndpoint = await gantry.createEndpoint();
  const endpointId = await gantry.createEndpoint();
  const opts = (id: string): autocannon.Options => ({ url: `${gantry.url}/v2/${id}/run`, method: 'POST', headers: gantry.headers, body: runBody });
  await autocannon({ ...opts(warmEndpoint), connections, duration: 2 });
  const run = await load(opts(endpointId));
  const ratio = run.rps / bare.rps;
  rows.push({
    store,
    measure: 'POST /v2/{id}/run (ingest)',
    value: `${fmt(run.rps)} req/s`,
    'p50/p99 ms': `${run.p50}/${run.p99}`,
    errors: run.errors,
    goal: '>= 70% of bare POST',
    result: `${(ratio * 100).toFixed(0)}%`,
    verdict: verdict(ratio >= 0.7 && run.errors === 0),
  });
  return { endpointId, ok: run.ok };
}

function durabilityRow(store: string, ok: number, stored: number) {
  rows.push({
    store,
    measure: 'jobs stored after SIGKILL vs 200s',
    value: `${fmt(stored)} stored / ${fmt(ok)} acked`,
    'p50/p99 ms': '',
    errors: '',
    goal: `acked <= stored <= acked + ${connections}`,
    result: `+${stored - ok}`,
    verdict: verdict(stored >= ok && stored - ok <= connections),
  });
}

async function main() {
  const bare = await startChild(['--import', 'tsx', join(root, 'bench/support/bare-server.ts')], {}, /bare listening on (\S+)/);
  let bareLoad: Load;
  try {
    const opts: autocannon.Options = { url: `${bare.url}/bare`, method: 'POST', headers: { 'content-type': 'application/json' }, body: runBody };
    await autocannon({ ...opts, connections, duration: 2 });
    bareLoad = await load(opts);
  } finally {
    await bare.stop();
  }
  rows.push({ store: '-', measure: 'bare Fastify POST (peer)', value: `${fmt(bareLoad.rps)} req/s`, 'p50/p99 ms': `${bareLoad.p50}/${bareLoad.p99}`, errors: bareLoad.errors, goal: '', result: '', verdict: '' });

  // SQLite
  {
    const gantry = await startGantry();
    try {
      const { endpointId, ok } = await ingest(gantry, 'sqlite', bareLoad);
      const e2e = await endToEnd(gantry);
      rows.push({
        store: 'sqlite',
        measure: `end to end over HTTP (${N} jobs)`,
        value: `${fmt(e2e.rate)} jobs/s`,
        'p50/p99 ms': '',
        errors: N - e2e.completed,
        goal: '>= 5,000 jobs/s',
        result: `${e2e.seconds.toFixed(1)} s`,
        verdict: verdict(e2e.rate >= 5000 && e2e.completed === N),
      });
      await gantry.kill();
      const db = new SqliteDatabase(join(gantry.dataDir, 'gantry.db'), { readonly: true });
      const stored = (db.prepare('SELECT count(*) AS n FROM jobs WHERE endpoint_id = ?').get(endpointId) as { n: number }).n;
      db.close();
      durabilityRow('sqlite', ok, stored);
    } finally {
      await gantry.stop();
    }
  }

  // PostgreSQL
  if (pgUrl) {
    const schema = `bench_jobs_http_${process.pid}`;
    const gantry = await startGantry({ databaseUrl: pgUrl, schema, config: { jobs: { commitConcurrency: 4 } } });
    try {
      const { endpointId, ok } = await ingest(gantry, 'postgres', bareLoad);
      const e2e = await endToEnd(gantry);
      rows.push({
        store: 'postgres',
        measure: `end to end over HTTP (${N} jobs)`,
        value: `${fmt(e2e.rate)} jobs/s`,
        'p50/p99 ms': '',
        errors: N - e2e.completed,
        goal: '(reported)',
        result: `${e2e.seconds.toFixed(1)} s`,
        verdict: '',
      });
      await gantry.kill();
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      try {
        const r = await c.query(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE endpoint_id = $1`, [endpointId]);
        durabilityRow('postgres', ok, Number(r.rows[0].n));
      } finally {
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await c.end();
      }
    } finally {
      await gantry.stop();
    }
  }

  console.log(
    `\nJob API over HTTP: ingest ${seconds}s × ${connections} connections; end to end ${N} jobs, ${CLIENTS} client loops, ` +
      `${WORKERS} serve() workers × concurrency ${CONCURRENCY} (node ${process.version})${pgUrl ? '' : '; PostgreSQL skipped (GANTRY_TEST_DATABASE_URL unset)'}\n`,
  );
  printTable(rows);
  if (rows.some((r) => r.verdict === 'FAIL')) process.exitCode = 1;
}

await main();
