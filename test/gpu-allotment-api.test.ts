/**
 * Every GPU pod gets the CPUs and memory its GPU type sells (docs/catalog.md, "CPUs and memory of
 * GPU instances"), over the API on both stores: the allotment on each host (hosts of one type
 * differ), shown as `vcpuCount`/`memoryInGb` in REST v2, v1 and GraphQL and given to the instance
 * (its vCPUs, memory and RUNPOD_CPU_COUNT); the minimums clients ask for; placement reserving it,
 * so a host runs out of CPUs before GPUs, with NO_CAPACITY and the catalog saying so; and pods
 * stored before allotments, which get one at their next start. The in-memory runtime stands for
 * the engine (what it is asked to start is what a real one would run).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { LightMyRequestResponse } from 'fastify';
import { FakeClock } from '../src/domain/clock.js';
import { buildApp } from '../src/http/app.js';
import { createServices } from '../src/main.js';
import type { Services } from '../src/services.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { eventually } from './support/eventually.js';
import { createTestApp, dialects, json, type DialectName, type TestApp } from './support/harness.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const enc = encodeURIComponent;

// One GPU type on two hosts that differ. An RTX 4090 comes with 6 vCPUs and 48 GB.
// tx-small: 16 vCPUs, 64 GB for 4 GPUs (a GPU's share: 4 and 16), and it serves CPU pods too.
// ro-large: 64 vCPUs, 512 GB for 4 GPUs (a GPU's share: 16 and 128).
const fleet = [
  {
    id: 'tx-small',
    dataCenterId: 'US-TX-3',
    gpuTypeId: GPU,
    gpuCount: 4,
    cudaVersion: '12.4',
    vcpus: 16,
    memoryGb: 64,
    cpuFlavors: ['cpu3c'],
    portRange: [20000, 20999],
  },
  {
    id: 'ro-large',
    dataCenterId: 'EU-RO-1',
    gpuTypeId: GPU,
    gpuCount: 4,
    cudaVersion: '12.4',
    vcpus: 64,
    memoryGb: 512,
    portRange: [21000, 21999],
  },
];

interface Pod {
  id: string;
  status: string;
  statusReason: string | null;
  vcpuCount: number | null;
  memoryInGb: number | null;
  cpu?: { id: string; vcpuCount: number; memory: number };
}

const GQL_POD = 'query pod($id: String) { pod(input: { podId: $id }) { id vcpuCount memoryInGb } }';

for (const { name, skip } of dialects()) describe(`GPU allotments over the API (${name})`, { skip }, () => suite(name));

function suite(dialect: DialectName): void {
  /** A fresh server per test: each starts from an empty fleet. */
  const withApp = async (body: (t: TestApp, key: string, runtime: FakeRuntime) => Promise<void>): Promise<void> => {
    const runtime = new FakeRuntime();
    const t = await createTestApp({
      dialect,
      runtime,
      file: { fleet, rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 } },
    });
    try {
      await body(t, (await t.newAccount()).key, runtime);
    } finally {
      await t.close();
    }
  };
  const create = async (t: TestApp, key: string, body: Record<string, unknown>): Promise<Pod> => {
    const res = await t.request(key, 'POST', '/v2/pods', { name: 'p', image: 'fake/idle', ...body });
    assert.equal(res.statusCode, 201, res.body);
    return json<Pod>(res);
  };
  const gpuPod = (t: TestApp, key: string, dc: string, count = 1, extra: Record<string, unknown> = {}) =>
    create(t, key, { gpu: { id: GPU, count }, dataCenterIds: [dc], ...extra });
  const refusal = async (res: LightMyRequestResponse, pattern: RegExp): Promise<void> => {
    assert.equal(res.statusCode, 400, res.body);
    const body = json(res);
    assert.equal(body.code, 'NO_CAPACITY');
    assert.match(body.detail, pattern);
  };
  const gql = async (t: TestApp, key: string, query: string, variables: Record<string, unknown> = {}) =>
    json(await t.request(key, 'POST', '/graphql', { query, variables }));
  const figures = (p: { vcpuCount: unknown; memoryInGb: unknown }) => [p.vcpuCount, p.memoryInGb];

  test("a GPU pod gets its type's vCPUs and memory per GPU capped by its host's share, shown in REST v2, v1 and GraphQL and given to its instance", () =>
    withApp(async (t, key, runtime) => {
      const large = await gpuPod(t, key, 'EU-RO-1', 2);
      assert.deepEqual(figures(large), [12, 96], 'two GPUs: twice what one comes with');
      const small = await gpuPod(t, key, 'US-TX-3', 1);
      assert.deepEqual(figures(small), [4, 16], "the small host's share of a GPU caps what it comes with");
      for (const [pod, expected] of [
        [large, [12, 96]],
        [small, [4, 16]],
      ] as const) {
        await t.services.podController.idle(pod.id);
        assert.deepEqual(figures(json(await t.request(key, 'GET', `/v2/pods/${pod.id}`))), expected, 'REST v2');
        assert.deepEqual(figures(json(await t.request(key, 'GET', `/v1/pods/${pod.id}`))), expected, 'REST v1');
        const answer = await gql(t, key, GQL_POD, { id: pod.id });
        assert.deepEqual(figures(answer.data.pod), expected, 'GraphQL');
        const spec = runtime.specs.get(pod.id)!;
        assert.deepEqual([spec.vcpus, spec.memoryGb], expected, "the instance's limits");
        assert.equal(spec.platformEnv.RUNPOD_CPU_COUNT, String(expected[0]));
        assert.deepEqual(t.services.inventory.allocationOf(pod.id), {
          ...t.services.inventory.allocationOf(pod.id)!,
          vcpus: expected[0],
          memoryGb: expected[1],
        });
      }
      const cpu = await create(t, key, { cpu: { id: 'cpu3c', vcpuCount: 2 } });
      assert.deepEqual(
        [cpu.cpu, ...figures(cpu)],
        [{ id: 'cpu3c', vcpuCount: 2, memory: 4 }, 2, 4],
        'CPU pods keep their rules',
      );
    }));

  test('the minimums a client asks for are given, skip a host whose share is smaller, and one no host can give is NO_CAPACITY naming CPUs or memory', () =>
    withApp(async (t, key) => {
      const deploy = `mutation deploy($input: PodFindAndDeployOnDemandInput) { podFindAndDeployOnDemand(input: $input) { id vcpuCount memoryInGb machineId } }`;
      const input = { name: 'g', imageName: 'fake/idle', gpuTypeId: GPU, gpuCount: 1, cloudType: 'SECURE' };
      const asked = await gql(t, key, deploy, { input: { ...input, minVcpuCount: 10, minMemoryInGb: 0 } });
      assert.equal(asked.errors, undefined, JSON.stringify(asked.errors));
      const pod = asked.data.podFindAndDeployOnDemand;
      assert.deepEqual([pod.machineId, pod.vcpuCount, pod.memoryInGb], ['ro-large', 10, 48], 'tx-small gives a GPU 4');

      const v1 = await t.request(key, 'POST', '/v1/pods', {
        imageName: 'fake/idle',
        gpuTypeIds: [GPU],
        gpuCount: 2,
        minVCPUPerGPU: 8,
        minRAMPerGPU: 100,
      });
      assert.equal(v1.statusCode, 201, v1.body);
      const v1Pod = json(v1);
      assert.deepEqual(
        [v1Pod.machineId, v1Pod.vcpuCount, v1Pod.memoryInGb],
        ['ro-large', 16, 200],
        "v1's minimums are per GPU",
      );

      await refusal(
        await t.request(key, 'POST', '/v1/pods', { imageName: 'fake/idle', gpuTypeIds: [GPU], minVCPUPerGPU: 20 }),
        /can give 1 GPU the 20 vCPUs asked for: CPUs are the constraint .*the largest share of 1 GPU is 16 vCPUs/,
      );
      const tooMuch = await gql(t, key, deploy, { input: { ...input, minMemoryInGb: 200 } });
      assert.equal(tooMuch.errors?.[0]?.extensions?.code, 'NO_CAPACITY');
      assert.match(tooMuch.errors[0].message, /the 200 GB of memory asked for: memory is the constraint/);
      const negative = await gql(t, key, deploy, { input: { ...input, minVcpuCount: -2 } });
      assert.equal(negative.errors?.[0]?.extensions?.code, 'BAD_REQUEST');
    }));

  test('a host runs out of CPUs before GPUs: the next GPU pod there is NO_CAPACITY saying CPUs were the constraint, and the catalog no longer counts its free GPUs', () =>
    withApp(async (t, key) => {
      const gpuLevel = async () => {
        const res = json(await t.request(key, 'GET', `/v2/catalog/gpus/${enc(GPU)}?include=AVAILABILITY&product=POD`));
        return Object.fromEntries(
          (res.dataCenters ?? []).map((d: { id: string; availability: string }) => [d.id, d.availability]),
        );
      };
      const dcLevel = async () =>
        json(await t.request(key, 'GET', '/v2/catalog/datacenters/US-TX-3?include=GPU_AVAILABILITY'))
          .gpuAvailability?.[0]?.availability;
      const graphqlStock = async () => {
        const answer = await gql(
          t,
          key,
          `{ gpuTypes(input: { id: "${GPU}" }) { lowestPrice(input: { gpuCount: 1 }) { stockStatus } } dataCenters { id gpuAvailability { gpuTypeId available } } }`,
        );
        const tx = answer.data.dataCenters.find((d: { id: string }) => d.id === 'US-TX-3');
        return tx.gpuAvailability[0].available as boolean;
      };
      await gpuPod(t, key, 'US-TX-3');
      assert.equal((await gpuLevel())['US-TX-3'], 'HIGH', '3 of 4 GPUs free, and their CPUs');
      assert.equal(await dcLevel(), 'HIGH');
      assert.equal(await graphqlStock(), true);
      // CPU pods take the rest of tx-small's 16 vCPUs: 3 GPUs stay free, with no vCPUs to come with them
      await create(t, key, { cpu: { id: 'cpu3c', vcpuCount: 8 }, dataCenterIds: ['US-TX-3'] });
      await create(t, key, { cpu: { id: 'cpu3c', vcpuCount: 4 }, dataCenterIds: ['US-TX-3'] });
      await refusal(
        await t.request(key, 'POST', '/v2/pods', {
          name: 'x',
          image: 'fake/idle',
          gpu: { id: GPU },
          dataCenterIds: ['US-TX-3'],
        }),
        /^No host with 1 free "NVIDIA GeForce RTX 4090" GPUs has the vCPUs its GPUs come with free: CPUs are the constraint, the host ran out of CPUs before GPUs \(1 GPU comes with at least 4 vCPUs; the most free is 0\)$/,
      );
      assert.deepEqual(
        await gpuLevel(),
        { 'US-TX-3': 'NONE', 'EU-RO-1': 'HIGH' },
        'tx-small can place none of its free GPUs',
      );
      assert.equal(await dcLevel(), 'NONE');
      assert.equal(await graphqlStock(), false);
      const stock = t.services.catalog.getGpuType(GPU, { availability: true }).availability!;
      assert.deepEqual([stock.available, stock.total], [4, 8], 'only ro-large’s 4 GPUs can be placed');
      // elsewhere the same request still fits
      assert.equal(t.services.inventory.allocationOf((await gpuPod(t, key, 'EU-RO-1')).id)?.hostId, 'ro-large');
    }));

  test('a GPU pod stored before allotments runs on as it is after a server restart, and its next instance gets its allotment, or ERROR where its host cannot give it', () =>
    withApp(async (t, key, runtime) => {
      const adopted = await gpuPod(t, key, 'EU-RO-1');
      const stopped = await gpuPod(t, key, 'EU-RO-1');
      const vanished = await gpuPod(t, key, 'EU-RO-1');
      const crowded = await gpuPod(t, key, 'US-TX-3');
      for (const pod of [adopted, stopped, vanished, crowded]) await t.services.podController.idle(pod.id);
      assert.equal((await t.request(key, 'POST', `/v2/pods/${stopped.id}/action`, { action: 'stop' })).statusCode, 200);
      // as stored before allotments: no vCPUs or memory of its own
      const ids = [adopted, stopped, vanished, crowded].map((p) => p.id);
      await t.services.db.kysely
        .updateTable('pods')
        .set({ vcpu_count: 0, memory_gb: 0 })
        .where('id', 'in', ids)
        .execute();
      // the server is killed; the engine keeps running what it ran, but for one instance
      await t.services.podController.stop();
      await runtime.remove(vanished.id);
      const engine = runtime.reopen();
      const next = await restart(t, engine);
      try {
        const get = async (id: string): Promise<Pod> => json<Pod>(await next.request(key, 'GET', `/v2/pods/${id}`));
        const afterRestart = await get(adopted.id);
        assert.deepEqual(
          [afterRestart.status, ...figures(afterRestart)],
          ['RUNNING', null, null],
          'adopted as it runs',
        );
        assert.equal(engine.started.includes(adopted.id), false, 'not restarted');
        assert.equal(next.services.inventory.allocationOf(adopted.id)?.vcpus, 0, 'nothing reserved for its CPUs yet');

        const relaunched = await eventually('the vanished pod runs again', async () => {
          const p = await get(vanished.id);
          return p.status === 'RUNNING' ? p : null;
        });
        assert.deepEqual(figures(relaunched), [6, 48], 'a new instance: the allotment');
        assert.equal(engine.specs.get(vanished.id)?.vcpus, 6);

        const started = json<Pod>(
          await next.request(key, 'POST', `/v2/pods/${stopped.id}/action`, { action: 'start' }),
        );
        await next.services.podController.idle(stopped.id);
        assert.deepEqual(figures(await get(stopped.id)), [6, 48], `a start: the allotment (${started.status})`);
        assert.equal(engine.specs.get(stopped.id)?.memoryGb, 48);

        await next.request(key, 'POST', `/v2/pods/${adopted.id}/action`, { action: 'restart' });
        await next.services.podController.idle(adopted.id);
        assert.deepEqual(figures(await get(adopted.id)), [6, 48], 'a restart: the allotment');
        assert.deepEqual(
          [engine.specs.get(adopted.id)?.vcpus, engine.specs.get(adopted.id)?.platformEnv.RUNPOD_CPU_COUNT],
          [6, '6'],
        );
        assert.equal(next.services.inventory.allocationOf(adopted.id)?.vcpus, 6, 'and reserved');

        // tx-small's CPUs go to CPU pods while the old pod there holds none; its restart cannot get its 4
        for (const vcpuCount of [8, 8])
          assert.equal(
            (
              await next.request(key, 'POST', '/v2/pods', {
                name: 'c',
                image: 'fake/idle',
                cpu: { id: 'cpu3c', vcpuCount },
                dataCenterIds: ['US-TX-3'],
              })
            ).statusCode,
            201,
          );
        await next.request(key, 'POST', `/v2/pods/${crowded.id}/action`, { action: 'restart' });
        await next.services.podController.idle(crowded.id);
        const failed = await get(crowded.id);
        assert.equal(failed.status, 'ERROR');
        assert.match(
          failed.statusReason ?? '',
          /^Its host cannot give it the 4 vCPUs and 16 GB of memory its GPU comes with now: Host tx-small no longer has 4 vCPUs free \(0 free\)$/,
        );
      } finally {
        await next.close();
      }
    }));
}

interface Restarted {
  services: Services;
  request(key: string, method: 'GET' | 'POST', url: string, body?: unknown): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** A second server over the first one's database and engine, started as `gantry serve` starts (its controller adopts). */
async function restart(t: TestApp, runtime: FakeRuntime): Promise<Restarted> {
  const services = await createServices(t.config, {
    db: t.services.db,
    runtime,
    clock: new FakeClock(Date.now()),
    logger: pino({ level: 'silent' }),
  });
  await services.podController.start(await runtime.attach());
  const app = await buildApp(services, { logger: false });
  return {
    services,
    request: (key, method, url, body) =>
      app.inject({
        method,
        url,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
      }),
    async close() {
      await app.close();
      await services.podController.stop();
      await services.fleet.close();
    },
  };
}
