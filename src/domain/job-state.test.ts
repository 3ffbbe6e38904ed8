import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  changesFrom,
  isTerminalJobStatus,
  JOB_STATUSES,
  RESULT_JOB_STATUSES,
  TERMINAL_JOB_STATUSES,
  UNFINISHED_JOB_STATUSES,
  nextJobState,
  TIMED_OUT_ERROR,
  WORKER_LOST_ERROR,
  type JobEvent,
  type JobState,
  type JobStatus,
} from './job-state.js';

const T0 = 1_000_000;
const queued = (patch: Partial<JobState> = {}): JobState => ({
  status: 'IN_QUEUE',
  workerId: null,
  retries: 0,
  queuedAt: T0,
  startedAt: null,
  completedAt: null,
  delayMs: null,
  executionMs: null,
  output: null,
  error: null,
  stopRequested: false,
  ...patch,
});
const running = (patch: Partial<JobState> = {}): JobState =>
  queued({ status: 'IN_PROGRESS', workerId: 'w1', startedAt: T0 + 100, delayMs: 100, ...patch });

const changed = (job: JobState, event: JobEvent, now: number): JobState => {
  const t = nextJobState(job, event, now);
  assert.equal(t.kind, 'changed', JSON.stringify(t));
  return (t as { job: JobState }).job;
};

test('take moves a queued job to IN_PROGRESS on the worker and measures its queue delay', () => {
  const job = changed(queued(), { type: 'take', workerId: 'w1' }, T0 + 250);
  assert.equal(job.status, 'IN_PROGRESS');
  assert.equal(job.workerId, 'w1');
  assert.equal(job.startedAt, T0 + 250);
  assert.equal(job.delayMs, 250);
});

test('a job that is not queued cannot be taken', () => {
  const t = nextJobState(running(), { type: 'take', workerId: 'w2' }, T0);
  assert.equal(t.kind, 'refused');
  assert.equal(t.kind === 'refused' && t.refusal.code, 'NOT_QUEUED');
});

test('a result with output completes the job and measures its execution time', () => {
  const job = changed(running(), { type: 'complete', workerId: 'w1', output: '{"a":1}' }, T0 + 1100);
  assert.equal(job.status, 'COMPLETED');
  assert.equal(job.output, '{"a":1}');
  assert.equal(job.completedAt, T0 + 1100);
  assert.equal(job.executionMs, 1000);
});

test('a result with an error fails the job', () => {
  const job = changed(running(), { type: 'fail', workerId: 'w1', error: 'boom' }, T0 + 200);
  assert.equal(job.status, 'FAILED');
  assert.equal(job.error, 'boom');
});

test('progress while running becomes the visible output and keeps the job IN_PROGRESS', () => {
  const job = changed(running(), { type: 'progress', workerId: 'w1', output: '"50%"' }, T0 + 200);
  assert.equal(job.status, 'IN_PROGRESS');
  assert.equal(job.output, '"50%"');
});

test('late progress after a terminal state is ignored, not an error, and keeps the final result', () => {
  const done = changed(running(), { type: 'complete', workerId: 'w1', output: '"final"' }, T0 + 200);
  const t = nextJobState(done, { type: 'progress', workerId: 'w1', output: '"90%"' }, T0 + 300);
  assert.equal(t.kind, 'ignored');
  assert.equal(t.kind === 'ignored' && t.job.output, '"final"');
});

test('a repeated post of the same terminal result is ignored as a no-op', () => {
  const done = changed(running(), { type: 'complete', workerId: 'w1', output: '"x"' }, T0 + 200);
  const again = nextJobState(done, { type: 'complete', workerId: 'w1', output: '"x"' }, T0 + 300);
  assert.deepEqual(again, { kind: 'ignored', job: done, reason: 'the same result was already recorded' });
  const failed = changed(running(), { type: 'fail', workerId: 'w1', error: 'e' }, T0 + 200);
  assert.equal(nextJobState(failed, { type: 'fail', workerId: 'w1', error: 'e' }, T0 + 300).kind, 'ignored');
});

test('a result for a cancelled or timed-out job is dropped', () => {
  const cancelled = changed(running(), { type: 'cancel' }, T0 + 200);
  const t = nextJobState(cancelled, { type: 'complete', workerId: 'w1', output: '1' }, T0 + 300);
  assert.equal(t.kind, 'ignored');
  assert.equal(t.kind === 'ignored' && t.job.status, 'CANCELLED');
});

test('a post from a worker that does not hold the job is refused', () => {
  const t = nextJobState(running(), { type: 'complete', workerId: 'w2', output: '1' }, T0);
  assert.equal(t.kind === 'refused' && t.refusal.code, 'WRONG_WORKER');
  const q = nextJobState(queued(), { type: 'complete', workerId: 'w1', output: '1' }, T0);
  assert.equal(q.kind === 'refused' && q.refusal.code, 'NOT_RUNNING');
});

test('cancel of a queued job cancels it at once without a stop request', () => {
  const job = changed(queued(), { type: 'cancel' }, T0 + 5);
  assert.equal(job.status, 'CANCELLED');
  assert.equal(job.stopRequested, false);
});

test('cancel of a running job cancels it and asks its worker to stop', () => {
  const job = changed(running(), { type: 'cancel' }, T0 + 500);
  assert.equal(job.status, 'CANCELLED');
  assert.equal(job.stopRequested, true);
  assert.equal(job.workerId, 'w1');
});

