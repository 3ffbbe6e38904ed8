import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import type SqliteDatabase from 'better-sqlite3';
import { openTestDb, type TestDb } from '../../test/support/harness.js';
import { SqliteJobWrites } from './sqlite-job-writes.js';

const T0 = 1_767_225_600_000;
const DAY = 86_400_000;

describe('SqliteJobWrites', () => {
  let t: TestDb;
  const writes = new SqliteJobWrites({ runMs: 1_800_000, runsyncMs: 60_000 });
  let seq = 0;
  const sync = <T>(fn: (raw: SqliteDatabase.Database) => T): Promise<T> => t.db.syncTransaction!(fn);
  const insert = async (id: string, patch: { endpointId?: string; sync?: boolean; ttl?: number } = {}) => {
    seq++;
    await t.db.kysely
      .insertInto('jobs')
      .values({
        id,
        endpoint_id: patch.endpointId ?? 'ep',
        account_id: 'acct',
        status: 'IN_QUEUE',
        seq,
        input: '{}',
        execution_timeout_ms: 600_000,
        ttl_ms: patch.ttl ?? DAY,
        sync: patch.sync ? 1 : 0,
        created_at: T0,
        queued_at: T0,
        expires_at: T0 + (patch.ttl ?? DAY),
      } as never)
      .execute();
  };
  const row = (id: string) => t.db.kysely.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  before(async () => {
    t = await openTestDb('sqlite');
  });
  after(() => t?.cleanup());
  beforeEach(async () => {
    await t.db.kysely.deleteFrom('jobs').execute();
    await t.db.kysely.deleteFrom('webhook_deliveries').execute();
  });

  test('takes deal the queue head out FIFO to the requests in order, claiming each job for its worker', async () => {
    for (const id of ['a', 'b', 'c', 'd']) await insert(id);
    await insert('other', { endpointId: 'ep-2' });
    const [first, second, none] = await sync((raw) =>
      writes.take(
        raw,
        [
          { endpointId: 'ep', workerId: 'w1', n: 1 },
          { endpointId: 'ep', workerId: 'w2', n: 2 },
          { endpointId: 'ep-3', workerId: 'w3', n: 5 },
        ],
        T0 + 100,
      ),
    );
    assert.deepEqual(
      first!.map((r) => [r.id, r.worker_id]),
      [['a', 'w1']],
    );
    assert.deepEqual(
      second!.map((r) => [r.id, r.worker_id]),
      [
        ['b', 'w2'],
        ['c', 'w2'],
      ],
    );
    assert.deepEqual(none, []);
    const b = await row('b');
    assert.equal(b.status, 'IN_PROGRESS');
    assert.equal(Number(b.delay_ms), 100);
    assert.equal(Number(b.timeout_at), T0 + 100 + 600_000);
    assert.equal((await row('d')).status, 'IN_QUEUE');
  });

  test('an expired job is not taken', async () => {
    await insert('old', { ttl: 10_000 });
    const [taken] = await sync((raw) => writes.take(raw, [{ endpointId: 'ep', workerId: 'w1', n: 1 }], T0 + 10_000));
    assert.deepEqual(taken, []);
  });

  test("a result applies only to a job in progress on that worker; its retention follows the job's sync flag", async () => {
    await insert('run');
    await insert('rs', { sync: true });
    await sync((raw) => writes.take(raw, [{ endpointId: 'ep', workerId: 'w1', n: 2 }], T0));
    const out = await sync((raw) =>
      writes.complete(
        raw,
        [
          { id: 'run', workerId: 'intruder', status: 'COMPLETED', outputJson: '1', error: null },
          { id: 'run', workerId: 'w1', status: 'COMPLETED', outputJson: '2', error: null },
          { id: 'rs', workerId: 'w1', status: 'FAILED', outputJson: null, error: 'boom' },
        ],
        T0 + 500,
      ),
    );
    assert.equal(out[0], null, "another worker's post changes nothing");
    assert.equal(out[1]?.output, '2');
    assert.equal(Number(out[1]?.retain_until), T0 + 500 + 1_800_000);
    assert.equal(out[2]?.status, 'FAILED');
    assert.equal(out[2]?.error, 'boom');
    assert.equal(Number(out[2]?.retain_until), T0 + 500 + 60_000);
    assert.equal(Number(out[2]?.execution_ms), 500);
  });

  test("a progress post in the same batch as its job's result is dropped like late progress", async () => {
    await insert('j');
    await sync((raw) => writes.take(raw, [{ endpointId: 'ep', workerId: 'w1', n: 1 }], T0));
    const out = await sync((raw) =>
      writes.complete(
        raw,
        [
          { id: 'j', workerId: 'w1', status: 'IN_PROGRESS', outputJson: '"50%"', error: null },
          { id: 'j', workerId: 'w1', status: 'COMPLETED', outputJson: '"done"', error: null },
          { id: 'j', workerId: 'w1', status: 'COMPLETED', outputJson: '"again"', error: null },
        ],
        T0 + 1,
      ),
    );
    assert.equal(out[0], null);
    assert.equal(out[1]?.output, '"done"');
    assert.equal(out[2], null, 'a repeated result is ignored');
    assert.equal((await row('j')).output, '"done"');
  });

  test('webhook outbox rows are due at once', async () => {
    await sync((raw) =>
      writes.insertWebhooks(raw, [{ id: 'd1', jobId: 'j', url: 'http://127.0.0.1:1/h', payloadJson: '{}' }], T0),
    );
    const d = await t.db.kysely.selectFrom('webhook_deliveries').selectAll().executeTakeFirstOrThrow();
    assert.equal(d.status, 'PENDING');
    assert.equal(Number(d.next_attempt_at), T0);
    assert.equal(d.attempts, 0);
  });
});
