import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { openTestDb, type TestDb } from '../../test/support/harness.js';
import { FakeClock } from '../domain/clock.js';
import { EventBus } from '../events.js';
import type { JobFlow } from './job-flow.js';
import { JobsService } from './jobs-service.js';

describe('jobs given back by their own worker', () => {
  let t: TestDb;
  let clock: FakeClock;
  let jobs: JobsService;
  let moves: string[];
  let failedEvents: string[];
  let logged: Array<{ fields: Record<string, unknown>; message: string }>;
  const logger = {
    warn: (fields: Record<string, unknown>, message: string): void => void logged.push({ fields, message }),
  } as unknown as NonNullable<ConstructorParameters<typeof JobsService>[0]['logger']>;

  before(async () => {
    t = await openTestDb('sqlite');
  });
  after(() => t?.cleanup());
  beforeEach(async () => {
    await t.db.kysely.deleteFrom('jobs').execute();
    clock = new FakeClock();
    moves = [];
    failedEvents = [];
    logged = [];
    const events = new EventBus();
    events.on('job:failed', (p) => failedEvents.push(p.job.id));
    const flow: JobFlow = {
      submitted: () => {},
      taken: (taken) => moves.push(`taken ${taken.length}`),
      requeued: (endpointId, n, from) => moves.push(`requeued ${n} of ${endpointId} from ${from}`),
      finished: (done) => moves.push(`finished ${done.map((j) => j.status).join(',')}`),
      removed: () => {},
    };
    jobs = new JobsService({
      db: t.db,
      clock,
      events,
      flow,
      logger,
      config: { retryBudget: 1, heartbeatTimeoutMs: 30_000 },
    });
  });

  test("a ping's give-back is counted, wakes the endpoint's takers, and logs one line naming the worker and the jobs", async () => {
    const { id } = await jobs.client.submit('ep1', 'acct1', { input: {} });
    await jobs.worker.take('ep1', 'w1');
    clock.advance(30_001);
    const waiting = jobs.worker.take('ep1', 'w2', { waitMs: 60_000 });
    const moved = await jobs.worker.pinged('ep1', 'w1', []);
    assert.deepEqual(moved, { requeued: [id], failed: [] });
    assert.deepEqual(
      (await waiting).map((j) => j.id),
      [id],
      'the waiting take was woken and got it',
    );
    assert.deepEqual(moves, ['taken 1', 'requeued 1 of ep1 from running', 'taken 1']);
    assert.equal(logged.length, 1);
    assert.deepEqual(logged[0]!.fields, { workerId: 'w1', endpointId: 'ep1', listed: [], requeued: [id], failed: [] });
    assert.deepEqual(await jobs.worker.pinged('ep1', 'w1', []), { requeued: [], failed: [] }, 'nothing twice');
    assert.equal(logged.length, 1);
  });

  test('past the retry budget the job given back by a take FAILS, finished like any failed job, and the take logs it', async () => {
    const { id } = await jobs.client.submit('ep1', 'acct1', { input: {} });
    await jobs.worker.take('ep1', 'w1');
    await jobs.worker.take('ep1', 'w1', { holdsNone: true }); // given back once, taken again
    assert.deepEqual(await jobs.worker.take('ep1', 'w1', { holdsNone: true }), []);
    const view = await jobs.client.status('acct1', 'ep1', id);
    assert.deepEqual([view.status, view.retries], ['FAILED', 1]);
    assert.deepEqual(failedEvents, [id]);
    assert.deepEqual(moves, ['taken 1', 'requeued 1 of ep1 from running', 'taken 1', 'finished FAILED']);
    assert.deepEqual(
      logged.map((l) => [l.message, l.fields.workerIds, l.fields.requeued, l.fields.failed]),
      [
        ["jobs given back: their worker's take says it holds no job", ['w1'], [id], []],
        ["jobs given back: their worker's take says it holds no job", ['w1'], [], [id]],
      ],
    );
  });
});
