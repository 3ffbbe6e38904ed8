// Job queue throughput on the real stores, in process (no HTTP):
//   node --import tsx bench/jobs-store.ts [--jobs 20000] [--clients 256] [--workers 64]
// 1. submit: group commit (JobsService.submit) vs one transaction per job, same concurrency;
// 2. end to end: submit → take → complete → status COMPLETED, with in-process client and worker loops
//    (takes plain, and saying their worker holds no job).
// SQLite always (file in a temp dir, WAL, synchronous=NORMAL as in production); PostgreSQL too when
// GANTRY_TEST_DATABASE_URL is set (a throwaway schema). Goal: end to end ≥ 5,000 jobs/s on SQLite.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { printTable } from './support/processes.js';
import { systemClock } from '../src/domain/clock.js';
import { newId, newJobId } from '../src/domain/ids.js';
import { openDatabase, type Db } from '../src/store/database.js';
import { openJobStore } from '../src/store/job-store.js';
import { JobsService } from '../src/jobs/jobs-service.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    clients: { type: 'string', default: '256' },
    workers: { type: 'string', default: '64' },
  },
});
const N = Number(values.jobs);
const CLIENTS = Number(values.clients);
const WORKERS = Number(values.workers);

interface Target {
  name: string;
  open(): Promise<{ db: Db; cleanup: () => Promise<void> }>;
}

const targets: Target[] = [
  {
    name: 'sqlite',
    async open() {
      const dataDir = mkdtempSync(join(tmpdir(), 'gantry-bench-jobs-'));
      const db = await openDatabase({ url: null, dataDir });
      return { db, cleanup: async () => (await db.close(), rmSync(dataDir, { recursive: true, force: true })) };
    },
  },
];
const pgUrl = process.env.GANTRY_TEST_DATABASE_URL;
if (pgUrl)
  targets.push({
    name: 'postgres',
    async open() {
      const schema = `bench_${newId(10)}`;
      const db = await openDatabase({ url: pgUrl, dataDir: tmpdir(), schema });
      return {
        db,
        async cleanup() {
          await db.close();
          const c = new pg.Client({ connectionString: pgUrl });
          await c.connect();
          await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          await c.end();
        },
      };
    },
  });

/** Runs `count` tasks with `concurrency` loops; answers elapsed seconds. */
async function loops(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
  return (performance.now() - started) / 1000;
}

const body = (i: number) => ({ input: { prompt: `job ${i}`, max_tokens: 64 }, policy: { executionTimeout: 60_000 } });
const policy = { executionTimeout: 60_000, lowPriority: false, ttl: 86_400_000 };

const rows: Array<Record<string, string | number>> = [];
const rate = (n: number, s: number): string => Math.round(n / s).toLocaleString('en-US');

for (const target of targets) {
  // 1a. submit, group commit
  {
    const { db, cleanup } = await target.open();
    const jobs = new JobsService({ db, clock: systemClock });
    const s = await loops(N, CLIENTS, async (i) => void (await jobs.client.submit('ep', 'acct', body(i))));
    const { batches, items } = jobs.batchStats.submits;
    rows.push({
      store: target.name,
      measure: 'submit, group commit',
      'jobs/s': rate(N, s),
      transactions: batches,
      'jobs/tx': (items / batches).toFixed(1),
    });
    await cleanup();
  }
  // 1b. submit, one transaction per job
  {
    const { db, cleanup } = await target.open();
    const store = openJobStore(db);
    let seq = 0;
    const s = await loops(N, CLIENTS, async (i) => {
      const job = {
        id: newJobId(),
        endpointId: 'ep',
        accountId: 'acct',
        seq: ++seq,
        inputJson: JSON.stringify(body(i).input),
        webhook: null,
        s3ConfigJson: null,
        policy,
        sync: false,
        createdAt: Date.now(),
      };
      await db.withTransaction((tx) => store.rows.insertMany([job], tx));
    });
    rows.push({
      store: target.name,
      measure: 'submit, 1 transaction per job',
      'jobs/s': rate(N, s),
      transactions: N,
      'jobs/tx': '1.0',
    });
    await cleanup();
  }
  // 2. end to end, take batch 1 and 8; each take plain, or saying its worker holds no job (as the
  //    Python SDK's do when idle: the store gives back what it held first, docs/serverless.md)
  for (const [batchSize, holdsNone] of [
    [1, false],
    [1, true],
    [8, false],
    [8, true],
  ] as const) {
    const { db, cleanup } = await target.open();
    const jobs = new JobsService({ db, clock: systemClock });
    const ids: string[] = [];
    let completed = 0;
    let done = false;
    const started = performance.now();
    const workers = Array.from({ length: WORKERS }, async (_, w) => {
      const controller = new AbortController();
      while (!done) {
        const taken = await jobs.worker.take('ep', `w${w}`, {
          batchSize,
          waitMs: 200,
          signal: controller.signal,
          holdsNone,
        });
        await Promise.all(
          taken.map(async (j) => {
            await jobs.worker.complete(`w${w}`, j.id, {
              output: { text: `done ${(j.input as { prompt: string }).prompt}` },
            });
            if (++completed === N) done = true;
          }),
        );
      }
    });
    await loops(N, CLIENTS, async (i) => void ids.push((await jobs.client.submit('ep', 'acct', body(i))).id));
    await Promise.all(workers);
    let ok = 0;
    await loops(
      ids.length,
      CLIENTS,
      async (i) => void ((await jobs.client.status('acct', 'ep', ids[i]!)).status === 'COMPLETED' && ok++),
    );
    const s = (performance.now() - started) / 1000;
    if (ok !== N) throw new Error(`only ${ok} of ${N} jobs COMPLETED`);
    rows.push({
      store: target.name,
      measure: `end to end, take batch ${batchSize}${holdsNone ? ', job_in_progress=0' : ''}`,
      'jobs/s': rate(N, s),
      transactions: jobs.batchStats.submits.batches + jobs.batchStats.takes.batches + jobs.batchStats.posts.batches,
      'jobs/tx': `${(N / jobs.batchStats.posts.batches).toFixed(1)} done/tx`,
    });
    await cleanup();
  }
}

console.log(
  `\nJob store benchmark: ${N.toLocaleString('en-US')} jobs, ${CLIENTS} client loops, ${WORKERS} worker loops ` +
    `(node ${process.version})\n`,
);
printTable(rows);
const e2e = rows.find((r) => r.store === 'sqlite' && r.measure === 'end to end, take batch 1');
const e2eRate = Number(String(e2e?.['jobs/s'] ?? '0').replace(/,/g, ''));
console.log(
  `\nGoal: end to end on SQLite (take batch 1) >= 5,000 jobs/s: ${e2eRate >= 5000 ? 'PASS' : 'FAIL'} (${e2e?.['jobs/s']})`,
);
