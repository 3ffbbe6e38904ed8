import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { HostStore, type HostRecord } from './host-store.js';
import { OperationStore } from './operation-store.js';
import type { HostCapacity } from './protocol.js';

const capacity: HostCapacity = {
  vcpus: 32,
  memoryGb: 125.5,
  diskGb: 900,
  gpus: [{ uuid: 'GPU-aaaa-0001', name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 }],
  cudaVersion: '12.4',
  gpuMode: 'nvidia',
  cpuFlavors: [],
  notes: ['a note'],
};

const host = (over: Partial<HostRecord> & Pick<HostRecord, 'id'>): HostRecord => ({
  name: 'gpu-07',
  credentialHash: `hash-${over.id}`,
  dataCenterId: 'US-TX-3',
  cloud: 'SECURE',
  publicIp: '203.0.113.7',
  portRange: [40000, 40999],
  capacity,
  agentVersion: '0.1.0',
  joinedAt: 1_000,
  lastReportAt: 1_000,
  revokedAt: null,
  ...over,
});

for (const { name, skip } of dialects()) {
  describe(`HostStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: HostStore;
    before(async () => {
      t = await openTestDb(name);
      store = new HostStore(t.db);
    });
    after(() => t?.cleanup());

    test('a join token is spent once, only before it expires, and says where the host goes', async () => {
      await store.insertJoinToken({
        hash: 'tok-1',
        dataCenterId: 'EU-RO-1',
        cloud: 'COMMUNITY',
        createdAt: 100,
        expiresAt: 200,
      });
      await store.insertJoinToken({
        hash: 'tok-2',
        dataCenterId: 'US-TX-3',
        cloud: 'SECURE',
        createdAt: 100,
        expiresAt: 200,
      });
      assert.equal(await store.spendJoinToken('tok-2', 'host-x', 200), null, 'expired at its expiry');
      assert.deepEqual(await store.spendJoinToken('tok-1', 'host-a', 150), {
        dataCenterId: 'EU-RO-1',
        cloud: 'COMMUNITY',
      });
      assert.equal(await store.spendJoinToken('tok-1', 'host-b', 151), null, 'used');
      assert.equal(await store.spendJoinToken('nope', 'host-b', 151), null, 'unknown');
      const row = await t.db.kysely
        .selectFrom('join_tokens')
        .selectAll()
        .where('hash', '=', 'tok-1')
        .executeTakeFirstOrThrow();
      assert.deepEqual([Number(row.used_at), row.used_by_host], [150, 'host-a']);
    });

    test('spent and expired tokens are pruned after their retention, live ones kept', async () => {
      await store.insertJoinToken({
        hash: 'tok-3',
        dataCenterId: 'US-TX-3',
        cloud: 'SECURE',
        createdAt: 100,
        expiresAt: 10_000,
      });
      assert.equal(await store.pruneJoinTokens(201), 2);
      assert.deepEqual(
        (await t.db.kysely.selectFrom('join_tokens').select('hash').execute()).map((r) => r.hash),
        ['tok-3'],
      );
    });

    test('a host round-trips with its capacity, port range and times', async () => {
      await store.insertHost(host({ id: 'host-a' }));
      assert.deepEqual(await store.getHost('host-a'), host({ id: 'host-a' }));
      assert.equal(await store.getHost('host-none'), null);
    });

    test('a GPU belongs to one host: the owners of UUIDs are found, and a second claim is refused by the key', async () => {
      await store.insertHost(host({ id: 'host-b', joinedAt: 2_000 }));
      await store.setHostGpus('host-a', ['GPU-aaaa-0001', 'GPU-aaaa-0002']);
      assert.deepEqual(
        await store.gpuOwners(['GPU-aaaa-0002', 'GPU-bbbb-0001']),
        new Map([['GPU-aaaa-0002', 'host-a']]),
      );
      await assert.rejects(store.setHostGpus('host-b', ['GPU-aaaa-0001']));
      await store.setHostGpus('host-a', ['GPU-aaaa-0001']);
      assert.deepEqual(await store.gpuOwners(['GPU-aaaa-0002']), new Map());
    });

    test('last-report times are written in one batch and never move back', async () => {
      await store.touchHosts([
        ['host-a', 5_000],
        ['host-b', 3_000],
      ]);
      await store.touchHosts([['host-a', 4_000]]);
      assert.equal((await store.getHost('host-a'))!.lastReportAt, 5_000);
      assert.equal((await store.getHost('host-b'))!.lastReportAt, 3_000);
      // past one statement's worth of rows: every chunk is written
      const many = Array.from(
        { length: 1200 },
        (_, i) => [i === 1199 ? 'host-a' : i === 0 ? 'host-b' : `host-gone-${i}`, 6_000 + i] as const,
      );
      await store.touchHosts(many);
      assert.equal((await store.getHost('host-a'))!.lastReportAt, 7_199);
      assert.equal((await store.getHost('host-b'))!.lastReportAt, 6_000);
    });

    test('a capacity changes only on a live host', async () => {
      const bigger = { ...capacity, vcpus: 64 };
      assert.equal(await store.updateCapacity('host-b', bigger), true);
      assert.equal((await store.getHost('host-b'))!.capacity.vcpus, 64);
    });

    test('revoking frees the GPUs, drops pending operations, keeps acknowledged ones, and happens once', async () => {
      const ops = new OperationStore(t.db);
      await ops.enqueue('host-a', { id: 'op-1', kind: 'stop', instanceId: 'p1', volumeId: null, body: 'sealed' }, 10);
      await ops.enqueue('host-a', { id: 'op-2', kind: 'stop', instanceId: 'p2', volumeId: null, body: 'sealed' }, 10);
      await ops.ack('host-a', [{ id: 'op-1', ok: true, error: null }], 11);
      const revoked = await store.revokeHost('host-a', 8_000);
      assert.equal(revoked?.revokedAt, 8_000);
      assert.equal(await store.revokeHost('host-a', 9_000), null);
      assert.deepEqual(await store.gpuOwners(['GPU-aaaa-0001']), new Map());
      assert.deepEqual(
        (await ops.get(['op-1', 'op-2'])).map((o) => o.id),
        ['op-1'],
      );
      assert.equal(await store.updateCapacity('host-a', capacity), false);
      assert.deepEqual(await store.revokedSince(8_000), [{ id: 'host-a', revokedAt: 8_000 }]);
      assert.deepEqual(await store.revokedSince(8_001), []);
    });

    test('instances are counted per host from the pods and workers that hold one', async () => {
      await t.db.kysely
        .insertInto('accounts')
        .values({ id: 'acc', name: 'acc', ssh_keys: '[]', created_at: 1 })
        .execute();
      const pod = (id: string, status: string, hostId: string | null) =>
        t.db.kysely
          .insertInto('pods')
          .values({
            id,
            account_id: 'acc',
            name: id,
            status,
            desired_status: 'RUNNING',
            image: 'i',
            disk: 1,
            cloud: 'SECURE',
            host_id: hostId,
            cost_per_hr: 0,
            constraints: '{}',
            created_at: 1,
            updated_at: 1,
          } as never)
          .execute();
      await pod('p1', 'RUNNING', 'host-b');
      await pod('p2', 'STARTING', 'host-b');
      await pod('p3', 'EXITED', 'host-b');
      await pod('p4', 'RUNNING', 'host-c');
      await t.db.kysely
        .insertInto('workers')
        .values({
          id: 'w1',
          endpoint_id: 'e1',
          status: 'idle',
          host_id: 'host-b',
          last_ping_at: 1,
          created_at: 1,
          updated_at: 1,
          allocation: null,
        })
        .execute();
      await t.db.kysely
        .insertInto('workers')
        .values({
          id: 'w2',
          endpoint_id: 'e1',
          status: 'dead',
          host_id: 'host-b',
          last_ping_at: 1,
          created_at: 1,
          updated_at: 1,
          allocation: null,
        })
        .execute();
      assert.deepEqual(
        await store.instanceCounts(),
        new Map([
          ['host-b', 3],
          ['host-c', 1],
        ]),
      );
    });

    test('hosts are listed oldest first, revoked ones included', async () => {
      assert.deepEqual(
        (await store.listHosts()).map((h) => [h.id, h.revokedAt]),
        [
          ['host-a', 8_000],
          ['host-b', null],
        ],
      );
    });
  });
}
