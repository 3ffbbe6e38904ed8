import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { AccountStore } from './account-store.js';
import type { PodRecord } from './pod-record.js';
import { PodStore } from './pod-store.js';
import { sql } from 'kysely';
import { statusChangeMinCuda } from './migrations/status-change-min-cuda.js';

const pod = (over: Partial<PodRecord> & Pick<PodRecord, 'id' | 'accountId'>): PodRecord => ({
  name: 'pod',
  status: 'PROVISIONING',
  desiredStatus: 'RUNNING',
  statusReason: null,
  image: 'img:1',
  args: '--x',
  disk: 20,
  ports: ['22/tcp', '8888/http'],
  env: { A: '1' },
  hiddenEnv: { JUPYTER_PASSWORD: 'secret' },
  registry: null,
  gpuTypeId: 'NVIDIA GeForce RTX 4090',
  gpuCount: 2,
  gpuIndices: [3, 5],
  cpuFlavorId: null,
  vcpuCount: 0,
  memoryGb: 0,
  cloud: 'SECURE',
  dataCenterId: 'US-TX-3',
  hostId: 'h1',
  cudaVersion: '12.4',
  mounts: { persistent: { size: 10, path: '/workspace' } },
  portMappings: [
    { private: 22, public: 20001, type: 'tcp' },
    { private: 8888, public: 20002, type: 'http' },
  ],
  templateId: null,
  locked: false,
  globalNetworking: true,
  globalIp: '10.200.0.1',
  costPerHr: 1.38,
  bidPerGpu: null,
  constraints: {
    dataCenterIds: ['US-TX-3'],
    allowedCudaVersions: ['12.4'],
    minCudaVersion: null,
    volumeDataCenterId: null,
  },
  cluster: null,
  clusterMember: null,
  createdAt: 1_700_000_000_000,
  startedAt: null,
  updatedAt: 1_700_000_000_000,
  statusChangedAt: 1_700_000_000_000,
  terminatedAt: null,
  startSsh: true,
  sshToken: null,
  ...over,
});

