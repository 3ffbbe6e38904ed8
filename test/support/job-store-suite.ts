import { describe, before, after, beforeEach } from 'node:test';
import { dialects, openTestDb, type DialectName, type TestDb } from './harness.js';
import type { NewJob } from '../../src/store/job-record.js';
import { openJobStore, type JobStore } from '../../src/store/job-store.js';
import type { JobClaims } from '../../src/store/job-claims.js';

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
  /** Which executor runs the claims given no transaction: Kysely's, or SQLite's synchronous one. */
  executor: 'kysely' | 'sqlite-sync';
  t: TestDb;
  store: JobStore;
}

/**
 * `store` with its claims given no transaction (`takeNext`, `completeMany`) run as the group
 * commits run them: on SQLite, by the synchronous executor.
 */
function throughCommits(store: JobStore): JobStore {
  const { claims, committed } = store;
  const viaCommits = new Proxy(claims, {
    get(target, prop, receiver) {
      if (prop === 'takeNext')
        return async (...[endpointId, workerId, n, now, tx]: Parameters<JobClaims['takeNext']>) =>
          tx || n <= 0
            ? target.takeNext(endpointId, workerId, n, now, tx)
            : (await committed.takeCommitted([{ endpointId, workerId, n }], now)).taken[0]!;
      if (prop === 'completeMany')
        return (...[posts, now, tx]: Parameters<JobClaims['completeMany']>) =>
          tx ? target.completeMany(posts, now, tx) : committed.completeCommitted(posts, now, () => []);
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { ...store, claims: viaCommits };
}

/**
 * Runs `body`'s tests on every dialect, against a `JobStore` over a private database whose jobs
 * and stream buffer are emptied before each test. On SQLite they run twice: claims through
 * Kysely, and through the synchronous executor of the group commits — same statements, same
 * answers.
 */
export function describeJobStore(title: string, body: (suite: JobStoreSuite) => void): void {
  type Variant = { name: DialectName; skip: string | false; executor: JobStoreSuite['executor']; label: string };
  const variants = dialects().flatMap(({ name, skip }): Variant[] =>
    name === 'sqlite'
      ? [
          { name, skip, executor: 'kysely', label: 'sqlite' },
          { name, skip, executor: 'sqlite-sync', label: "sqlite's synchronous executor" },
        ]
      : [{ name, skip, executor: 'kysely', label: name }],
  );
  for (const { name, skip, executor, label } of variants) {
    describe(`${title} on ${label}`, { skip }, () => {
      const suite = { dialect: name, executor } as JobStoreSuite;
      before(async () => {
        suite.t = await openTestDb(name);
        const store = openJobStore(suite.t.db);
        suite.store = executor === 'sqlite-sync' ? throughCommits(store) : store;
      });
      after(() => suite.t?.cleanup());
      beforeEach(async () => {
        await suite.t.db.kysely.deleteFrom('jobs').execute();
        await suite.t.db.kysely.deleteFrom('job_stream').execute();
        await suite.t.db.kysely.deleteFrom('webhook_deliveries').execute();
      });
      body(suite);
    });
  }
}
