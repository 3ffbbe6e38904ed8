import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import type { JobStatus } from '../domain/job-state.js';
import { JobListing } from './job-listing.js';

const job = (
  id: string,
  createdAt: number,
  over: {
    endpoint?: string;
    account?: string;
    status?: JobStatus;
    delay?: number;
    exec?: number;
    retries?: number;
  } = {},
) => ({
  id,
  endpoint_id: over.endpoint ?? 'ep1',
  account_id: over.account ?? 'a1',
  status: over.status ?? 'IN_QUEUE',
  seq: createdAt,
  input: '{"secret":1}',
  webhook: null,
  s3_config: null,
  execution_timeout_ms: 600_000,
  low_priority: 0,
  ttl_ms: 86_400_000,
  sync: 0,
  created_at: createdAt,
  queued_at: createdAt,
  started_at: null,
  completed_at: null,
  expires_at: createdAt + 86_400_000,
  retain_until: null,
  timeout_at: null,
  output: null,
  error: null,
  worker_id: null,
  retries: over.retries ?? 0,
  delay_ms: over.delay ?? null,
  execution_ms: over.exec ?? null,
  stop_requested: 0,
});

for (const { name, skip } of dialects()) {
  describe(`JobListing on ${name}`, { skip }, () => {
    let t: TestDb;
    let listing: JobListing;
    const ids = (page: { jobs: Array<{ id: string }> }) => page.jobs.map((j) => j.id);
    before(async () => {
      t = await openTestDb(name);
      listing = new JobListing(t.db);
      await t.db.kysely
        .insertInto('jobs')
        .values([
          job('j1', 1000),
          job('j2', 2000, { status: 'COMPLETED', delay: 15, exec: 250, retries: 1 }),
          job('j3a', 3000),
          job('j3b', 3000, { status: 'COMPLETED' }),
          job('j4', 4000),
          job('other-endpoint', 5000, { endpoint: 'ep2' }),
          job('other-account', 5000, { account: 'a2' }),
        ])
        .execute();
    });
    after(() => t?.cleanup());

    test("the endpoint's jobs of the account come newest first, ties broken by id", async () => {
      const page = await listing.recent('a1', 'ep1', { now: 5000, limit: 10 });
      assert.deepEqual(ids(page), ['j4', 'j3b', 'j3a', 'j2', 'j1']);
      assert.equal(page.next, null);
      assert.deepEqual(page.jobs[3], {
        id: 'j2',
        status: 'COMPLETED',
        createdAt: 2000,
        delayMs: 15,
        executionMs: 250,
        retries: 1,
      });
      assert.deepEqual(page.jobs[0], {
        id: 'j4',
        status: 'IN_QUEUE',
        createdAt: 4000,
        delayMs: null,
        executionMs: null,
        retries: 0,
      });
    });

    test('pages continue after the position of the last job, through ties, without repeats', async () => {
      const first = await listing.recent('a1', 'ep1', { now: 5000, limit: 2 });
      assert.deepEqual(ids(first), ['j4', 'j3b']);
      assert.deepEqual(first.next, { createdAt: 3000, id: 'j3b' });
      const second = await listing.recent('a1', 'ep1', { now: 5000, limit: 2, after: first.next });
      assert.deepEqual(ids(second), ['j3a', 'j2']);
      const third = await listing.recent('a1', 'ep1', { now: 5000, limit: 2, after: second.next! });
      assert.deepEqual(ids(third), ['j1']);
      assert.equal(third.next, null);
    });

    test('a status keeps only the jobs in it', async () => {
      assert.deepEqual(ids(await listing.recent('a1', 'ep1', { now: 5000, limit: 10, status: 'COMPLETED' })), [
        'j3b',
        'j2',
      ]);
      assert.deepEqual(ids(await listing.recent('a1', 'ep1', { now: 5000, limit: 10, status: 'FAILED' })), []);
    });

    test('jobs past their ttl or their result retention are not listed, even before the timekeeper deletes them', async () => {
      await t.db.kysely
        .insertInto('jobs')
        .values([
          { ...job('expired', 4500, { endpoint: 'ep3' }), expires_at: 4900 },
          { ...job('unretained', 4600, { endpoint: 'ep3', status: 'COMPLETED' }), retain_until: 4900 },
          { ...job('retained', 4700, { endpoint: 'ep3', status: 'COMPLETED' }), retain_until: 6000 },
        ])
        .execute();
      assert.deepEqual(ids(await listing.recent('a1', 'ep3', { now: 4800, limit: 10 })), [
        'retained',
        'unretained',
        'expired',
      ]);
      assert.deepEqual(ids(await listing.recent('a1', 'ep3', { now: 5000, limit: 10 })), ['retained']);
    });

    test('only jobs of the asking account are listed', async () => {
      assert.deepEqual(ids(await listing.recent('a2', 'ep1', { now: 5000, limit: 10 })), ['other-account']);
      assert.deepEqual(ids(await listing.recent('a3', 'ep1', { now: 5000, limit: 10 })), []);
    });
  });
}
