/**
 * The job store's sweeps and worker-facing writes read through indexes: on a table of a million
 * jobs a full scan per timekeeper tick is a stall. Each query the store runs is captured, and
 * SQLite's plan for it must not scan the jobs table.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, type KyselyPlugin, type RootOperationNode } from 'kysely';
import { openTestDb, type TestDb } from '../../test/support/harness.js';
import type { Db } from './database.js';
import { openJobStore, type JobStore } from './job-store.js';
import type { CompiledStatement } from './compiled-statement.js';
import { jobStatements } from './job-statements.js';
import { giveBackStatement } from './held-jobs.js';

let t: TestDb;
const captured: RootOperationNode[] = [];
const capture: KyselyPlugin = {
  transformQuery: (args) => {
    captured.push(args.node);
    return args.node;
  },
  transformResult: async (args) => args.result,
};

before(async () => {
  t = await openTestDb('sqlite');
});
after(() => t?.cleanup());

/** The plans of every statement `run` issues, as SQLite explains them. */
async function plansOf(run: (store: JobStore) => Promise<unknown>): Promise<string[]> {
  const kysely = t.db.kysely.withPlugin(capture);
  const db: Db = { ...t.db, kysely, withTransaction: (fn) => kysely.transaction().execute(fn) };
  captured.length = 0;
  await run(openJobStore(db));
  const executor = t.db.kysely.getExecutor();
  const plans: string[] = [];
  for (const node of captured) {
    const compiled = executor.compileQuery(node, { queryId: 'plan' });
    const explained = await t.db.kysely.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`EXPLAIN QUERY PLAN ${compiled.sql}`, [...compiled.parameters]),
    );
    plans.push(`${compiled.sql.slice(0, 60)}… → ${explained.rows.map((r) => r.detail).join(' | ')}`);
  }
  return plans;
}

const NOW = 1_767_225_600_000;
const sweeps: Array<[string, (s: JobStore) => Promise<unknown>]> = [
  ['the execution-timeout sweep', (s) => s.sweeps.timeOut(NOW)],
  ['ttl expiry and result retention', (s) => s.sweeps.expire(NOW)],
  ["a lost worker's requeue", (s) => s.held.giveBack('w-1', 'ep-1', NOW, 3)],
  ["a worker's held jobs, read for its ping", (s) => s.held.list('w-1', 'ep-1')],
  [
    'the jobs a ping shows a worker no longer holds, given back',
    (s) => s.held.giveBack('w-1', 'ep-1', NOW, 3, undefined, [{ id: 'j-1', takenSeq: 4, startedAt: NOW }]),
  ],
  ["a worker's job-stop channel", (s) => s.claims.takeStopRequests('w-1', 'ep-1')],
  ['a take', (s) => s.claims.takeNext('ep-1', 'w-1', 4, NOW)],
];

for (const [what, run] of sweeps) {
  test(`${what} reads the jobs table through an index, never a full scan`, async () => {
    const plans = await plansOf(run);
    assert.ok(plans.length > 0, 'the store ran a statement');
    for (const plan of plans) assert.doesNotMatch(plan, /SCAN jobs(?! USING)/, plan);
  });
}

test('every compiled statement of the job hot path reads the jobs table through an index, never a full scan', async () => {
  const statements = Object.entries(jobStatements(t.db)).filter(
    (e): e is [string, CompiledStatement<never>] => e[1] !== null,
  );
  assert.ok(statements.length >= 6);
  for (const [name, s] of statements) {
    const params = s.sql.split('?').length - 1;
    const explained = await t.db.kysely.executeQuery<{ detail: string }>(
      CompiledQuery.raw(
        `EXPLAIN QUERY PLAN ${s.sql}`,
        Array.from({ length: params }, () => null),
      ),
    );
    const plan = explained.rows.map((r) => r.detail).join(' | ');
    assert.doesNotMatch(plan, /SCAN jobs(?! USING)/, `${name}: ${plan}`);
  }
});

test('the statement giving back the jobs of a worker whose take says it holds none reads through an index', async () => {
  const s = giveBackStatement(t.db, 3).one;
  const explained = await t.db.kysely.executeQuery<{ detail: string }>(
    CompiledQuery.raw(`EXPLAIN QUERY PLAN ${s.sql}`, [NOW, NOW, NOW, NOW, NOW, 'w-1', 'ep-1']),
  );
  const plan = explained.rows.map((r) => r.detail).join(' | ');
  assert.match(plan, /USING INDEX jobs_worker/, plan);
});

test("/health's counts read only indexes, never a job row", async () => {
  const plans = await plansOf((s) => s.stats.queueStats('ep-1'));
  assert.equal(plans.length, 2);
  for (const plan of plans) assert.match(plan, /USING COVERING INDEX (jobs_take|jobs_retried)/, plan);
});
