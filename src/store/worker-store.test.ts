import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import type { WorkerStatus } from '../domain/worker-state.js';
import { WorkerStore } from './worker-store.js';

const T0 = 1_767_225_600_000;

for (const { name, skip } of dialects()) {
  describe(`WorkerStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: WorkerStore;
    const row = (endpointId: string, id: string) =>
      t.db.kysely
        .selectFrom('workers')
        .selectAll()
        .where('endpoint_id', '=', endpointId)
        .where('id', '=', id)
        .executeTakeFirst();
    const launched = (endpointId: string, id: string, status: WorkerStatus) =>
      t.db.kysely
        .insertInto('workers')
        .values({
          id,
          endpoint_id: endpointId,
          status,
          host_id: 'host-1',
          last_ping_at: T0,
          created_at: T0,
          updated_at: T0,
        })
        .execute();

    before(async () => {
      t = await openTestDb(name);
      store = new WorkerStore(t.db);
    });
    after(() => t?.cleanup());
    beforeEach(async () => {
      await t.db.kysely.deleteFrom('workers').execute();
    });

    test('a sighting inserts a hand-attached row, and a returning worker keeps its row and its host', async () => {
      assert.deepEqual(await store.upsertSighting('ep1', 'w1', 'idle', T0), { hostId: null });
      await launched('ep1', 'w2', 'initializing');
      assert.deepEqual(await store.upsertSighting('ep1', 'w2', 'running', T0 + 5), { hostId: 'host-1' });
      const w2 = await row('ep1', 'w2');
      assert.equal(w2?.status, 'running');
      assert.equal(Number(w2?.last_ping_at), T0 + 5);
      assert.equal(Number(w2?.created_at), T0, 'the row is updated, not replaced');
    });

    test('written sightings never bring back a worker whose row left the live statuses meanwhile', async () => {
      await store.upsertSighting('ep1', 'alive', 'idle', T0);
      await store.upsertSighting('ep1', 'gone', 'idle', T0);
      await store.markDead('ep1', ['gone'], T0 + 1);
      await store.writeSightings(
        [
          { endpointId: 'ep1', workerId: 'alive', status: 'running', lastSeen: T0 + 10 },
          { endpointId: 'ep1', workerId: 'gone', status: 'running', lastSeen: T0 + 10 },
        ],
        T0 + 20,
      );
      assert.equal((await row('ep1', 'alive'))?.status, 'running');
      assert.equal(Number((await row('ep1', 'alive'))?.last_ping_at), T0 + 10);
      assert.equal((await row('ep1', 'gone'))?.status, 'dead');
    });

    test('silent workers are the live and unhealthy ones pinged before the cutoff; dead rows go once old enough', async () => {
      await store.upsertSighting('ep1', 'old', 'idle', T0);
      await store.upsertSighting('ep1', 'sick', 'unhealthy', T0);
      await store.upsertSighting('ep1', 'fresh', 'running', T0 + 60_000);
      await store.upsertSighting('ep1', 'dead', 'idle', T0);
      await store.markDead('ep1', ['dead'], T0 + 1_000);
      const silent = (await store.silentSince(T0 + 30_000)).map((r) => r.id).sort();
      assert.deepEqual(silent, ['old', 'sick']);
      assert.equal(await store.deleteTerminalBefore(T0 + 1_000), 0, 'dead since exactly the cutoff: kept');
      assert.equal(await store.deleteTerminalBefore(T0 + 1_001), 1);
      assert.equal(await row('ep1', 'dead'), undefined);
    });

    test('live counts take only launched workers; health counts take every row of the endpoint by status', async () => {
      await launched('ep1', 'l1', 'idle');
      await launched('ep1', 'l2', 'running');
      await launched('ep1', 'l3', 'initializing');
      await launched('ep2', 'l4', 'idle');
      await store.upsertSighting('ep1', 'hand', 'idle', T0);
      assert.deepEqual([...(await store.liveLaunchedCounts())].sort(), [
        ['ep1', 2],
        ['ep2', 1],
      ]);
      const by = await store.countByStatus('ep1');
      assert.equal(by.get('idle'), 2);
      assert.equal(by.get('running'), 1);
      assert.equal(by.get('initializing'), 1);
    });

    test('the hand-attached cap counts and drops only rows without a host', async () => {
      await launched('ep1', 'l-dead', 'dead');
      await store.upsertSighting('ep1', 'h-live', 'idle', T0);
      await store.upsertSighting('ep1', 'h-dead', 'idle', T0);
      await store.markDead('ep1', ['h-dead'], T0);
      const counts = new Map((await store.countAttachedByStatus('ep1')).map((r) => [r.status, Number(r.n)]));
      assert.deepEqual([...counts].sort(), [
        ['dead', 1],
        ['idle', 1],
      ]);
      await store.deleteDeadAttached('ep1');
      assert.equal(await store.statusOf('ep1', 'h-dead'), undefined);
      assert.equal(await store.statusOf('ep1', 'l-dead'), 'dead', 'a launched row stays');
      assert.equal(await store.statusOf('ep1', 'h-live'), 'idle');
      assert.equal(await store.statusOf('ep2', 'h-live'), undefined, 'a worker id names a worker within its endpoint');
    });
  });
}
