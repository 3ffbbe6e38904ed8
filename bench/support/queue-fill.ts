// A queue of `count` jobs written straight into a stopped server's SQLite store, as /run would
// store them (JobRows.insertMany, `batch` rows a transaction): how the million-job benchmarks
// (queue-1m, metrics-scrape) fill an endpoint without a million HTTP calls.
import { newJobId } from '../../src/domain/ids.js';
import { openDatabase } from '../../src/store/database.js';
import type { NewJob } from '../../src/store/job-record.js';
import { openJobStore } from '../../src/store/job-store.js';

/** Fills endpoint `endpointId`'s queue in the data dir's SQLite store; answers the seconds it took. */
export async function fillQueue(dataDir: string, endpointId: string, count: number, batch: number): Promise<number> {
  const started = performance.now();
  const db = await openDatabase({ url: null, dataDir });
  try {
    const store = openJobStore(db);
    const { account_id: accountId } = await db.kysely
      .selectFrom('endpoints')
      .select('account_id')
      .where('id', '=', endpointId)
      .executeTakeFirstOrThrow();
    const now = Date.now();
    const policy = { executionTimeout: 600_000, lowPriority: false, ttl: 86_400_000 };
    for (let i = 0; i < count; i += batch) {
      const jobs: NewJob[] = [];
      for (let j = i; j < Math.min(count, i + batch); j++)
        jobs.push({
          id: newJobId(),
          endpointId,
          accountId,
          seq: now * 1000 + j,
          inputJson: `{"prompt":"job ${j}","max_tokens":64}`,
          webhook: null,
          s3ConfigJson: null,
          policy,
          sync: false,
          createdAt: now,
        });
      await db.withTransaction((tx) => store.rows.insertMany(jobs, tx));
    }
  } finally {
    await db.close();
  }
  return (performance.now() - started) / 1000;
}
