/**
 * Tenant matrix, GPU allotments (docs/security.md "Containers"): a GPU tenant's container cannot
 * take more memory than its allotment. Two accounts' GPU pods share one host on a real engine; one
 * allocates without end and is killed for its own memory limit (its pod ERROR, saying so), the
 * other's container runs on untouched. The host's GPUs are env-only (no NVIDIA runtime here).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Host } from '../src/domain/catalog.js';
import { dockerEngine, makeDockerRuntime, noEngine, testHost } from './support/docker.js';
import { eventually } from './support/eventually.js';
import { createTestApp, json, type TestApp } from './support/harness.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

const GPU = 'NVIDIA GeForce RTX 4090';
const GiB = 1024 ** 3;

interface Pod {
  id: string;
  status: string;
  statusReason: string | null;
  vcpuCount: number | null;
  memoryInGb: number | null;
}

if (!engine) {
  test('a GPU tenant cannot take more memory than its allotment', { skip: noEngine() }, () => {});
} else {
  const e = engine;
  test("a GPU tenant's container that allocates past its allotment is killed for its own limit, and the other tenant's container on the host runs on", async () => {
    // 2 GPUs on 2 vCPUs and 2 GB: a GPU's share is 1 vCPU and 1 GB, less than an RTX 4090 comes with
    const host: Host = testHost({
      gpuTypeId: GPU,
      gpuCount: 2,
      cudaVersion: '12.4',
      gpuUuids: ['GPU-aa', 'GPU-bb'],
      gpuMode: 'env-only',
      cpuFlavors: [],
      vcpus: 2,
      memoryGb: 2,
    });
    const fixture = makeDockerRuntime(e, { host });
    let t: TestApp | null = null;
    try {
      t = await createTestApp({
        runtime: fixture.runtime,
        hosts: [host],
        registryResolver: async () => ['93.184.216.34'],
        file: { runtime: { kind: 'docker' } },
      });
      const app = t;
      const greedy = await app.newAccount('greedy');
      const quiet = await app.newAccount('quiet');
      const create = async (key: string, args: string): Promise<Pod> => {
        const res = await app.request(key, 'POST', '/v2/pods', {
          name: 'p',
          image: e.images.node,
          args,
          gpu: { id: GPU, count: 1 },
        });
        assert.equal(res.statusCode, 201, res.body);
        return json<Pod>(res);
      };
      const get = async (key: string, id: string): Promise<Pod> =>
        json<Pod>(await app.request(key, 'GET', `/v2/pods/${id}`));
      const container = (id: string) => e.client.inspectContainer(`gantry-${fixture.namespace}-${id}`);

      const calm = await create(
        quiet.key,
        `-e "const keep = Buffer.alloc(256 << 20, 1); setInterval(() => keep[0]++, 1000)"`,
      );
      await eventually('the quiet tenant runs', async () =>
        (await get(quiet.key, calm.id)).status === 'RUNNING' ? true : null,
      );
      const hog = await create(
        greedy.key,
        `-e "console.log('allocating'); const keep = []; for (;;) keep.push(Buffer.alloc(1 << 20, 1))"`,
      );
      assert.deepEqual([hog.vcpuCount, hog.memoryInGb], [1, 1], "the host's share of its GPU");
      const ended = await eventually(
        'the greedy tenant’s pod ends',
        async () => {
          const p = await get(greedy.key, hog.id);
          return p.status === 'ERROR' || p.status === 'EXITED' ? p : null;
        },
        60_000,
      );
      assert.equal(ended.status, 'ERROR');
      assert.match(ended.statusReason ?? '', /^process was killed for running out of memory \(its limit of 1 GiB\)/);
      const hogged = (await container(hog.id)) as unknown as {
        HostConfig: { Memory: number };
        State: { OOMKilled: boolean };
      };
      assert.equal(hogged.HostConfig.Memory, GiB);
      assert.equal(hogged.State.OOMKilled, true);

      const other = await container(calm.id);
      assert.equal(other?.State.Running, true, "the other tenant's container runs on");
      assert.equal(other?.State.OOMKilled, false);
      assert.equal((await get(quiet.key, calm.id)).status, 'RUNNING');
    } finally {
      await t?.close();
      await fixture.cleanup();
    }
  });
}
