// REST v2 billing (docs/billing.md) over in-process HTTP, on SQLite and PostgreSQL, with an
// injected clock: pods run as idle placeholders and stop/start through the controller while the
// clock stands still, so every interval is exactly as long as the test moved the clock.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { FakeClock } from '../src/domain/clock.js';
import { AutoscalerStore } from '../src/store/autoscaler-store.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { DEFAULT_VOLUME_PRICE_PER_GB_MONTH } from '../src/billing/billing-service.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const fleet = [
  {
    id: 'tx-4090',
    dataCenterId: 'US-TX-3',
    gpuTypeId: GPU,
    gpuCount: 64,
    cudaVersion: '12.4',
    vcpus: 256,
    memoryGb: 2048,
    diskGb: 100_000,
    portRange: [20000, 21999],
  },
  {
    id: 'tx-cpu',
    dataCenterId: 'US-TX-3',
    cpuFlavors: ['cpu3c'],
    vcpus: 256,
    memoryGb: 2048,
    portRange: [22000, 22999],
  },
];
const usd = (x: number): number => Math.round(x * 1e9) / 1e9;
const at = (iso: string): number => Date.parse(iso);
async function ok(t: TestApp, key: string, url: string): Promise<any> {
  const res = await t.request(key, 'GET', url);
  assert.equal(res.statusCode, 200, res.body);
  return json(res);
}