for (const { name, skip } of dialects()) {
  describe(`PodStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: PodStore;
    before(async () => {
      t = await openTestDb(name);
      store = new PodStore(t.db);
      const accounts = new AccountStore(t.db);
      await accounts.insertAccount({ id: 'acc-a', name: 'a', sshKeys: [], createdAt: 1 });
      await accounts.insertAccount({ id: 'acc-b', name: 'b', sshKeys: [], createdAt: 1 });
    });
    after(() => t?.cleanup());

    test('a pod round-trips with every field, structured values included', async () => {
      const p = pod({ id: 'p1', accountId: 'acc-a' });
      await store.insert(p);
      assert.deepEqual(await store.get('p1'), p);
      assert.equal(await store.get('nope'), null);
    });

    test('an interruptible pod keeps its bid per GPU, and a change of bid is written', async () => {
      const p = pod({ id: 'spot-1', accountId: 'acc-b', bidPerGpu: 0.25, costPerHr: 0.5, globalIp: null });
      await store.insert(p);
      assert.deepEqual(await store.get('spot-1'), p);
      await store.update('spot-1', { bidPerGpu: 0.4, costPerHr: 0.8 });
      const changed = (await store.get('spot-1'))!;
      assert.equal(changed.bidPerGpu, 0.4);
      assert.equal(changed.costPerHr, 0.8);
      await store.update('spot-1', { status: 'TERMINATED', desiredStatus: 'TERMINATED', terminatedAt: 2 });
    });

    test('another account reads the pod as absent', async () => {
      assert.equal((await store.getOwned('acc-a', 'p1'))?.id, 'p1');
      assert.equal(await store.getOwned('acc-b', 'p1'), null);
    });

    test('update writes only the given fields', async () => {
      assert.equal(
        await store.update('p1', {
          status: 'RUNNING',
          startedAt: 5,
          statusReason: null,
          locked: true,
          env: { B: '2' },
        }),
        true,
      );
      const p = (await store.get('p1'))!;
      assert.equal(p.status, 'RUNNING');
      assert.equal(p.startedAt, 5);
      assert.equal(p.locked, true);
      assert.deepEqual(p.env, { B: '2' });
      assert.deepEqual(p.hiddenEnv, { JUPYTER_PASSWORD: 'secret' });
      assert.equal(p.image, 'img:1');
      assert.equal(await store.update('nope', { status: 'RUNNING' }), false);
    });

    test('lists hide TERMINATED and cluster pods unless asked, and filter by status, name, GPU type and data center', async () => {
      await store.insert(
        pod({
          id: 'p2',
          accountId: 'acc-a',
          name: 'gone',
          status: 'TERMINATED',
          desiredStatus: 'TERMINATED',
          terminatedAt: 2_000_000_000_001,
          globalIp: '10.200.0.2',
          createdAt: 2_000_000_000_000,
        }),
      );
      await store.insert(
        pod({
          id: 'p3',
          accountId: 'acc-a',
          name: 'member',
          cluster: 'c1',
          globalIp: null,
          createdAt: 2_000_000_000_001,
        }),
      );
      await store.insert(
        pod({
          id: 'p4',
          accountId: 'acc-a',
          name: 'cpu',
          gpuTypeId: null,
          cpuFlavorId: 'cpu3c',
          dataCenterId: 'EU-RO-1',
          globalIp: null,
          status: 'EXITED',
          createdAt: 2_000_000_000_002,
        }),
      );
      await store.insert(pod({ id: 'p5', accountId: 'acc-b', globalIp: '10.200.0.5' }));
      const ids = async (f: Parameters<PodStore['list']>[1]) => (await store.list('acc-a', f)).map((p) => p.id);
      assert.deepEqual(await ids({}), ['p1', 'p4']);
      assert.deepEqual(await ids({ includeTerminated: true }), ['p1', 'p2', 'p4']);
      assert.deepEqual(await ids({ includeClusterPods: true }), ['p1', 'p3', 'p4']);
      assert.deepEqual(await ids({ status: 'TERMINATED' }), ['p2']);
      assert.deepEqual(await ids({ status: 'EXITED' }), ['p4']);
      assert.deepEqual(await ids({ name: 'cpu' }), ['p4']);
      assert.deepEqual(await ids({ gpuTypeId: 'NVIDIA GeForce RTX 4090' }), ['p1']);
      assert.deepEqual(await ids({ dataCenterId: 'EU-RO-1' }), ['p4']);
    });

    test('active pods and held global addresses exclude TERMINATED pods, across accounts', async () => {
      assert.deepEqual((await store.listActive()).map((p) => p.id).sort(), ['p1', 'p3', 'p4', 'p5']);
      assert.deepEqual((await store.listGlobalIps()).sort(), ['10.200.0.1', '10.200.0.5']);
      const states = (await store.listActiveStates()).sort((x, y) => x.id.localeCompare(y.id));
      assert.deepEqual(
        states.map((s) => s.id),
        ['p1', 'p3', 'p4', 'p5'],
      );
      assert.deepEqual(states[0], { id: 'p1', status: 'RUNNING', desiredStatus: 'RUNNING' });
    });

    test('usage intervals open and close, and closing touches only open ones', async () => {
      await store.openUsage({ id: 'u1', podId: 'p1', accountId: 'acc-a', costPerHr: 1.5, startedAt: 1000 });
      await store.closeUsage('p1', 2000);
      await store.openUsage({ id: 'u2', podId: 'p1', accountId: 'acc-a', costPerHr: 2, startedAt: 3000 });
      await store.closeUsage('p1', 4000);
      await store.closeUsage('p1', 9000);
      assert.deepEqual(await store.listUsage('p1'), [
        { id: 'u1', podId: 'p1', accountId: 'acc-a', costPerHr: 1.5, startedAt: 1000, endedAt: 2000 },
        { id: 'u2', podId: 'p1', accountId: 'acc-a', costPerHr: 2, startedAt: 3000, endedAt: 4000 },
      ]);
    });

    test('a transaction that throws leaves neither the pod change nor the usage behind', async () => {
      await assert.rejects(
        store.withTransaction(async (tx) => {
          await store.update('p1', { status: 'EXITED' }, tx);
          await store.openUsage({ id: 'u3', podId: 'p1', accountId: 'acc-a', costPerHr: 1, startedAt: 1 }, tx);
          throw new Error('boom');
        }),
      );
      assert.equal((await store.get('p1'))!.status, 'RUNNING');
      assert.equal((await store.listUsage('p1')).length, 2);
    });

    test('a read racing a write never leaves the older row to be served afterwards', async () => {
      await store.insert(pod({ id: 'race', accountId: 'acc-a', name: 'before' }));
      for (let i = 0; i < 20; i++) {
        const racing = store.get('race'); // not awaited: the update below interleaves with it
        await store.update('race', { name: `after-${i}` });
        await racing;
        assert.equal((await store.get('race'))?.name, `after-${i}`);
      }
    });

    test('concurrent inserts and RUNNING marks all commit, each visible to its caller', async () => {
      await Promise.all(
        Array.from({ length: 25 }, (_, i) => store.insert(pod({ id: `batch-${i}`, accountId: 'acc-b' }))),
      );
      await Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          store.markRunning(
            `batch-${i}`,
            { status: 'RUNNING', startedAt: 9 },
            { id: `u-${i}`, podId: `batch-${i}`, accountId: 'acc-b', costPerHr: 1, startedAt: 9 },
          ),
        ),
      );
      for (let i = 0; i < 25; i++) {
        assert.equal((await store.get(`batch-${i}`))?.status, 'RUNNING');
        assert.equal((await store.listUsage(`batch-${i}`)).length, 1);
      }
    });
    test('a pod is found by its SSH routing token, and keeps startSsh', async () => {
      await store.insert(pod({ id: 'pod-ssh-1', accountId: 'acc-a', sshToken: 'tok-ssh-1', startSsh: false }));
      const found = await store.getBySshToken('tok-ssh-1');
      assert.equal(found?.id, 'pod-ssh-1');
      assert.equal(found?.startSsh, false);
      assert.equal(await store.getBySshToken('tok-unknown'), null);
      await assert.rejects(
        store.insert(pod({ id: 'pod-ssh-2', accountId: 'acc-b', sshToken: 'tok-ssh-1' })),
        'tokens are unique',
      );
    });

    test('migration 0018 dates the last status change of pods stored before it: terminated, started, else last written', async () => {
      const at = { createdAt: 100, updatedAt: 900, statusChangedAt: 0 };
      await store.insert(
        pod({ id: 'm-term', accountId: 'acc-a', ...at, status: 'TERMINATED', terminatedAt: 700, sshToken: 'm1' }),
      );
      await store.insert(
        pod({ id: 'm-run', accountId: 'acc-a', ...at, status: 'RUNNING', startedAt: 500, sshToken: 'm2' }),
      );
      await store.insert(
        pod({ id: 'm-exit', accountId: 'acc-a', ...at, status: 'EXITED', startedAt: 500, sshToken: 'm3' }),
      );
      const ids = ['m-term', 'm-run', 'm-exit'];
      await t.db.kysely.updateTable('pods').set({ status_changed_at: null }).where('id', 'in', ids).execute();
      const backfill = statusChangeMinCuda(name).filter((s) => s.startsWith('UPDATE pods'));
      assert.equal(backfill.length, 1);
      for (const s of backfill) await sql.raw(s).execute(t.db.kysely);
      const fresh = new PodStore(t.db);
      const changed = await Promise.all(ids.map(async (id) => (await fresh.get(id))!.statusChangedAt));
      assert.deepEqual(changed, [700, 500, 900]);
    });
  });
}
