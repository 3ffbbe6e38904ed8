// A million queued jobs: server memory and take latency.
//   node --import tsx bench/queue-1m.ts [--jobs 1000000] [--takes 1000]
// 1. A `gantry serve` child on a fresh SQLite data dir: take latency on an empty endpoint
//    (each sample: POST /run, then the timed GET job-take, so the queue holds one job) — the baseline.
// 2. Server stopped; 1,000,000 jobs inserted into a second endpoint's queue in-process through
//    JobRows.insertMany (10,000 rows a transaction), as /run would store them.
// 3. The server started again on the same data: its RSS (VmRSS of the server process, after the
//    takes below), and take latency on the endpoint with 1M queued vs the empty one again.
// Goals: server RSS <= 300 MB with 1M queued; take p50 with 1M queued <= 2× take p50 on an empty queue.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { printTable } from './support/processes.js';
import { percentile, startGantry, verdict, type Gantry } from './support/gantry.js';
import { httpClient } from './support/http-client.js';
import { fillQueue } from './support/queue-fill.js';

const { values } = parseArgs({
  options: { jobs: { type: 'string', default: '1000000' }, takes: { type: 'string', default: '1000' } },
});
const JOBS = Number(values.jobs);
const TAKES = Number(values.takes);
const BATCH = 10_000;

const sortedMs = (a: number[]) => [...a].sort((x, y) => x - y);

/** p50/p99 (ms) of `TAKES` sequential takes; `prepare` runs before each and is not timed. */
async function takeLatency(
  gantry: Gantry,
  endpointId: string,
  prepare?: () => Promise<void>,
): Promise<{ p50: number; p99: number }> {
  const client = httpClient(gantry.url, { authorization: `Bearer ${gantry.key}` });
  const samples: number[] = [];
  try {
    for (let i = 0; i < TAKES + 100; i++) {
      await prepare?.();
      const t = performance.now();
      const r = await client.send('GET', `/v2/${endpointId}/job-take/bench-taker`);
      const elapsed = performance.now() - t;
      if (r.status !== 200) throw new Error(`job-take answered ${r.status}: ${r.body}`);
      if (i >= 100) samples.push(elapsed);
    }
  } finally {
    client.close();
  }
  const s = sortedMs(samples);
  return { p50: percentile(s, 50), p99: percentile(s, 99) };
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-bench-1m-'));
  const rows: Array<Record<string, string | number>> = [];
  try {
    // 1. baseline
    let gantry = await startGantry({ dataDir, config: { quotas: { queuedJobs: 1e9, storedJobBytes: 1e12 } } });
    let emptyId: string;
    let bigId: string;
    let before: { p50: number; p99: number };
    try {
      emptyId = await gantry.createEndpoint();
      bigId = await gantry.createEndpoint();
      const client = httpClient(gantry.url, { authorization: `Bearer ${gantry.key}` });
      const submit = async () => void (await client.send('POST', `/v2/${emptyId}/run`, '{"input":{"prompt":"hello"}}'));
      before = await takeLatency(gantry, emptyId, submit);
      client.close();
    } finally {
      await gantry.stop();
    }

    // 2. a million jobs
    const insertSeconds = await fillQueue(dataDir, bigId, JOBS, BATCH);

    // 3. the server with a million queued
    gantry = await startGantry({ dataDir, config: { quotas: { queuedJobs: 1e9, storedJobBytes: 1e12 } } });
    try {
      const rssStarted = gantry.rssMb();
      const client = httpClient(gantry.url, { authorization: `Bearer ${gantry.key}` });
      const health = await client.json<{ jobs: { inQueue: number } }>('GET', `/v2/${bigId}/health`);
      const t = performance.now();
      await client.send('GET', `/v2/${bigId}/health`);
      const healthMs = performance.now() - t;
      const big = await takeLatency(gantry, bigId);
      const empty = await takeLatency(
        gantry,
        emptyId,
        async () => void (await client.send('POST', `/v2/${emptyId}/run`, '{"input":{"prompt":"hello"}}')),
      );
      client.close();
      const rss = gantry.rssMb();
      // against the lower of the two empty-queue figures, the stricter comparison
      const ratio = big.p50 / Math.min(before.p50, empty.p50);
      rows.push({
        measure: `insert ${JOBS.toLocaleString('en-US')} jobs in-process (JobRows.insertMany, ${BATCH}/tx)`,
        value: `${insertSeconds.toFixed(1)} s (${Math.round(JOBS / insertSeconds).toLocaleString('en-US')}/s)`,
        goal: '',
        verdict: '',
      });
      rows.push({
        measure: 'queued, per /health',
        value: health.body.jobs.inQueue.toLocaleString('en-US'),
        goal: `>= ${JOBS.toLocaleString('en-US')}`,
        verdict: verdict(health.body.jobs.inQueue >= JOBS - TAKES - 100),
      });
      rows.push({
        measure: 'server RSS just after start, 1M queued',
        value: `${rssStarted.toFixed(0)} MB`,
        goal: '',
        verdict: '',
      });
      rows.push({
        measure: 'server RSS after the takes, 1M queued',
        value: `${rss.toFixed(0)} MB`,
        goal: '<= 300 MB',
        verdict: verdict(rss <= 300),
      });
      rows.push({
        measure: 'take p50/p99, empty queue, fresh store (baseline)',
        value: `${before.p50.toFixed(2)} / ${before.p99.toFixed(2)} ms`,
        goal: '',
        verdict: '',
      });
      rows.push({
        measure: 'take p50/p99, empty queue, 1M rows in the store',
        value: `${empty.p50.toFixed(2)} / ${empty.p99.toFixed(2)} ms`,
        goal: '',
        verdict: '',
      });
      rows.push({
        measure: 'take p50/p99, 1M queued',
        value: `${big.p50.toFixed(2)} / ${big.p99.toFixed(2)} ms`,
        goal: '<= 2× lower empty p50',
        verdict: `${verdict(ratio <= 2)} (${ratio.toFixed(2)}×)`,
      });
      rows.push({
        measure: 'GET /health with 1M queued (exact counts, read from indexes)',
        value: `${healthMs.toFixed(0)} ms`,
        goal: '',
        verdict: '',
      });
    } finally {
      await gantry.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(`\nA million queued jobs (SQLite; ${TAKES} sequential takes per measure; node ${process.version})\n`);
  printTable(rows);
  if (rows.some((r) => String(r.verdict).startsWith('FAIL'))) process.exitCode = 1;
}

await main();
