import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JOB_STATUSES, nextJobState, type JobEvent, type JobState, type JobStatus } from '../domain/job-state.js';
import { describeJobStore, T0, newJob, type JobStoreSuite } from '../../test/support/job-store-suite.js';
import type { JobRecord } from './job-record.js';
import { compileStatement, slot } from './compiled-statement.js';
import { jobStatements } from './job-statements.js';

/** The events the hot path's statements apply, as the store runs them; answers the changed job or null. */
const apply: Record<string, (s: JobStoreSuite, id: string, now: number) => Promise<JobRecord | null>> = {
  take: async (s, _id, now) => (await s.store.claims.takeNext('ep1', 'w1', 1, now))[0] ?? null,
  complete: async (s, id, now) =>
    (
      await s.store.claims.completeMany(
        [{ id, workerId: 'w1', status: 'COMPLETED', outputJson: '1', error: null }],
        now,
      )
    )[0]!,
  fail: async (s, id, now) =>
    (
      await s.store.claims.completeMany([{ id, workerId: 'w1', status: 'FAILED', outputJson: null, error: 'x' }], now)
    )[0]!,
  progress: async (s, id, now) =>
    (
      await s.store.claims.completeMany(
        [{ id, workerId: 'w1', status: 'IN_PROGRESS', outputJson: '2', error: null }],
        now,
      )
    )[0]!,
  cancel: (s, id, now) => s.store.controls.cancel(id, now),
};

const event = (type: string): JobEvent =>
  type === 'take'
    ? { type, workerId: 'w1' }
    : type === 'progress'
      ? { type, workerId: 'w1', output: '2' }
      : type === 'complete'
        ? { type, workerId: 'w1', output: '1' }
        : type === 'fail'
          ? { type, workerId: 'w1', error: 'x' }
          : { type: 'cancel' };

const stateOf = (status: JobStatus): JobState => ({
  status,
  workerId: status === 'IN_QUEUE' ? null : 'w1',
  retries: 0,
  queuedAt: T0,
  startedAt: status === 'IN_QUEUE' ? null : T0,
  completedAt: null,
  delayMs: null,
  executionMs: null,
  output: null,
  error: null,
  stopRequested: false,
});

describeJobStore('the job statements against the state machine', (s) => {
  test('every take, result, progress and cancel changes a job exactly where nextJobState says it does, into the status it says', async () => {
    for (const type of Object.keys(apply))
      for (const status of JOB_STATUSES) {
        const job = newJob();
        await s.store.rows.insertMany([job]);
        await s.t.db.kysely
          .updateTable('jobs')
          .set({
            status,
            worker_id: status === 'IN_QUEUE' ? null : 'w1',
            started_at: status === 'IN_QUEUE' ? null : T0,
          })
          .where('id', '=', job.id)
          .execute();
        const expected = nextJobState(stateOf(status), event(type), T0 + 10);
        const changed = await apply[type]!(s, job.id, T0 + 10);
        const where = `${type} on a ${status} job (${s.executor})`;
        assert.equal(changed !== null, expected.kind === 'changed', where);
        if (changed && expected.kind === 'changed') assert.equal(changed.status, expected.job.status, where);
        await s.t.db.kysely.deleteFrom('jobs').execute();
      }
  });
});

describeJobStore("the job statements' declared slots", (s) => {
  test('a statement whose declared slot order differs from its compiled parameters fails when it compiles', () => {
    const k = s.t.db.kysely;
    const q = k
      .updateTable('jobs')
      .set({ output: slot<string>('output') })
      .where('id', '=', slot<string>('id'));
    assert.throws(() => compileStatement(q, ['id', 'output']), /binds \[output, id\] but declares \[id, output\]/);
    assert.throws(() => compileStatement(q, ['output']), /binds \[output, id\] but declares \[output\]/);
    assert.throws(() => compileStatement(q, ['output', 'id', 'id']), /but declares/);
    assert.equal(compileStatement(q, ['output', 'id']).slots.join(), 'output,id');
    // a constant bound as a parameter would shift every slot after it: refused too
    const constant = k.updateTable('jobs').set({ output: null }).where('id', '=', slot<string>('id'));
    assert.throws(() => compileStatement(constant, ['id']), /binds \[constant null, id\]/);
  });

  test('every job statement of this database compiles with its declared slot order', () => {
    const st = jobStatements(s.t.db);
    for (const [name, statement] of Object.entries(st))
      if (statement) assert.ok(statement.slots.length > 0, `${name} (${s.dialect}) binds its values`);
  });
});