for (const { name, skip } of dialects()) {
  describe(`billing API on ${name}`, { skip }, () => {
    let t: TestApp;
    let clock: FakeClock;
    before(async () => {
      clock = new FakeClock(at('2026-06-01T23:59:00Z'));
      t = await createTestApp({
        dialect: name,
        clock,
        file: { rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 }, fleet },
      });
    });
    after(() => t?.close());

    const get = (key: string, url: string) => t.request(key, 'GET', url);
    const problem = (res: LightMyRequestResponse, detail: RegExp) => {
      assert.equal(res.statusCode, 400, res.body);
      assert.match(String(res.headers['content-type']), /application\/problem\+json/);
      assert.match(json(res).detail, detail);
    };
    async function waitForStatus(key: string, id: string, status: string): Promise<any> {
      const deadline = Date.now() + 10_000;
      let last: any;
      while (Date.now() < deadline) {
        last = json(await get(key, `/v2/pods/${id}`));
        if (last.status === status) return last;
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.fail(`pod ${id} did not reach ${status} (last: ${last?.status})`);
    }
    async function runningPod(key: string, body: Record<string, unknown> = { gpu: { id: GPU } }): Promise<any> {
      const res = await t.request(key, 'POST', '/v2/pods', { name: 'billed', image: 'ubuntu:22.04', ...body });
      assert.equal(res.statusCode, 201, res.body);
      return waitForStatus(key, json(res).id, 'RUNNING');
    }
    const action = async (key: string, id: string, what: 'stop' | 'start', status: string) => {
      const res = await t.request(key, 'POST', `/v2/pods/${id}/action`, { action: what });
      assert.ok(res.statusCode < 300, res.body);
      await waitForStatus(key, id, status);
    };
    const DAYS = 'startTime=2026-06-01T00:00:00Z&endTime=2026-06-03T00:00:00Z&bucketSize=day';

    test('REST v1 billing answers the same amounts as v2, per bucket or per pod when grouped by pod', async () => {
      const a = await t.newAccount();
      clock.set(at('2026-06-01T23:59:00Z'));
      const first = await runningPod(a.key);
      const second = await runningPod(a.key);
      clock.advance(120_000);
      await action(a.key, first.id, 'stop', 'EXITED');
      await action(a.key, second.id, 'stop', 'EXITED');
      const v2 = await ok(t, a.key, `/v2/billing/pods?${DAYS}`);
      const byPod = await ok(t, a.key, `/v1/billing/pods?${DAYS}&grouping=podId`);
      assert.deepEqual(
        byPod.map((r: any) => [r.time, r.podId, r.amount]).sort(),
        v2.records.map((r: any) => [r.startTime, r.podId, r.totalAmount]).sort(),
      );
      const perBucket = await ok(t, a.key, `/v1/billing/pods?${DAYS}`);
      assert.deepEqual(
        perBucket.map((r: any) => [r.time, r.amount]),
        [
          ['2026-06-01T00:00:00Z', usd((2 * 60 * first.cost) / 3600)],
          ['2026-06-02T00:00:00Z', usd((2 * 60 * first.cost) / 3600)],
        ],
      );
      const other = await t.newAccount();
      assert.deepEqual(await ok(t, other.key, `/v1/billing/pods?${DAYS}&podId=${first.id}`), []);
    });

    test('a pod that runs 90 s, is stopped, and runs 30 s more costs exactly 120 s of its price, split at midnight', async () => {
      const a = await t.newAccount();
      clock.set(at('2026-06-01T23:59:00Z'));
      const pod = await runningPod(a.key);
      const price = pod.cost as number;
      assert.ok(price > 0, 'a GPU pod has a price');
      clock.advance(90_000);
      await action(a.key, pod.id, 'stop', 'EXITED');
      clock.set(at('2026-06-02T00:10:00Z'));
      await action(a.key, pod.id, 'start', 'RUNNING');
      clock.advance(30_000);
      await action(a.key, pod.id, 'stop', 'EXITED');
      clock.advance(3_600_000); // stopped: accrues nothing more

      const body = await ok(t, a.key, `/v2/billing/pods?${DAYS}`);
      assert.deepEqual(
        body.records.map((r: any) => [r.startTime, r.endTime, r.podId, r.gpuAmount]),
        [
          ['2026-06-01T00:00:00Z', '2026-06-02T00:00:00Z', pod.id, usd((60 * price) / 3600)],
          ['2026-06-02T00:00:00Z', '2026-06-03T00:00:00Z', pod.id, usd((60 * price) / 3600)],
        ],
      );
      assert.deepEqual(body.metadata.totals, {
        totalAmount: usd((120 * price) / 3600),
        gpuAmount: usd((120 * price) / 3600),
        cpuAmount: 0,
        diskAmount: 0,
      });
      assert.deepEqual(body.metadata.query, {
        startTime: '2026-06-01T00:00:00Z',
        endTime: '2026-06-03T00:00:00Z',
        bucketSize: 'day',
        podId: null,
      });
      assert.equal(body.metadata.recordCount, 2);
      assert.equal(body.metadata.uniquePodCount, 1);

      const hours = await ok(
        t,
        a.key,
        `/v2/billing/pods?startTime=2026-06-01T23:00:00Z&endTime=2026-06-02T01:00:00Z&bucketSize=hour`,
      );
      assert.deepEqual(
        hours.records.map((r: any) => r.totalAmount),
        [usd((60 * price) / 3600), usd((60 * price) / 3600)],
      );
      const aggregate = await ok(t, a.key, `/v2/billing?${DAYS}`);
      assert.equal(aggregate.metadata.totals.podGpuAmount, usd((120 * price) / 3600));
      assert.equal(aggregate.metadata.totals.totalAmount, usd((120 * price) / 3600));
      assert.equal(aggregate.metadata.recordCount, 2);
      assert.deepEqual(Object.keys(aggregate.records[0]), [
        'startTime',
        'endTime',
        'totalAmount',
        'podGpuAmount',
        'podCpuAmount',
        'podDiskAmount',
        'serverlessGpuAmount',
        'serverlessCpuAmount',
        'serverlessDiskAmount',
        'serverlessFeeAmount',
        'storageStandardAmount',
        'storageHighPerformanceAmount',
        'endpointAmount',
        'clusterGpuAmount',
        'clusterDiskAmount',
        'clusterNetworkingAmount',
      ]);
    });

    test('pod records are one per pod per bucket, a CPU pod counts as cpuAmount, and podId narrows to one pod', async () => {
      const a = await t.newAccount();
      clock.set(at('2026-06-02T06:00:00Z'));
      const gpuPod = await runningPod(a.key);
      const cpuPod = await runningPod(a.key, { cpu: { id: 'cpu3c', vcpuCount: 2 } });
      clock.advance(3_600_000);
      const body = await ok(t, a.key, `/v2/billing/pods?${DAYS}`);
      assert.equal(body.metadata.uniquePodCount, 2);
      assert.equal(body.metadata.recordCount, 4, 'two buckets × two pods');
      const day2 = body.records.filter((r: any) => r.startTime === '2026-06-02T00:00:00Z');
      const byId = new Map(day2.map((r: any) => [r.podId, r]));
      assert.equal((byId.get(gpuPod.id) as any).gpuAmount, usd(gpuPod.cost));
      assert.equal((byId.get(cpuPod.id) as any).cpuAmount, usd(cpuPod.cost));
      assert.equal((byId.get(cpuPod.id) as any).gpuAmount, 0);

      const one = await ok(t, a.key, `/v2/billing/pods?${DAYS}&podId=${cpuPod.id}`);
      assert.deepEqual(new Set(one.records.map((r: any) => r.podId)), new Set([cpuPod.id]));
      assert.equal(one.metadata.query.podId, cpuPod.id);
      assert.equal(one.metadata.totals.totalAmount, usd(cpuPod.cost));
      await action(a.key, gpuPod.id, 'stop', 'EXITED');
      await action(a.key, cpuPod.id, 'stop', 'EXITED');
    });

    test("another account's pods never appear, even named by podId", async () => {
      const a = await t.newAccount();
      const b = await t.newAccount();
      clock.set(at('2026-06-02T08:00:00Z'));
      const theirs = await runningPod(b.key);
      clock.advance(600_000);
      const filtered = await ok(t, a.key, `/v2/billing/pods?${DAYS}&podId=${theirs.id}`);
      assert.deepEqual(filtered.records, []);
      assert.equal(filtered.metadata.totals.totalAmount, 0);
      const all = await ok(t, a.key, `/v2/billing?${DAYS}`);
      assert.equal(all.metadata.totals.totalAmount, 0);
      assert.ok((await ok(t, b.key, `/v2/billing/pods?${DAYS}&podId=${theirs.id}`)).metadata.totals.totalAmount > 0);
      await action(b.key, theirs.id, 'stop', 'EXITED');
    });

    test('a launched serverless worker is billed to its endpoint from launch to death at its GPU price', async () => {
      const a = await t.newAccount();
      const b = await t.newAccount();
      const store = new AutoscalerStore(t.services.db);
      const allocation = { gpuIndices: [0], vcpus: 4, memoryGb: 16, diskGb: 20 };
      const launch = (worker: string, endpoint: string, accountId: string, when: number) =>
        store.insertLaunched(worker, endpoint, 'tx-4090', allocation, when, {
          accountId,
          kind: 'gpu',
          costPerHr: 0.72,
        });
      await launch('w1', 'ep-a1', a.accountId, at('2026-06-01T12:00:00Z'));
      await launch('w2', 'ep-a2', a.accountId, at('2026-06-02T12:00:00Z'));
      await launch('w3', 'ep-b1', b.accountId, at('2026-06-02T12:00:00Z'));
      await t.services.workers.markDead('ep-a1', ['w1'], at('2026-06-01T12:10:00Z'));
      await t.services.workers.markDead('ep-a2', ['w2'], at('2026-06-02T12:00:45Z'));
      await t.services.workers.markDead('ep-a1', ['w1'], at('2026-06-01T18:00:00Z')); // already dead: stays ended

      const body = await ok(t, a.key, `/v2/billing/serverless?${DAYS}`);
      assert.equal(body.metadata.uniqueServerlessCount, 2);
      const cost = (id: string, day: string) =>
        body.records.find((r: any) => r.serverlessId === id && r.startTime === day)?.gpuAmount;
      assert.equal(cost('ep-a1', '2026-06-01T00:00:00Z'), usd((600 * 0.72) / 3600));
      assert.equal(cost('ep-a1', '2026-06-02T00:00:00Z'), 0);
      assert.equal(cost('ep-a2', '2026-06-02T00:00:00Z'), usd((45 * 0.72) / 3600));
      assert.ok(!body.records.some((r: any) => r.serverlessId === 'ep-b1'), "another account's endpoint never appears");
      assert.deepEqual(Object.keys(body.records[0]).sort(), [
        'cpuAmount',
        'diskAmount',
        'endTime',
        'feeAmount',
        'gpuAmount',
        'serverlessId',
        'startTime',
        'totalAmount',
      ]);
      const one = await ok(t, a.key, `/v2/billing/serverless?${DAYS}&serverlessId=ep-a2`);
      assert.equal(one.metadata.totals.totalAmount, usd((45 * 0.72) / 3600));
      assert.equal(one.metadata.query.serverlessId, 'ep-a2');
      const aggregate = await ok(t, a.key, `/v2/billing?${DAYS}`);
      assert.equal(aggregate.metadata.totals.serverlessGpuAmount, usd((645 * 0.72) / 3600));
    });

    test('a network volume costs its size × the GB-month price from creation to deletion, a resize changing the rate at its instant', async () => {
      const a = await t.newAccount();
      clock.set(at('2026-06-01T06:00:00Z'));
      const created = await t.request(a.key, 'POST', '/v2/network-volumes', {
        name: 'v',
        size: 10,
        dataCenter: 'US-TX-3',
      });
      assert.equal(created.statusCode, 201, created.body);
      const id = json(created).id as string;
      clock.set(at('2026-06-02T00:00:00Z'));
      assert.equal((await t.request(a.key, 'PATCH', `/v2/network-volumes/${id}`, { size: 20 })).statusCode, 200);
      clock.set(at('2026-06-02T06:00:00Z'));
      assert.equal((await t.request(a.key, 'DELETE', `/v2/network-volumes/${id}`)).statusCode, 204);
      clock.set(at('2026-06-02T12:00:00Z'));

      const perGbHour = DEFAULT_VOLUME_PRICE_PER_GB_MONTH / 730;
      const body = await ok(t, a.key, `/v2/billing/network-volumes?${DAYS}`);
      assert.deepEqual(
        body.records.map((r: any) => [r.networkVolumeId, r.startTime, r.standardAmount, r.highPerformanceAmount]),
        [
          [id, '2026-06-01T00:00:00Z', usd(10 * 18 * perGbHour), 0],
          [id, '2026-06-02T00:00:00Z', usd(20 * 6 * perGbHour), 0],
        ],
      );
      assert.equal(body.metadata.uniqueNetworkVolumeCount, 1);
      assert.equal(body.metadata.query.networkVolumeId, null);
      const other = await t.newAccount();
      assert.deepEqual(
        (await ok(t, other.key, `/v2/billing/network-volumes?${DAYS}&networkVolumeId=${id}`)).records,
        [],
      );
    });

    test('lastN answers that many buckets ending with the current one, in the documented shape', async () => {
      const a = await t.newAccount();
      clock.set(at('2026-06-17T15:42:10Z'));
      const body = await ok(t, a.key, '/v2/billing?lastN=3&bucketSize=week');
      assert.deepEqual(body.metadata.query, {
        startTime: '2026-06-01T00:00:00Z',
        endTime: '2026-06-22T00:00:00Z',
        bucketSize: 'week',
      });
      assert.deepEqual(
        body.records.map((r: any) => r.startTime),
        ['2026-06-01T00:00:00Z', '2026-06-08T00:00:00Z', '2026-06-15T00:00:00Z'],
      );
      const months = await ok(t, a.key, '/v2/billing/endpoints?lastN=2&bucketSize=month');
      assert.deepEqual(months.records, [
        { startTime: '2026-05-01T00:00:00Z', endTime: '2026-06-01T00:00:00Z', totalAmount: 0 },
        { startTime: '2026-06-01T00:00:00Z', endTime: '2026-07-01T00:00:00Z', totalAmount: 0 },
      ]);
      assert.deepEqual(months.metadata.totals, { totalAmount: 0 });
      const defaults = await ok(t, a.key, '/v2/billing');
      assert.equal(defaults.metadata.query.bucketSize, 'day');
      assert.equal(defaults.metadata.query.endTime, '2026-06-18T00:00:00Z');
    });

    test("a cluster is billed per bucket from its members' running time, exactly, and its members only there", async () => {
      const a = await t.newAccount();
      const b = await t.newAccount();
      clock.set(at('2026-06-01T23:59:30Z'));
      const created = await t.request(a.key, 'POST', '/v2/clusters', {
        name: 'billed',
        type: 'TRAINING',
        image: 'ubuntu:22.04',
        compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
      });
      assert.equal(created.statusCode, 201, created.body);
      const cluster = json(created);
      const members = (await ok(t, a.key, `/v2/clusters/${cluster.id}/pods`)).pods as any[];
      const running = await Promise.all(members.map((p) => waitForStatus(a.key, p.id, 'RUNNING')));
      const price = running.reduce((sum: number, p: any) => sum + (p.cost as number), 0);
      assert.ok(price > 0, 'GPU members have a price');
      // 30 s before midnight and 45 s after, then the cluster (every member) is deleted
      clock.set(at('2026-06-02T00:00:45Z'));
      assert.equal((await t.request(a.key, 'DELETE', `/v2/clusters/${cluster.id}`)).statusCode, 204);
      clock.advance(3_600_000); // terminated: accrues nothing more
      const standalone = await runningPod(a.key);
      clock.advance(60_000);
      await action(a.key, standalone.id, 'stop', 'EXITED');

      const body = await ok(t, a.key, `/v2/billing/clusters?${DAYS}`);
      assert.deepEqual(body.records, [
        {
          startTime: '2026-06-01T00:00:00Z',
          endTime: '2026-06-02T00:00:00Z',
          clusterId: cluster.id,
          totalAmount: usd((30 * price) / 3600),
          gpuAmount: usd((30 * price) / 3600),
          diskAmount: 0,
          networkingAmount: 0,
        },
        {
          startTime: '2026-06-02T00:00:00Z',
          endTime: '2026-06-03T00:00:00Z',
          clusterId: cluster.id,
          totalAmount: usd((45 * price) / 3600),
          gpuAmount: usd((45 * price) / 3600),
          diskAmount: 0,
          networkingAmount: 0,
        },
      ]);
      assert.deepEqual(body.metadata, {
        query: {
          startTime: '2026-06-01T00:00:00Z',
          endTime: '2026-06-03T00:00:00Z',
          bucketSize: 'day',
          clusterId: null,
        },
        recordCount: 2,
        uniqueClusterCount: 1,
        totals: {
          totalAmount: usd((75 * price) / 3600),
          gpuAmount: usd((75 * price) / 3600),
          diskAmount: 0,
          networkingAmount: 0,
        },
      });
      // hour buckets split the same seconds at the same instant
      const hours = await ok(
        t,
        a.key,
        `/v2/billing/clusters?startTime=2026-06-01T23:00:00Z&endTime=2026-06-02T01:00:00Z&bucketSize=hour`,
      );
      assert.deepEqual(
        hours.records.map((r: any) => r.gpuAmount),
        [usd((30 * price) / 3600), usd((45 * price) / 3600)],
      );
      // members are billed to the cluster, not as pods; the aggregate counts them once
      const pods = await ok(t, a.key, `/v2/billing/pods?${DAYS}`);
      assert.deepEqual(new Set(pods.records.map((r: any) => r.podId)), new Set([standalone.id]));
      const aggregate = await ok(t, a.key, `/v2/billing?${DAYS}`);
      assert.equal(aggregate.metadata.totals.clusterGpuAmount, usd((75 * price) / 3600));
      assert.equal(aggregate.metadata.totals.podGpuAmount, usd((60 * standalone.cost) / 3600));
      assert.equal(aggregate.metadata.totals.totalAmount, usd((75 * price) / 3600 + (60 * standalone.cost) / 3600));
      // clusterId narrows; another account's cluster answers nothing, even named
      const one = await ok(t, a.key, `/v2/billing/clusters?${DAYS}&clusterId=${cluster.id}`);
      assert.equal(one.metadata.query.clusterId, cluster.id);
      assert.equal(one.metadata.totals.totalAmount, usd((75 * price) / 3600));
      assert.deepEqual((await ok(t, a.key, `/v2/billing/clusters?${DAYS}&clusterId=c1`)).records, []);
      const theirs = await ok(t, b.key, `/v2/billing/clusters?${DAYS}&clusterId=${cluster.id}`);
      assert.deepEqual(theirs.records, []);
      assert.deepEqual(theirs.metadata.totals, { totalAmount: 0, gpuAmount: 0, diskAmount: 0, networkingAmount: 0 });
    });

    test('bad parameters answer 400 problem+json saying what is wrong', async () => {
      const a = await t.newAccount();
      problem(await get(a.key, '/v2/billing?bucketSize=minute'), /bucketSize/);
      problem(await get(a.key, '/v2/billing/pods?lastN=0'), /lastN/);
      problem(await get(a.key, '/v2/billing/pods?lastN=two'), /lastN/);
      problem(await get(a.key, '/v2/billing/serverless?startTime=yesterday'), /startTime/);
      problem(await get(a.key, '/v2/billing?lastN=3&startTime=2026-06-01T00:00:00Z'), /lastN cannot be combined/);
      problem(
        await get(a.key, '/v2/billing/network-volumes?startTime=2026-06-03T00:00:00Z&endTime=2026-06-01T00:00:00Z'),
        /startTime must be before endTime/,
      );
      problem(await get(a.key, '/v2/billing/clusters?lastN=100000&bucketSize=hour'), /at most 10000/);
      problem(await get(a.key, '/v2/billing/pods?podID=x'), /podID/);
    });

    test('billing needs an API key, and a read key is enough', async () => {
      assert.equal((await get('', '/v2/billing')).statusCode, 401);
      const a = await t.newAccount();
      assert.equal((await get(a.readKey, '/v2/billing/endpoints?lastN=1')).statusCode, 200);
    });

    test("every billing operation appears in Gantry's OpenAPI document with its query parameters", async () => {
      const doc = json(await t.request(null, 'GET', '/v2/openapi.json'));
      const expected: Record<string, string[]> = {
        '/v2/billing': [],
        '/v2/billing/pods': ['podId'],
        '/v2/billing/serverless': ['serverlessId'],
        '/v2/billing/endpoints': [],
        '/v2/billing/network-volumes': ['networkVolumeId'],
        '/v2/billing/clusters': ['clusterId'],
      };
      for (const [path, filters] of Object.entries(expected)) {
        const op = doc.paths[path]?.get;
        assert.ok(op, `${path} is documented`);
        assert.deepEqual(
          op.parameters.map((p: any) => p.name).sort(),
          ['bucketSize', 'endTime', 'lastN', 'startTime', ...filters].sort(),
        );
      }
    });
  });
}

