// The cost of a Prometheus scrape (GET /metrics) with a million queued jobs.
//   node --import tsx bench/metrics-scrape.ts [--jobs 1000000] [--requests 1000]
// 1. A `gantry serve` child on a fresh SQLite data dir, metrics on: scrape latency against its
//    peer in the same run, GET /healthz (a bare route: no key, no store), sequential, interleaved.
// 2. Server stopped; 1,000,000 jobs inserted into an endpoint's queue in-process through
//    JobRows.insertMany (10,000 rows a transaction), as /run would store them.
// 3. The server started again on the same data: the same two measures, the gauge's figure, the
//    one background read of the store-held gauges (at start, then every metrics.refreshMs), and
//    GET /v2/{id}/health (exact counts from the store) for contrast.
// Goals: scrape p50 with 1M queued <= 2× scrape p50 on the empty store (a scrape reads no table);
// gantry_jobs_queued shows the million.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { printTable } from './support/processes.js';
import { percentile, startGantry, verdict, type Gantry } from './support/gantry.js';
import { httpClient } from './support/http-client.js';
import { fillQueue } from './support/queue-fill.js';

const { values } = parseArgs({
  options: { jobs: { type: 'string', default: '1000000' }, requests: { type: 'string', default: '1000' } },
});
const JOBS = Number(values.jobs);
const REQUESTS = Number(values.requests);
const BATCH = 10_000;
const WARMUP = 50;
const TOKEN = 'bench-metrics-token-0123456789';
const CONFIG = {
  quotas: { queuedJobs: 1e9, storedJobBytes: 1e12 },
  metrics: { token: TOKEN, refreshMs: 60_000 },
};

interface Latency {
  p50: number;
  p99: number;
  bytes: number;
}

/** p50/p99 (ms) of sequential scrapes and of /healthz, interleaved so both see the same machine. */
async function measure(gantry: Gantry): Promise<{ scrape: Latency; peer: Latency; text: string }> {
  const scraper = httpClient(gantry.url, { authorization: `Bearer ${TOKEN}` });
  const client = httpClient(gantry.url);
  const scrapes: number[] = [];
  const peers: number[] = [];
  let text = '';
  let peerBytes = 0;
  try {
    for (let i = 0; i < REQUESTS + WARMUP; i++) {
      let t = performance.now();
      const s = await scraper.send('GET', '/metrics');
      const scrapeMs = performance.now() - t;
      if (s.status !== 200) throw new Error(`/metrics answered ${s.status}: ${s.body}`);
      text = s.body;
      t = performance.now();
      const h = await client.send('GET', '/healthz');
      const peerMs = performance.now() - t;
      if (h.status !== 200) throw new Error(`/healthz answered ${h.status}`);
      peerBytes = h.body.length;
      if (i >= WARMUP) {
        scrapes.push(scrapeMs);
        peers.push(peerMs);
      }
    }
  } finally {
    scraper.close();
    client.close();
  }
  const stats = (a: number[], bytes: number): Latency => {
    const s = [...a].sort((x, y) => x - y);
    return { p50: percentile(s, 50), p99: percentile(s, 99), bytes };
  };
  return { scrape: stats(scrapes, text.length), peer: stats(peers, peerBytes), text };
}

/** A sample's value from the exposition text (the sum over its series matching `labels`). */
function sampleOf(text: string, name: string, labels = ''): number {
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(name) && (line[name.length] === ' ' || line[name.length] === '{') && line.includes(labels))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

const ms = (l: Latency) => `${l.p50.toFixed(2)} / ${l.p99.toFixed(2)} ms`;

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-bench-metrics-'));
  const rows: Array<Record<string, string | number>> = [];
  try {
    // 1. an empty store
    let gantry = await startGantry({ dataDir, config: CONFIG });
    let bigId: string;
    let empty: Awaited<ReturnType<typeof measure>>;
    try {
      bigId = await gantry.createEndpoint();
      empty = await measure(gantry);
    } finally {
      await gantry.stop();
    }

    // 2. a million jobs
    const insertSeconds = await fillQueue(dataDir, bigId, JOBS, BATCH);

    // 3. the server with a million queued
    gantry = await startGantry({ dataDir, config: CONFIG });
    try {
      const full = await measure(gantry);
      const client = httpClient(gantry.url, { authorization: `Bearer ${gantry.key}` });
      const t = performance.now();
      await client.send('GET', `/v2/${bigId}/health`);
      const healthMs = performance.now() - t;
      client.close();
      const queued = sampleOf(full.text, 'gantry_jobs_queued', `endpoint="${bigId}"`);
      const refreshMs = sampleOf(full.text, 'gantry_metrics_refresh_duration_seconds') * 1000;
      const ratio = full.scrape.p50 / empty.scrape.p50;
      rows.push(
        {
          measure: `insert ${JOBS.toLocaleString('en-US')} jobs in-process (JobRows.insertMany, ${BATCH}/tx)`,
          value: `${insertSeconds.toFixed(1)} s`,
          goal: '',
          verdict: '',
        },
        {
          measure: 'GET /healthz p50/p99, empty store (peer)',
          value: ms(empty.peer),
          goal: '',
          verdict: '',
        },
        {
          measure: `GET /metrics p50/p99, empty store (${(empty.scrape.bytes / 1024).toFixed(1)} KiB)`,
          value: ms(empty.scrape),
          goal: '',
          verdict: `${(empty.scrape.p50 / empty.peer.p50).toFixed(1)}× /healthz`,
        },
        {
          measure: 'GET /healthz p50/p99, 1M queued (peer)',
          value: ms(full.peer),
          goal: '',
          verdict: '',
        },
        {
          measure: `GET /metrics p50/p99, 1M queued (${(full.scrape.bytes / 1024).toFixed(1)} KiB)`,
          value: ms(full.scrape),
          goal: '<= 2× empty-store scrape p50',
          verdict: `${verdict(ratio <= 2)} (${ratio.toFixed(2)}×; ${(full.scrape.p50 / full.peer.p50).toFixed(1)}× /healthz)`,
        },
        {
          measure: 'gantry_jobs_queued of the endpoint',
          value: queued.toLocaleString('en-US'),
          goal: `= ${JOBS.toLocaleString('en-US')}`,
          verdict: verdict(queued === JOBS),
        },
        {
          measure: 'background read of the store-held gauges, 1M queued (at start, then every refreshMs)',
          value: `${refreshMs.toFixed(0)} ms`,
          goal: '',
          verdict: '',
        },
        {
          measure: 'GET /v2/{id}/health, 1M queued (exact counts from the store), one call',
          value: `${healthMs.toFixed(0)} ms`,
          goal: '',
          verdict: '',
        },
      );
    } finally {
      await gantry.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(
    `\nA Prometheus scrape with a million queued jobs (SQLite; ${REQUESTS} sequential scrapes and /healthz, interleaved; node ${process.version})\n`,
  );
  printTable(rows);
  if (rows.some((r) => String(r.verdict).startsWith('FAIL'))) process.exitCode = 1;
}

await main();
