import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { LbDemandStore, type LbEndpointDemand } from './lb-demand-store.js';

const T0 = 1_767_225_600_000;

const demand = (
  endpointId: string,
  waiting: number,
  inFlight: number,
  workers: LbEndpointDemand['workers'] = {},
): LbEndpointDemand => ({ endpointId, waiting, inFlight, workers });

for (const { name, skip } of dialects()) {
  describe(`LbDemandStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: LbDemandStore;

    before(async () => {
      t = await openTestDb(name);
      store = new LbDemandStore(t.db);
    });
    after(() => t?.cleanup());
    beforeEach(async () => {
      await t.db.kysely.deleteFrom('lb_demand').execute();
    });

    test("the autoscaler's replica reads the sum of the other replicas' fresh rows per endpoint, its own left out", async () => {
      await store.publish('r1', [demand('ep-a', 2, 1, { w1: { outstanding: 1, lastActiveAt: T0 + 5 } })], T0);
      await store.publish('r2', [demand('ep-a', 1, 3, { w1: { outstanding: 2, lastActiveAt: T0 + 9 } })], T0 + 100);
      await store.publish('r3', [demand('ep-b', 4, 0)], T0 + 200);
      assert.deepEqual(await store.read(T0, 'r3'), [
        demand('ep-a', 3, 4, { w1: { outstanding: 3, lastActiveAt: T0 + 9 } }),
      ]);
      assert.deepEqual(await store.read(T0, null), [
        demand('ep-a', 3, 4, { w1: { outstanding: 3, lastActiveAt: T0 + 9 } }),
        demand('ep-b', 4, 0),
      ]);
    });

    test('requests pinned strict-resume to a worker are written with its counts and summed over the replicas; none written, none read', async () => {
      await store.publish(
        'r1',
        [demand('ep-a', 1, 0, { w1: { outstanding: 0, lastActiveAt: T0, resumeWanted: 1 } })],
        T0,
      );
      await store.publish(
        'r2',
        [demand('ep-a', 2, 0, { w1: { outstanding: 1, lastActiveAt: T0 + 1, resumeWanted: 2 } })],
        T0,
      );
      await store.publish('r3', [demand('ep-a', 0, 1, { w1: { outstanding: 1, lastActiveAt: T0 + 2 } })], T0);
      assert.deepEqual(await store.read(T0, null), [
        demand('ep-a', 3, 1, { w1: { outstanding: 2, lastActiveAt: T0 + 2, resumeWanted: 3 } }),
      ]);
      assert.deepEqual(await store.read(T0, 'r1'), [
        demand('ep-a', 2, 1, { w1: { outstanding: 2, lastActiveAt: T0 + 2, resumeWanted: 2 } }),
      ]);
      assert.deepEqual(await store.read(T0, 'r2'), [
        demand('ep-a', 1, 1, { w1: { outstanding: 1, lastActiveAt: T0 + 2, resumeWanted: 1 } }),
      ]);
    });

    test('requests naming a worker softly are written and summed over the replicas, apart from strict-resume ones; a shorter entry of an older replica still reads', async () => {
      await store.publish(
        'r1',
        [demand('ep-a', 1, 0, { w1: { outstanding: 0, lastActiveAt: T0, preferredWaiting: 1 } })],
        T0,
      );
      await store.publish(
        'r2',
        [demand('ep-a', 2, 0, { w1: { outstanding: 0, lastActiveAt: T0, resumeWanted: 1, preferredWaiting: 1 } })],
        T0,
      );
      await t.db.kysely
        .insertInto('lb_demand')
        .values({
          replica_id: 'old',
          endpoint_id: 'ep-a',
          waiting: 0,
          in_flight: 1,
          workers: '{"w1":[1,5]}',
          updated_at: T0,
        })
        .execute();
      assert.deepEqual(await store.read(T0, null), [
        demand('ep-a', 3, 1, {
          w1: { outstanding: 1, lastActiveAt: T0, resumeWanted: 1, preferredWaiting: 2 },
        }),
      ]);
    });

    test('a replica whose heartbeat stopped counts for nothing past the TTL, and the prune removes its rows only', async () => {
      await store.publish('dead', [demand('ep-a', 5, 5)], T0);
      await store.publish('live', [demand('ep-a', 1, 0)], T0 + 10_000);
      assert.deepEqual(await store.read(T0 + 1, null), [demand('ep-a', 1, 0)], 'the stale row is not summed');
      assert.equal(await store.prune(T0 + 1), 1);
      const left = await t.db.kysely.selectFrom('lb_demand').select('replica_id').execute();
      assert.deepEqual(
        left.map((r) => r.replica_id),
        ['live'],
      );
    });

    test("a replica's publish replaces its whole picture: an endpoint it no longer lists loses its row, others' rows stay", async () => {
      await store.publish('r1', [demand('ep-a', 1, 0), demand('ep-b', 0, 2)], T0);
      await store.publish('r2', [demand('ep-a', 0, 1)], T0);
      await store.publish('r1', [demand('ep-b', 0, 1)], T0 + 1);
      assert.deepEqual(await store.read(T0, null), [demand('ep-a', 0, 1), demand('ep-b', 0, 1)]);
      await store.publish('r1', [], T0 + 2);
      assert.deepEqual(await store.read(T0, null), [demand('ep-a', 0, 1)]);
      await store.withdraw('r2');
      assert.deepEqual(await store.read(T0, null), []);
    });

    test('a row whose counts or workers are not what a replica writes counts as nothing of them', async () => {
      await t.db.kysely
        .insertInto('lb_demand')
        .values([
          { replica_id: 'odd', endpoint_id: 'ep-a', waiting: -3, in_flight: 2, workers: 'not json', updated_at: T0 },
          {
            replica_id: 'odd2',
            endpoint_id: 'ep-a',
            waiting: 1,
            in_flight: 0,
            workers: JSON.stringify({ w1: [1, T0], w2: 'x', w3: [1] }),
            updated_at: T0,
          },
        ])
        .execute();
      assert.deepEqual(await store.read(T0, null), [
        demand('ep-a', 1, 2, { w1: { outstanding: 1, lastActiveAt: T0 } }),
      ]);
    });

    test('every replica lists the live launched workers of load-balancing endpoints with their host ports, and no queue endpoint’s', async () => {
      await sql`DELETE FROM workers`.execute(t.db.kysely);
      await sql`DELETE FROM endpoints`.execute(t.db.kysely);
      await sql`DELETE FROM accounts WHERE id = 'acct-lb'`.execute(t.db.kysely);
      await sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct-lb', 'acct-lb', ${T0})`.execute(t.db.kysely);
      for (const [id, type] of [
        ['ep-lb', 'LB'],
        ['ep-qb', 'QB'],
      ] as const)
        await sql`INSERT INTO endpoints (id, account_id, name, template_id, type, created_at, updated_at)
          VALUES (${id}, 'acct-lb', ${id}, 'tpl', ${type}, ${T0}, ${T0})`.execute(t.db.kysely);
      const worker = (id: string, endpointId: string, status: string, hostId: string | null, allocation: unknown) =>
        sql`INSERT INTO workers (id, endpoint_id, status, host_id, last_ping_at, created_at, updated_at, allocation)
          VALUES (${id}, ${endpointId}, ${status}, ${hostId}, NULL, ${T0}, ${T0}, ${allocation === null ? null : JSON.stringify(allocation)})`.execute(
          t.db.kysely,
        );
      const alloc = (publicPorts?: unknown) => ({ gpuIndices: [0], vcpus: 1, memoryGb: 1, diskGb: 5, publicPorts });
      await worker('w-ready', 'ep-lb', 'idle', 'host-1', alloc([31000, 31001]));
      await worker('w-init', 'ep-lb', 'initializing', 'host-1', alloc([31002]));
      await worker('w-old', 'ep-lb', 'idle', 'host-1', alloc());
      await worker('w-bad', 'ep-lb', 'idle', 'host-1', alloc([0, 'x']));
      await worker('w-dead', 'ep-lb', 'dead', 'host-1', alloc([31003]));
      await worker('w-hand', 'ep-lb', 'idle', null, null);
      await worker('w-queue', 'ep-qb', 'idle', 'host-1', alloc([31004]));
      await worker('w-susp', 'ep-lb', 'suspended', 'host-1', alloc([31005]));
      const row = (id: string, publicPorts: number[], suspended = false) => ({
        id,
        endpointId: 'ep-lb',
        accountId: 'acct-lb',
        publicPorts,
        suspended,
      });
      assert.deepEqual(await store.balancedWorkers(), [
        row('w-bad', []),
        row('w-init', [31002]),
        row('w-old', []),
        row('w-ready', [31000, 31001]),
        row('w-susp', [31005], true),
      ]);
    });
  });
}