describe('serverless billing through the autoscaler', () => {
  let t: TestApp;
  const clock = new FakeClock(at('2026-06-02T10:00:00Z'));
  const runtime = new FakeRuntime();
  before(async () => {
    t = await createTestApp({ clock, runtime });
    await t.services.autoscaler.start({ loop: false });
  });
  after(async () => {
    await t?.services.autoscaler.stop();
    await t?.close();
  });

  test('a worker the autoscaler launches is billed at the catalog price of the GPU it was placed on until it is marked dead', async () => {
    const a = await t.newAccount();
    const template = await t.services.templates.create(a.accountId, {
      name: 'worker',
      imageName: 'my-worker:dev',
      isServerless: true,
    });
    const ep = await t.services.endpoints.create(a.accountId, {
      name: 'billed',
      templateId: template.id,
      gpuIds: 'ADA_24',
      gpuCount: 2,
      workersMin: 0,
      workersMax: 1,
      idleTimeout: 5,
    });
    await t.services.jobs.client.submit(ep.id, a.accountId, { input: {} });
    await t.services.autoscaler.tick(clock.now());
    const [worker] = await t.services.db.kysely
      .selectFrom('workers')
      .selectAll()
      .where('endpoint_id', '=', ep.id)
      .execute();
    assert.ok(worker, 'a worker was launched');
    const host = t.services.inventory.host(worker.host_id!)!;
    const gpuType = t.config.catalog.gpuTypes.find((g) => g.id === host.gpuTypeId)!;
    const hourly = 2 * (host.cloud === 'SECURE' ? gpuType.securePrice : gpuType.communityPrice);
    clock.advance(42_000);
    await t.services.workers.markDead(ep.id, [worker.id], clock.now());
    clock.advance(3_600_000);

    const body = await ok(t, a.key, `/v2/billing/serverless?lastN=1&serverlessId=${ep.id}`);
    assert.equal(body.metadata.totals.gpuAmount, usd((42 * hourly) / 3600));
    assert.equal(body.records[0].serverlessId, ep.id);
  });
});
