import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import type { Endpoint } from '../domain/endpoint.js';
import { AccountStore } from './account-store.js';
import { EndpointStore } from './endpoint-store.js';

const endpoint = (over: Partial<Endpoint> = {}): Endpoint => ({
  id: 'e1',
  accountId: 'a1',
  name: 'my-endpoint',
  templateId: 't1',
  type: 'QB',
  gpuIds: ['ADA_24', 'AMPERE_24'],
  gpuCount: 2,
  instanceIds: [],
  locations: ['US', 'RO'],
  networkVolumeId: 'v1',
  idleTimeout: 30,
  scalerType: 'REQUEST_COUNT',
  scalerValue: 7,
  workersMin: 1,
  workersMax: 5,
  flashboot: true,
  flashBootKeepSeconds: 1_800,
  allowedCudaVersions: ['12.4', '12.8'],
  minCudaVersion: '12.4',
  executionTimeoutMs: 1_200_000,
  env: { A: '1', B: 'two' },
  createdAt: 1_700_000_000_000,
  updatedAt: 1_700_000_000_000,
  version: 1,
  ...over,
});

for (const { name, skip } of dialects()) {
  describe(`EndpointStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: EndpointStore;
    before(async () => {
      t = await openTestDb(name);
      store = new EndpointStore(t.db);
      const accounts = new AccountStore(t.db);
      await accounts.insertAccount({ id: 'a1', name: 'alice', sshKeys: [], createdAt: 1 });
      await accounts.insertAccount({ id: 'a2', name: 'bob', sshKeys: [], createdAt: 1 });
    });
    after(() => t?.cleanup());

    test('an endpoint round-trips with every field, lists included', async () => {
      await store.insert(endpoint());
      assert.deepEqual(await store.get('a1', 'e1'), endpoint());
    });

    test('empty lists and no volume round-trip as empty and null', async () => {
      const bare = endpoint({
        id: 'e0',
        gpuIds: ['AMPERE_16'],
        locations: [],
        networkVolumeId: null,
        allowedCudaVersions: [],
        env: {},
        flashboot: false,
        createdAt: 1_700_000_000_001,
      });
      await store.insert(bare);
      assert.deepEqual(await store.get('a1', 'e0'), bare);
    });

    test("a CPU endpoint's instance ids and data-center locations round-trip in order", async () => {
      const cpu = endpoint({
        id: 'e-cpu',
        gpuIds: [],
        instanceIds: ['cpu3g-4-16', 'cpu3c-4-8'],
        locations: ['US-TX-3', 'RO'],
        allowedCudaVersions: [],
        minCudaVersion: null,
        createdAt: 1_700_000_000_002,
      });
      await store.insert(cpu);
      assert.deepEqual(await store.get('a1', 'e-cpu'), cpu);
      assert.equal(await store.replace({ ...cpu, instanceIds: ['cpu3c-2-4'], version: 2 }, 1), true);
      assert.deepEqual((await store.get('a1', 'e-cpu'))?.instanceIds, ['cpu3c-2-4']);
      assert.equal(await store.delete('a1', 'e-cpu'), true);
    });

    test('another account cannot read, list, replace or delete the endpoint', async () => {
      assert.equal(await store.get('a2', 'e1'), null);
      assert.deepEqual(await store.list('a2'), []);
      assert.equal(await store.replace({ ...endpoint(), accountId: 'a2', version: 2 }, 1), false);
      assert.equal(await store.delete('a2', 'e1'), false);
      assert.ok(await store.get('a1', 'e1'));
    });

    test('list answers the account’s endpoints oldest first', async () => {
      await store.insert(endpoint({ id: 'e2', accountId: 'a2', createdAt: 1_700_000_000_002 }));
      assert.deepEqual(
        (await store.list('a1')).map((e) => e.id),
        ['e1', 'e0'],
      );
      assert.deepEqual(
        (await store.list('a2')).map((e) => e.id),
        ['e2'],
      );
    });

    test('replace writes only over the expected version', async () => {
      const next = endpoint({
        name: 'renamed',
        gpuIds: ['AMPERE_80'],
        workersMax: 9,
        flashBootKeepSeconds: 60,
        version: 2,
        updatedAt: 5,
      });
      assert.equal(await store.replace(next, 1), true);
      assert.deepEqual(await store.get('a1', 'e1'), next);
      assert.equal(await store.replace({ ...next, name: 'stale', version: 2 }, 1), false);
      assert.equal((await store.get('a1', 'e1'))?.name, 'renamed');
    });

    test('boundToTemplate lists the account’s endpoints using a template', async () => {
      assert.deepEqual(await store.boundToTemplate('a1', 't1'), [
        { id: 'e1', name: 'renamed' },
        { id: 'e0', name: 'my-endpoint' },
      ]);
      assert.deepEqual(await store.boundToTemplate('a1', 'other'), []);
    });

    test('workers lists the endpoint’s worker rows oldest first, with the version and placement a launched one recorded', async () => {
      const worker = (
        id: string,
        endpointId: string,
        createdAt: number,
        lastPingAt: number | null,
        launched: { endpoint_version: number; allocation: string } | null = null,
      ) =>
        t.db.kysely
          .insertInto('workers')
          .values({
            id,
            endpoint_id: endpointId,
            status: 'running',
            host_id: null,
            last_ping_at: lastPingAt,
            created_at: createdAt,
            updated_at: createdAt,
            ...launched,
          })
          .execute();
      const allocation = JSON.stringify({
        gpuIndices: [0, 1],
        vcpus: 8,
        memoryGb: 32,
        diskGb: 20,
        gpuTypeId: 'NVIDIA RTX 4090',
        dataCenterId: 'US-TX-3',
        image: 'img:1',
      });
      await worker('w2', 'e1', 20, null, { endpoint_version: 3, allocation });
      await worker('w1', 'e1', 10, 15);
      await worker('w3', 'e2', 5, null);
      assert.deepEqual(await store.workers('e1'), [
        {
          id: 'w1',
          endpointId: 'e1',
          status: 'running',
          createdAt: 10,
          lastPingAt: 15,
          endpointVersion: null,
          gpuCount: 0,
          gpuTypeId: null,
          dataCenterId: null,
          image: null,
        },
        {
          id: 'w2',
          endpointId: 'e1',
          status: 'running',
          createdAt: 20,
          lastPingAt: null,
          endpointVersion: 3,
          gpuCount: 2,
          gpuTypeId: 'NVIDIA RTX 4090',
          dataCenterId: 'US-TX-3',
          image: 'img:1',
        },
      ]);
    });

    test('releases list newest first and go with their endpoint when it is deleted', async () => {
      const rel = (id: string, version: number) => ({
        id,
        endpointId: 'e0',
        accountId: 'a1',
        version,
        source: 'MANUAL' as const,
        diff: [{ field: 'gpuCount', old: version - 1, new: version }],
        createdAt: version * 10,
      });
      await store.insertRelease(rel('r1', 1));
      await store.insertRelease(rel('r3', 3));
      assert.deepEqual(await store.releases('e0'), [rel('r3', 3), rel('r1', 1)]);
      assert.equal(await store.delete('a1', 'e0'), true);
      assert.deepEqual(await store.releases('e0'), []);
    });

    test('delete removes the row once', async () => {
      await store.insert({ ...(await store.get('a1', 'e1'))!, id: 'e0' });
      assert.equal(await store.delete('a1', 'e0'), true);
      assert.equal(await store.delete('a1', 'e0'), false);
      assert.equal(await store.get('a1', 'e0'), null);
    });
  });
}
