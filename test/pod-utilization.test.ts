/**
 * A RUNNING pod's live utilisation as clients read it, in REST (`runtime`, spec 2.9) and in
 * GraphQL (`runtime { gpus container }`, `vcpuCount`, `memoryInGb`): the same figures, from the
 * runtime's shared sampler. GPUs: a stand-in nvidia-smi on a Docker host whose GPUs were
 * discovered (the real engine runs the pods); the process runtime's declared (simulated) GPUs
 * report an empty list, never invented numbers.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Host } from '../src/domain/catalog.js';
import { PodStore } from '../src/store/pod-store.js';
import { dockerEngine, makeDockerRuntime, noEngine, testHost } from './support/docker.js';
import { eventually } from './support/eventually.js';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { removeStandIns, standInNvidiaSmi } from './support/nvidia-smi.js';

// Awaited before any test is declared: a test declared earlier would let the file's root after hooks run before the later ones.
const engine = await dockerEngine();

after(removeStandIns);

const GPU = 'NVIDIA GeForce RTX 4090';
const GPU_QUERY = `query pod($id: String) { pod(input: { podId: $id }) {
  id vcpuCount memoryInGb
  machine { podHostId gpuDisplayName gpuTypeId location dataCenterId }
  runtime { uptimeInSeconds ports { ip isIpPublic privatePort publicPort type } gpus { id gpuUtilPercent memoryUtilPercent } container { cpuPercent memoryPercent } }
} }`;

interface RestPod {
  id: string;
  status: string;
  vcpuCount: number | null;
  memoryInGb: number | null;
  statusReason: string | null;
  runtime: {
    uptime: number;
    cpu: { util: number };
    memory: { util: number };
    gpus: Array<{ util: number; memoryUtil: number }>;
    ports: unknown[];
  } | null;
}

async function graphqlPod(t: TestApp, key: string, id: string) {
  const res = await t.request(key, 'POST', '/graphql', { query: GPU_QUERY, variables: { id } });
  const body = json(res);
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data.pod;
}

async function restPod(t: TestApp, key: string, id: string): Promise<RestPod> {
  const res = await t.request(key, 'GET', `/v2/pods/${id}`);
  assert.equal(res.statusCode, 200, res.body);
  return json<RestPod>(res);
}

const runningPod = (t: TestApp, key: string, id: string, done: (p: RestPod) => boolean = () => true) =>
  eventually(
    `pod ${id} RUNNING with its figures`,
    async () => {
      const pod = await restPod(t, key, id);
      if (pod.status === 'ERROR' || pod.status === 'EXITED')
        throw new Error(`pod ${id} is ${pod.status}: ${pod.statusReason}`);
      return pod.status === 'RUNNING' && done(pod) ? pod : null;
    },
    30_000,
    50,
  );

describe('pod utilisation on the process runtime', () => {
  test('a simulated-GPU host reports an empty gpus list in REST and GraphQL, and both carry the same CPU and memory figures', async () => {
    const t = await createTestApp({
      file: {
        images: { 'test/idle': { command: [process.execPath, '-e', 'setInterval(() => {}, 1 << 30)'] } },
        runtime: { statsIntervalMs: 60_000 },
      },
    });
    try {
      const { key } = await t.newAccount();
      const created = await t.request(key, 'POST', '/v2/pods', {
        name: 'sim',
        image: 'test/idle',
        gpu: { id: GPU, count: 2 },
      });
      assert.equal(created.statusCode, 201, created.body);
      const { id } = json<RestPod>(created);
      const rest = await runningPod(t, key, id);
      assert.deepEqual(rest.runtime?.gpus, [], 'declared GPUs have no real figures: none are invented');
      const gql = await graphqlPod(t, key, id);
      assert.deepEqual(gql.runtime.gpus, []);
      assert.deepEqual(gql.runtime.container, {
        cpuPercent: rest.runtime.cpu.util,
        memoryPercent: rest.runtime.memory.util,
      });
      // what 2 RTX 4090s come with (6 vCPUs and 48 GB each), as REST shows it
      assert.deepEqual([gql.vcpuCount, gql.memoryInGb], [12, 96]);
      assert.deepEqual([rest.vcpuCount, rest.memoryInGb], [12, 96]);
      assert.equal(gql.machine.gpuTypeId, GPU);
      assert.equal(gql.machine.gpuDisplayName, 'RTX 4090');
      assert.equal(gql.machine.dataCenterId, json<{ dataCenterId: string }>(created).dataCenterId);

      const cpu = await t.request(key, 'POST', '/v2/pods', {
        name: 'cpu',
        image: 'test/idle',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
      });
      assert.equal(cpu.statusCode, 201, cpu.body);
      const cpuId = json<RestPod>(cpu).id;
      const cpuRest = (await runningPod(t, key, cpuId)) as RestPod & { cpu: { vcpuCount: number; memory: number } };
      const cpuGql = await graphqlPod(t, key, cpuId);
      assert.equal(cpuGql.vcpuCount, cpuRest.cpu.vcpuCount);
      assert.equal(cpuGql.memoryInGb, cpuRest.cpu.memory);
      assert.deepEqual(cpuGql.runtime.container, {
        cpuPercent: cpuRest.runtime!.cpu.util,
        memoryPercent: cpuRest.runtime!.memory.util,
      });
      assert.ok(cpuRest.runtime!.memory.util >= 0 && cpuGql.runtime.uptimeInSeconds >= 0);
    } finally {
      await t.close();
    }
  });
});

after(() => engine?.client.close());

if (!engine) {
  test('pod utilisation on the Docker runtime', { skip: noEngine() }, () => {});
} else {
  const e = engine;
  describe('pod utilisation on the Docker runtime', () => {
    test('a stand-in nvidia-smi gives each pod the figures of its own GPUs, in REST and GraphQL, as they change', async () => {
      const uuids = ['GPU-6f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b00', 'GPU-6f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b01'];
      const row = (i: number, util: number, usedMiB: number) => `${i}, ${uuids[i]}, ${util}, ${usedMiB}, 24564`;
      const smi = standInNvidiaSmi({ utilization: [row(0, 87, 12282), row(1, 3, 1228)].join('\n') });
      const host: Host = testHost({
        gpuTypeId: GPU,
        gpuCount: 2,
        cudaVersion: '12.4',
        gpuUuids: uuids,
        gpuMode: 'env-only',
        cpuFlavors: [],
        vcpus: 4,
        memoryGb: 8,
      });
      const fixture = makeDockerRuntime(e, { host, statsIntervalMs: 200, nvidiaSmiEnv: smi.env });
      const t = await createTestApp({
        runtime: fixture.runtime,
        hosts: [host],
        registryResolver: async () => ['93.184.216.34'],
        file: { runtime: { kind: 'docker' } },
      });
      try {
        const { key } = await t.newAccount();
        const ids: string[] = [];
        // Each pod claims the other GPU in its env: the platform's NVIDIA_VISIBLE_DEVICES wins, so neither reads the other's.
        for (const [name, claimed] of [
          ['a', uuids[1]!],
          ['b', uuids[0]!],
        ] as const) {
          const env = { NVIDIA_VISIBLE_DEVICES: claimed, CUDA_VISIBLE_DEVICES: claimed };
          const created = await t.request(key, 'POST', '/v2/pods', {
            name,
            image: e.images.idle,
            gpu: { id: GPU, count: 1 },
            env,
          });
          assert.equal(created.statusCode, 201, created.body);
          ids.push(json<RestPod>(created).id);
        }
        const expected: Record<string, { util: number; memoryUtil: number }> = {
          [uuids[0]!]: { util: 87, memoryUtil: 50 },
          [uuids[1]!]: { util: 3, memoryUtil: 5 },
        };
        const seen = new Set<string>();
        for (const id of ids) {
          const rest = await runningPod(t, key, id, (p) => (p.runtime?.gpus.length ?? 0) > 0);
          const gql = await graphqlPod(t, key, id);
          assert.equal(gql.runtime.gpus.length, 1);
          const gpu = gql.runtime.gpus[0];
          const placed = (await new PodStore(t.services.db).get(id))!.gpuIndices;
          assert.equal(gpu.id, uuids[placed[0]!], 'GraphQL names, by its UUID, the GPU placement gave the pod');
          seen.add(gpu.id);
          assert.deepEqual(rest.runtime!.gpus, [expected[gpu.id]], 'REST has the figures of the GPU the pod was given');
          assert.deepEqual({ util: gpu.gpuUtilPercent, memoryUtil: gpu.memoryUtilPercent }, expected[gpu.id]);
          assert.deepEqual(
            Object.keys(rest.runtime!.gpus[0]!).sort(),
            ['memoryUtil', 'util'],
            'the REST body keeps to spec 2.9',
          );
        }
        assert.equal(seen.size, 2, 'the two pods were given different GPUs, and each reads its own');

        smi.setUtilization([row(0, 10, 2457), row(1, 99, 24564)].join('\n'));
        for (const id of ids) {
          const gql = await graphqlPod(t, key, id);
          const now =
            gql.runtime.gpus[0].id === uuids[0] ? { util: 10, memoryUtil: 10 } : { util: 99, memoryUtil: 100 };
          await runningPod(t, key, id, (p) => JSON.stringify(p.runtime?.gpus) === JSON.stringify([now]));
        }
      } finally {
        await t.close();
        await fixture.cleanup();
      }
    });
  });
}
