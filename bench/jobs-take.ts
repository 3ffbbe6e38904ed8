// The cost of the take group commit alone, per take, on the real stores, in process:
//   node --import tsx bench/jobs-take.ts [--jobs 20000] [--workers 64] [--rounds 2]
// Batches of `workers` takes of one job each (one per worker id), committed together as the
// takes' group commit does, then their results; until the queue is empty. Each take plain, or
// saying its worker holds no job (`job_in_progress=0`, as the Python SDK's idle takes do), which
// first gives back what the store says the worker holds (docs/serverless.md "Jobs a worker no
// longer holds") — here nothing, the common case. Prints CPU (this process) and wall time per
// take, the medians of `rounds` alternating rounds. SQLite always; PostgreSQL too when
// GANTRY_TEST_DATABASE_URL is set (a throwaway schema). CPU is the steadier figure on a shared
// machine; on PostgreSQL the wall time includes the database's work.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { printTable } from './support/processes.js';
import { newId } from '../src/domain/ids.js';
import { dropSchema, openDatabase } from '../src/store/database.js';
import type { NewJob } from '../src/store/job-record.js';
import { openJobStore } from '../src/store/job-store.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    workers: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '2' },
  },
});
const N = Number(values.jobs);
const W = Number(values.workers);
const ROUNDS = Number(values.rounds);
const pgUrl = process.env.GANTRY_TEST_DATABASE_URL;

async function round(dialect: 'sqlite' | 'postgres', holdsNone: boolean): Promise<{ cpuUs: number; wallUs: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-bench-take-'));
  const schema = `bench_${newId(8)}`;
  const url = dialect === 'postgres' ? pgUrl! : null;
  const db = await openDatabase({ url, dataDir, schema });
  try {
    const store = openJobStore(db);
    const now = Date.now();
    const jobs: NewJob[] = Array.from({ length: N }, (_, i) => ({
      id: `j${i}`,
      endpointId: 'ep',
      accountId: 'acct',
      seq: i + 1,
      inputJson: '{"prompt":"a photo of an astronaut riding a horse"}',
      webhook: null,
      s3ConfigJson: null,
      policy: { executionTimeout: 600_000, lowPriority: false, ttl: 86_400_000 },
      sync: false,
      createdAt: now,
    }));
    for (let i = 0; i < N; i += 1000) await store.rows.insertMany(jobs.slice(i, i + 1000));
    const requests = Array.from({ length: W }, (_, w) => ({ endpointId: 'ep', workerId: `w${w}`, n: 1, holdsNone }));
    let cpu = 0;
    let wall = 0;
    let takes = 0;
    for (;;) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const { taken } = await store.committed.takeCommitted(requests, now, { retryBudget: 3, webhooksOf: () => [] });
      wall += performance.now() - t0;
      const c = process.cpuUsage(c0);
      cpu += c.user + c.system;
      takes += W;
      const done = taken.flat();
      if (done.length === 0) break;
      await store.committed.completeCommitted(
        done.map((j) => ({ id: j.id, workerId: j.workerId!, status: 'COMPLETED', outputJson: '1', error: null })),
        now,
        () => [],
      );
    }
    return { cpuUs: cpu / takes, wallUs: (wall * 1000) / takes };
  } finally {
    await db.close();
    if (url) await dropSchema(url, schema);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows: Array<Record<string, string | number>> = [];
for (const dialect of pgUrl ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)) {
  type Sample = { cpuUs: number; wallUs: number };
  const samples: { plain: Sample[]; none: Sample[] } = { plain: [], none: [] };
  for (let r = 0; r < ROUNDS; r++) {
    samples.plain.push(await round(dialect, false));
    samples.none.push(await round(dialect, true));
  }
  for (const [label, s] of [
    ['plain take', samples.plain],
    ['take with job_in_progress=0', samples.none],
  ] as const)
    rows.push({
      store: dialect,
      take: label,
      'CPU µs/take': median(s.map((x) => x.cpuUs)).toFixed(1),
      'wall µs/take': median(s.map((x) => x.wallUs)).toFixed(1),
    });
}
console.log(`\nTake group commit: ${N.toLocaleString('en-US')} jobs, ${W} takes per batch, ${ROUNDS} rounds\n`);
printTable(rows);