test('cancel of a finished job is ignored', () => {
  const done = changed(running(), { type: 'complete', workerId: 'w1', output: null }, T0 + 200);
  assert.equal(nextJobState(done, { type: 'cancel' }, T0 + 300).kind, 'ignored');
});

test('timeout applies only while running: a queued job cannot time out', () => {
  const job = changed(running(), { type: 'timeout' }, T0 + 10_000);
  assert.equal(job.status, 'TIMED_OUT');
  assert.equal(job.stopRequested, true);
  assert.equal(job.error, TIMED_OUT_ERROR);
  const t = nextJobState(queued(), { type: 'timeout' }, T0 + 10_000);
  assert.equal(t.kind === 'refused' && t.refusal.code, 'NOT_RUNNING');
});

test('retry requeues a FAILED or TIMED_OUT job with its retries counted and its result cleared', () => {
  for (const status of ['FAILED', 'TIMED_OUT'] as const) {
    const job = changed(
      running({ status, completedAt: T0 + 300, error: 'x', executionMs: 200 }),
      { type: 'retry' },
      T0 + 1000,
    );
    assert.equal(job.status, 'IN_QUEUE');
    assert.equal(job.retries, 1);
    assert.equal(job.queuedAt, T0 + 1000);
    assert.equal(job.workerId, null);
    assert.equal(job.error, null);
    assert.equal(job.completedAt, null);
  }
});

test('retry of a job that is not FAILED or TIMED_OUT is refused', () => {
  for (const status of ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'CANCELLED'] as const) {
    const t = nextJobState(running({ status }), { type: 'retry' }, T0);
    assert.equal(t.kind === 'refused' && t.refusal.code, 'NOT_RETRYABLE', status);
  }
});

test('a lost worker returns its job to the queue until the retry budget is spent, then fails it', () => {
  let job = running();
  for (let i = 1; i <= 3; i++) {
    job = changed(job, { type: 'worker-lost', retryBudget: 3 }, T0 + i);
    assert.equal(job.status, 'IN_QUEUE');
    assert.equal(job.retries, i);
    job = changed(job, { type: 'take', workerId: `w${i}` }, T0 + i);
  }
  const last = changed(job, { type: 'worker-lost', retryBudget: 3 }, T0 + 10);
  assert.equal(last.status, 'FAILED');
  assert.equal(last.error, WORKER_LOST_ERROR);
});

test('ttl expiry deletes the job whatever its state', () => {
  for (const status of JOB_STATUSES)
    assert.deepEqual(nextJobState(running({ status }), { type: 'expire' }, T0), { kind: 'deleted' });
});

const events: JobEvent[] = [
  { type: 'take', workerId: 'w1' },
  { type: 'progress', workerId: 'w1', output: '1' },
  { type: 'complete', workerId: 'w1', output: '1' },
  { type: 'fail', workerId: 'w1', error: 'e' },
  { type: 'cancel' },
  { type: 'timeout' },
  { type: 'retry' },
  { type: 'worker-lost', retryBudget: 3 },
];

test('changesFrom lists exactly the statuses where nextJobState changes the job (the SQL guards rely on it)', () => {
  for (const event of events)
    for (const status of JOB_STATUSES) {
      const t = nextJobState(running({ status }), event, T0 + 1000);
      assert.equal(t.kind === 'changed', changesFrom(event.type).includes(status), `${event.type} from ${status}`);
    }
});

test('only retry moves a job out of a terminal state, and every terminal job has a completion time', () => {
  const arbEvent = fc.constantFrom(...events);
  fc.assert(
    fc.property(fc.array(arbEvent, { maxLength: 30 }), (seq) => {
      let job = queued();
      let now = T0;
      for (const event of seq) {
        now += 10;
        const t = nextJobState(job, event, now);
        if (t.kind === 'changed') {
          if (isTerminalJobStatus(job.status)) assert.equal(event.type, 'retry');
          if (isTerminalJobStatus(t.job.status)) assert.notEqual(t.job.completedAt, null);
          job = t.job;
        }
      }
      const allowed: JobStatus[] = [...JOB_STATUSES];
      assert.ok(allowed.includes(job.status));
    }),
  );
});

test('the unfinished statuses are those a worker or a cancel can still move; the terminal ones are the rest', () => {
  const movable = new Set(
    (['take', 'progress', 'complete', 'fail', 'cancel', 'timeout', 'worker-lost'] as const).flatMap(changesFrom),
  );
  assert.deepEqual(
    [...UNFINISHED_JOB_STATUSES],
    JOB_STATUSES.filter((s) => movable.has(s)),
  );
  assert.deepEqual([...TERMINAL_JOB_STATUSES].sort(), JOB_STATUSES.filter((s) => !movable.has(s)).sort());
  assert.ok(TERMINAL_JOB_STATUSES.every(isTerminalJobStatus));
});

test("the result statuses are where a worker's complete and fail posts take a running job", () => {
  const after = (e: JobEvent) => changed(running(), e, T0 + 200).status;
  assert.deepEqual(
    [after({ type: 'complete', workerId: 'w1', output: null }), after({ type: 'fail', workerId: 'w1', error: 'x' })],
    [...RESULT_JOB_STATUSES],
  );
});
