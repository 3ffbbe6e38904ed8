import { describe, before, after, beforeEach } from 'node:test';
import { dialects, openTestDb, type DialectName, type TestDb } from './harness.js';
import type { NewJob } from '../../src/store/job-record.js';
import { JobStore } from '../../src/store/job-store.js';

export const T0 = 1_767_225_600_000;
export const MIN = 60_000;
let counter = 0;

/** A job to insert: ids and queue positions increase per call; the rest defaults to a plain job of `ep1`. */
export const newJob = (
  patch: Partial<NewJob> & { ttl?: number; executionTimeout?: number; lowPriority?: boolean } = {},
): NewJob => {
  const n = ++counter;
  const { ttl, executionTimeout, lowPriority, ...rest } = patch;
  return {
    id: `job-${n}`,
    endpointId: 'ep1',
    accountId: 'acct1',
    seq: n,
    inputJson: JSON.stringify({ n }),
    webhook: null,
    s3ConfigJson: null,
    policy: {
      executionTimeout: executionTimeout ?? 600_000,
      lowPriority: lowPriority ?? false,
      ttl: ttl ?? 86_400_000,
    },
    sync: false,
    createdAt: T0,
    ...rest,
  };
};

/** What a job store suite's tests use; `t` and `store` are set once the suite's `before` ran. */
export interface JobStoreSuite {
  dialect: DialectName;
  t: TestDb;
  store: JobStore;
}

/**
 * Runs `body`'s tests on every dialect, against a `JobStore` over a private database whose jobs
 * and stream buffer are emptied before each test.
 */
export function describeJobStore(title: string, body: (suite: JobStoreSuite) => void): void {
  for (const { name, skip } of dialects()) {
    describe(`${title} on ${name}`, { skip }, () => {
      const suite = { dialect: name } as JobStoreSuite;
      before(async () => {
        suite.t = await openTestDb(name);
        suite.store = new JobStore(suite.t.db);
      });
      after(() => suite.t?.cleanup());
      beforeEach(async () => {
        await suite.t.db.kysely.deleteFrom('jobs').execute();
        await suite.t.db.kysely.deleteFrom('job_stream').execute();
      });
      body(suite);
    });
  }
}
