import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DummyDriver, Kysely, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler } from 'kysely';
import { UNFINISHED_JOB_STATUSES, type JobStatus } from '../domain/job-state.js';
import { LIVE_POD_STATUSES } from '../domain/pod-state.js';
import { statusLit, statusText } from './job-sql.js';
import type { Database } from './schema.js';

/** Builds and compiles queries without a database: what the compiler accepts is the point here. */
const db = new Kysely<Database>({
  dialect: {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (k) => new SqliteIntrospector(k),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  },
});

// Each `@ts-expect-error` below fails `npm run typecheck` the day its line compiles: a status the
// state machines do not know is refused in a filter, a write, a named set and hand-written SQL.
test('a status the state machines do not know does not compile where the store names one', () => {
  const queries = [
    // @ts-expect-error -- 'QUEUED' is not a job status
    db.selectFrom('jobs').select('id').where('status', '=', 'QUEUED'),
    // @ts-expect-error -- pods have no 'STOPPED' status
    db.updateTable('pods').set({ status: 'STOPPED' }),
    // @ts-expect-error -- a pod's desired status is RUNNING, EXITED or TERMINATED
    db.updateTable('pods').set({ desired_status: 'ERROR' }),
    // @ts-expect-error -- workers' statuses are lower case
    db.selectFrom('workers').select('id').where('status', 'in', ['RUNNING']),
    // @ts-expect-error -- a delivery is PENDING, DELIVERED or FAILED
    db.updateTable('webhook_deliveries').set({ status: 'SENT' }),
    db.selectFrom('jobs').select('id').where('status', 'in', UNFINISHED_JOB_STATUSES),
    db.selectFrom('pods').select('id').where('status', 'in', LIVE_POD_STATUSES),
  ];
  // @ts-expect-error -- hand-written SQL names statuses through a checked helper
  statusText('DONE');
  // @ts-expect-error -- likewise in a `sql` template
  statusLit('RUNNING');
  // @ts-expect-error -- a named set is checked against the state machine's statuses
  const misspelt = ['IN_QUEUE', 'IN_PROGRES'] as const satisfies readonly JobStatus[];
  assert.equal(queries.length, 7);
  assert.equal(misspelt.length, 2);
  assert.equal(
    db.selectFrom('jobs').select('id').where('status', 'in', UNFINISHED_JOB_STATUSES).compile().sql,
    'select "id" from "jobs" where "status" in (?, ?)',
  );
  assert.equal(statusText('IN_PROGRESS'), "'IN_PROGRESS'");
});
