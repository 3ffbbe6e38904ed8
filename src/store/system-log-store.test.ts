import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { FakeClock } from '../domain/clock.js';
import { SystemLog } from '../logs/system-log.js';
import { SystemLogStore } from './system-log-store.js';

for (const { name, skip } of dialects()) {
  describe(`SystemLogStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: SystemLogStore;
    before(async () => {
      t = await openTestDb(name);
      store = new SystemLogStore(t.db, 5);
    });
    after(() => t?.cleanup());

    test("an instance's lines read back oldest first, by time, after a seq, and as a tail", async () => {
      for (let i = 1; i <= 4; i++) await store.append('pod1', 1_000 * i, `line ${i}`);
      await store.append('pod2', 2_500, 'other pod');
      const all = await store.read('pod1');
      assert.deepEqual(
        all.map((r) => r.line),
        ['line 1', 'line 2', 'line 3', 'line 4'],
      );
      assert.deepEqual(
        all.map((r) => r.ts),
        [1_000, 2_000, 3_000, 4_000],
      );
      assert.deepEqual(
        (await store.read('pod1', { sinceMs: 2_000 })).map((r) => r.line),
        ['line 2', 'line 3', 'line 4'],
      );
      assert.deepEqual(
        (await store.read('pod1', { afterSeq: all[2]!.seq })).map((r) => r.line),
        ['line 4'],
      );
      assert.deepEqual(
        (await store.read('pod1', { tail: 2 })).map((r) => r.line),
        ['line 3', 'line 4'],
      );
      assert.deepEqual(await store.read('nobody'), []);
    });

    test('only the last lines of each instance are kept, the others untouched', async () => {
      for (let i = 5; i <= 9; i++) await store.append('pod1', 1_000 * i, `line ${i}`);
      assert.deepEqual(
        (await store.read('pod1')).map((r) => r.line),
        ['line 5', 'line 6', 'line 7', 'line 8', 'line 9'],
      );
      assert.deepEqual(
        (await store.read('pod2')).map((r) => r.line),
        ['other pod'],
      );
    });

    test('one cursor finds which instances got lines since, across instances', async () => {
      const from = await store.lastSeq();
      await store.append('pod3', 10_000, 'a');
      await store.append('pod4', 10_000, 'b');
      const { instanceIds, last } = await store.since(from);
      assert.deepEqual([...instanceIds].sort(), ['pod3', 'pod4']);
      assert.equal(last, await store.lastSeq());
      assert.equal((await store.since(last)).instanceIds.size, 0);
    });

    test('lines go with their instance, and those of terminated pods and gone workers are pruned after the cutoff', async () => {
      await store.remove('pod2');
      assert.deepEqual(await store.read('pod2'), []);
      const k = t.db.kysely;
      await k.insertInto('accounts').values({ id: 'acc', name: 'acc', ssh_keys: '[]', created_at: 1 }).execute();
      const pod = (id: string, status: string, terminatedAt: number | null) =>
        k
          .insertInto('pods')
          .values({
            id,
            account_id: 'acc',
            name: id,
            status,
            desired_status: 'RUNNING',
            image: 'x',
            disk: 20,
            cloud: 'SECURE',
            mounts: '{}',
            created_at: 1,
            updated_at: 1,
            terminated_at: terminatedAt,
          } as never)
          .execute();
      await pod('gone', 'TERMINATED', 5_000);
      await pod('late', 'TERMINATED', 50_000);
      await pod('live', 'RUNNING', null);
      for (const id of ['gone', 'late', 'live', 'worker-gone']) await store.append(id, 1_000, 'x');
      const pruned = await store.pruneGone(20_000);
      assert.ok(pruned >= 2);
      assert.deepEqual(await store.read('gone'), []);
      assert.deepEqual(await store.read('worker-gone'), []);
      assert.equal((await store.read('late')).length, 1);
      assert.equal((await store.read('live')).length, 1);
    });

    test('a follower on one replica wakes for a line another replica wrote to the shared database', async () => {
      const clock = new FakeClock(100_000);
      const logger = pino({ level: 'silent' });
      // replica B's shared poll, watched: its rounds counted, and the round that found the line
      const storeB = new SystemLogStore(t.db);
      let rounds = 0;
      let foundIn: number | null = null;
      let polled!: () => void;
      const firstPoll = new Promise<void>((resolve) => (polled = resolve));
      const since = storeB.since.bind(storeB);
      storeB.since = async (seq, limit) => {
        const found = await since(seq, limit);
        rounds++;
        if (found.instanceIds.has('pod9')) foundIn ??= rounds;
        polled();
        return found;
      };
      const replicaA = new SystemLog({ store: new SystemLogStore(t.db), clock, logger, pollMs: 20 });
      const replicaB = new SystemLog({ store: storeB, clock, logger, pollMs: 20 });
      const abort = new AbortController();
      const woken = replicaB.changed('pod9', abort.signal, 10_000).then(() => rounds);
      // B polls once it has its baseline and its follower waits: the line written now is past that baseline
      await firstPoll;
      await replicaA.write('pod9', 'placed on host h1');
      assert.equal(await woken, foundIn, 'woken by the poll round that found the line, not by the timeout');
      assert.deepEqual(
        (await replicaB.read('pod9')).map((r) => r.line),
        ['placed on host h1'],
      );
      replicaA.close();
      replicaB.close();
    });
  });
}
