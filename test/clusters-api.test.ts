// REST /v2/clusters (spec 2.7, docs/clusters.md) on a listening server driven with fetch, over
// SQLite and PostgreSQL. The fake runtime records every instance's spec, so the rendezvous
// environment and the private network each member is started with can be read.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { createTestApp, dialects, type TestApp } from './support/harness.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { FakeClock } from '../src/domain/clock.js';
import { CLUSTER_NETWORKS, clusterCidr } from '../src/domain/cluster.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const fleet = [
  { id: 'tx-1', dataCenterId: 'US-TX-3', gpuTypeId: GPU, gpuCount: 8, cudaVersion: '12.4', portRange: [20000, 20999] },
  { id: 'tx-2', dataCenterId: 'US-TX-3', gpuTypeId: GPU, gpuCount: 8, cudaVersion: '12.4', portRange: [21000, 21999] },
  { id: 'ca-1', dataCenterId: 'US-CA-2', gpuTypeId: GPU, gpuCount: 4, cudaVersion: '12.4', portRange: [22000, 22999] },
];

interface Problem {
  status: number;
  code: string;
  detail: string;
}

for (const { name: dialect, skip } of dialects()) {
  describe(`clusters API on ${dialect}`, { skip }, () => {
    let t: TestApp;
    let base: string;
    const runtime = new FakeRuntime();
    let a: { accountId: string; key: string };
    let b: { accountId: string; key: string };

    before(async () => {
      t = await createTestApp({
        dialect,
        clock: new FakeClock(Date.parse('2026-07-01T10:00:00Z')),
        runtime,
        file: {
          rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
          quotas: { pods: 10_000, gpus: 10_000 },
          fleet,
        },
      });
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
      a = await t.newAccount('clusters-a');
      b = await t.newAccount('clusters-b');
    });
    after(() => t?.close());

    const call = async (key: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, type: res.headers.get('content-type') ?? '', body: text ? JSON.parse(text) : null };
    };
    const problem = (res: { status: number; type: string; body: Problem }, status: number, detail?: RegExp) => {
      assert.equal(res.status, status, JSON.stringify(res.body));
      assert.match(res.type, /application\/problem\+json/);
      if (detail) assert.match(res.body.detail, detail);
    };
    const create = async (key: string, body: Record<string, unknown> = {}) => {
      const res = await call(key, 'POST', '/v2/clusters', {
        name: 'trainer',
        type: 'TRAINING',
        image: 'fake/idle',
        compute: { gpuTypeId: GPU, gpuCountPerPod: 2, podCount: 3 },
        ...body,
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    };
    const memberPods = async (key: string, id: string) => {
      const res = await call(key, 'GET', `/v2/clusters/${id}/pods`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.pods as Array<Record<string, any>>;
    };
    const remove = async (key: string, id: string) =>
      assert.equal((await call(key, 'DELETE', `/v2/clusters/${id}`)).status, 204);

    test('a cluster is created with podCount identical pods, ranked from 0 on one private network in one data center', async () => {
      const cluster = await create(a.key, { env: { EPOCHS: '3' }, ports: ['22/tcp'] });
      assert.equal(cluster.name, 'trainer');
      assert.equal(cluster.type, 'TRAINING');
      assert.deepEqual(cluster.compute, { gpuTypeId: GPU, gpuCountPerPod: 2, podCount: 3 });
      assert.deepEqual(cluster.pods, { total: 3, byStatus: { PROVISIONING: 3 } });
      assert.match(cluster.network.cidr, /^10\.\d+\.\d+\.0\/24$/);
      assert.equal(cluster.dataCenterId, 'US-TX-3');
      assert.equal(cluster.createdAt, '2026-07-01T10:00:00.000Z');
      const pods = await memberPods(a.key, cluster.id);
      assert.deepEqual(
        pods.map((p) => p.cluster.rank),
        [0, 1, 2],
      );
      assert.equal(cluster.primary.podId, pods[0]!.id);
      const prefix = cluster.network.cidr.replace(/0\/24$/, '');
      for (const [rank, pod] of pods.entries()) {
        assert.deepEqual(pod.cluster, { id: cluster.id, rank, ip: `${prefix}${2 + rank}` });
        assert.equal(pod.dataCenterId, 'US-TX-3');
        assert.deepEqual([pod.gpu.id, pod.gpu.count], [GPU, 2]);
        assert.ok(pod.gpu.vcpuCount > 0 && pod.gpu.memory > 0, 'its allotment with its GPUs');
        assert.deepEqual(pod.env, { EPOCHS: '3' });
        assert.equal(pod.image, 'fake/idle');
      }
      for (const pod of pods) await t.services.podController.idle(pod.id);
      for (const [rank, pod] of pods.entries()) {
        const spec = runtime.specs.get(pod.id);
        assert.ok(spec, `member ${rank} was started`);
        assert.equal(spec.env.EPOCHS, '3');
        assert.deepEqual(
          {
            NODE_RANK: spec.platformEnv.NODE_RANK,
            NUM_NODES: spec.platformEnv.NUM_NODES,
            WORLD_SIZE: spec.platformEnv.WORLD_SIZE,
            NUM_TRAINERS: spec.platformEnv.NUM_TRAINERS,
            MASTER_ADDR: spec.platformEnv.MASTER_ADDR,
            MASTER_PORT: spec.platformEnv.MASTER_PORT,
            NODE_ADDR: spec.platformEnv.NODE_ADDR,
            CLUSTER_ID: spec.platformEnv.CLUSTER_ID,
            CLUSTER_ROLE: spec.platformEnv.CLUSTER_ROLE,
          },
          {
            NODE_RANK: String(rank),
            NUM_NODES: '3',
            WORLD_SIZE: '6',
            NUM_TRAINERS: '2',
            MASTER_ADDR: `${prefix}2`,
            MASTER_PORT: '29500',
            NODE_ADDR: `${prefix}${2 + rank}`,
            CLUSTER_ID: cluster.id,
            CLUSTER_ROLE: undefined,
          },
        );
        assert.deepEqual(spec.network, {
          name: `cluster-${cluster.id}`,
          aliases: [`node-${rank}`],
          ip: `${prefix}${2 + rank}`,
          subnet: cluster.network.cidr,
        });
      }
      const running = (await call(a.key, 'GET', `/v2/clusters/${cluster.id}`)).body;
      assert.deepEqual(running.pods.byStatus, { RUNNING: 3 });
      assert.equal(running.primary.status, 'RUNNING');
      assert.match(running.primary.sshEndpoint, /^[^:]+:2\d{4}$/);
      await remove(a.key, cluster.id);
    });

    test('SLURM members are a controller at rank 0 and compute nodes; RAY members a head and workers', async () => {
      const slurm = await create(a.key, { type: 'SLURM', compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 3 } });
      assert.deepEqual(
        (await memberPods(a.key, slurm.id)).map((p) => p.cluster.role),
        ['SLURM_CONTROLLER', 'SLURM_COMPUTE', 'SLURM_COMPUTE'],
      );
      const ray = await create(a.key, { type: 'RAY', compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 } });
      const rayPods = await memberPods(a.key, ray.id);
      assert.deepEqual(
        rayPods.map((p) => p.cluster.role),
        ['RAY_HEAD', 'RAY_WORKER'],
      );
      await t.services.podController.idle(rayPods[1]!.id);
      assert.equal(runtime.specs.get(rayPods[1]!.id)?.platformEnv.CLUSTER_ROLE, 'RAY_WORKER');
      assert.notEqual(slurm.network.cidr, ray.network.cidr, 'each cluster has its own network');
      await remove(a.key, slurm.id);
      await remove(a.key, ray.id);
    });

    test('clusters created at the same moment each get a network of their own', async () => {
      const made = await Promise.all(
        ['x', 'y', 'z'].map((n) =>
          create(a.key, { name: n, compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 } }),
        ),
      );
      assert.equal(new Set(made.map((c) => c.network.cidr)).size, 3, JSON.stringify(made.map((c) => c.network)));
      for (const c of made) await remove(a.key, c.id);
    });

    test('GET /v2/pods leaves cluster members out unless includeClusterPods=true, and a standalone pod has no cluster field', async () => {
      const cluster = await create(a.key, { compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 } });
      const solo = await call(a.key, 'POST', '/v2/pods', { name: 'solo', image: 'fake/idle', gpu: { id: GPU } });
      assert.equal(solo.status, 201);
      assert.equal('cluster' in solo.body, false);
      const listed = (await call(a.key, 'GET', '/v2/pods')).body.pods as Array<Record<string, any>>;
      assert.deepEqual(
        listed.map((p) => p.id),
        [solo.body.id],
      );
      const all = (await call(a.key, 'GET', '/v2/pods?includeClusterPods=true')).body.pods as Array<
        Record<string, any>
      >;
      assert.deepEqual(all.filter((p) => p.cluster?.id === cluster.id).length, 2);
      const member = all.find((p) => p.cluster?.rank === 1)!;
      const one = (await call(a.key, 'GET', `/v2/pods/${member.id}`)).body;
      assert.deepEqual(one.cluster, member.cluster);
      await remove(a.key, cluster.id);
      assert.equal((await call(a.key, 'DELETE', `/v2/pods/${solo.body.id}`)).status, 204);
    });

    test('a member pod cannot be changed, acted on or deleted through the pod routes: 409 naming its cluster', async () => {
      const cluster = await create(a.key, { compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 } });
      const [pod] = await memberPods(a.key, cluster.id);
      const via = new RegExp(`/v2/clusters/${cluster.id}`);
      problem(await call(a.key, 'PATCH', `/v2/pods/${pod!.id}`, { name: 'x' }), 409, via);
      problem(await call(a.key, 'POST', `/v2/pods/${pod!.id}/action`, { action: 'stop' }), 409, via);
      problem(await call(a.key, 'DELETE', `/v2/pods/${pod!.id}`), 409, via);
      await t.services.podController.idle(pod!.id);
      assert.equal((await call(a.key, 'GET', `/v2/pods/${pod!.id}`)).body.status, 'RUNNING', 'the member runs on');
      await remove(a.key, cluster.id);
    });

    test('a cluster whose pods do not all fit in one data center is refused with 400 and nothing is created', async () => {
      // 16 GPUs in US-TX-3 and 4 in US-CA-2: five 4-GPU pods fit only across both
      const before = (await call(a.key, 'GET', '/v2/pods?includeClusterPods=true&includeTerminated=true')).body.pods
        .length;
      const res = await call(a.key, 'POST', '/v2/clusters', {
        name: 'too-big',
        type: 'TRAINING',
        image: 'fake/idle',
        compute: { gpuTypeId: GPU, gpuCountPerPod: 4, podCount: 5 },
      });
      problem(res, 400, /do not fit together in one data center, so none was created/);
      assert.equal(res.body.code, 'NO_CAPACITY');
      assert.deepEqual((await call(a.key, 'GET', '/v2/clusters')).body, { clusters: [] });
      const after = (await call(a.key, 'GET', '/v2/pods?includeClusterPods=true&includeTerminated=true')).body.pods
        .length;
      assert.equal(after, before);
      // nothing stayed reserved: the whole of US-TX-3 is free for a cluster of four
      const full = await create(a.key, { compute: { gpuTypeId: GPU, gpuCountPerPod: 4, podCount: 4 } });
      assert.equal(full.dataCenterId, 'US-TX-3');
      await remove(a.key, full.id);
    });

    test('dataCenterIds pins the cluster to one of them', async () => {
      const cluster = await create(a.key, {
        dataCenterIds: ['US-CA-2'],
        compute: { gpuTypeId: GPU, gpuCountPerPod: 2, podCount: 2 },
      });
      assert.equal(cluster.dataCenterId, 'US-CA-2');
      for (const pod of await memberPods(a.key, cluster.id)) assert.equal(pod.dataCenterId, 'US-CA-2');
      problem(
        await call(a.key, 'POST', '/v2/clusters', {
          name: 'more',
          type: 'TRAINING',
          image: 'fake/idle',
          dataCenterIds: ['US-CA-2'],
          compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
        }),
        400,
        /US-CA-2/,
      );
      await remove(a.key, cluster.id);
    });

    test('PATCH renames the cluster and nothing else; other fields and an empty body answer 422', async () => {
      const cluster = await create(a.key, { compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 } });
      const renamed = await call(a.key, 'PATCH', `/v2/clusters/${cluster.id}`, { name: 'renamed' });
      assert.equal(renamed.status, 200);
      assert.equal(renamed.body.name, 'renamed');
      assert.deepEqual(renamed.body.compute, cluster.compute);
      assert.equal((await call(a.key, 'GET', `/v2/clusters/${cluster.id}`)).body.name, 'renamed');
      problem(await call(a.key, 'PATCH', `/v2/clusters/${cluster.id}`, {}), 422);
      problem(await call(a.key, 'PATCH', `/v2/clusters/${cluster.id}`, { image: 'other' }), 422);
      await remove(a.key, cluster.id);
    });

    test('DELETE terminates every member, then the cluster answers 404 and its GPUs are free again', async () => {
      const cluster = await create(a.key, { compute: { gpuTypeId: GPU, gpuCountPerPod: 8, podCount: 2 } });
      const pods = await memberPods(a.key, cluster.id);
      await remove(a.key, cluster.id);
      for (const pod of pods) assert.equal((await call(a.key, 'GET', `/v2/pods/${pod.id}`)).body.status, 'TERMINATED');
      problem(await call(a.key, 'GET', `/v2/clusters/${cluster.id}`), 404);
      problem(await call(a.key, 'GET', `/v2/clusters/${cluster.id}/pods`), 404);
      problem(await call(a.key, 'DELETE', `/v2/clusters/${cluster.id}`), 404);
      const again = await create(a.key, { compute: { gpuTypeId: GPU, gpuCountPerPod: 8, podCount: 2 } });
      assert.equal(again.dataCenterId, 'US-TX-3');
      await remove(a.key, again.id);
    });

    test("another account's cluster answers 404 on every route and is not listed", async () => {
      const cluster = await create(a.key, { compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 } });
      problem(await call(b.key, 'GET', `/v2/clusters/${cluster.id}`), 404);
      problem(await call(b.key, 'GET', `/v2/clusters/${cluster.id}/pods`), 404);
      problem(await call(b.key, 'PATCH', `/v2/clusters/${cluster.id}`, { name: 'mine' }), 404);
      problem(await call(b.key, 'DELETE', `/v2/clusters/${cluster.id}`), 404);
      assert.deepEqual((await call(b.key, 'GET', '/v2/clusters')).body, { clusters: [] });
      assert.deepEqual(
        (await call(a.key, 'GET', '/v2/clusters')).body.clusters.map((c: { id: string }) => c.id),
        [cluster.id],
      );
      const [pod] = await memberPods(a.key, cluster.id);
      problem(await call(b.key, 'GET', `/v2/pods/${pod!.id}`), 404);
      await remove(a.key, cluster.id);
    });

    test('create validates: podCount 2..250, a known type, an image, no registry field, each naming the field', async () => {
      const body = {
        name: 'v',
        type: 'TRAINING',
        image: 'fake/idle',
        compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
      };
      problem(
        await call(a.key, 'POST', '/v2/clusters', { ...body, compute: { ...body.compute, podCount: 1 } }),
        422,
        /podCount/,
      );
      problem(
        await call(a.key, 'POST', '/v2/clusters', { ...body, compute: { ...body.compute, podCount: 251 } }),
        422,
        /podCount/,
      );
      problem(await call(a.key, 'POST', '/v2/clusters', { ...body, type: 'MPI' }), 422, /type/);
      problem(await call(a.key, 'POST', '/v2/clusters', { ...body, registry: 'r1' }), 422, /registry/);
      const { image: _, ...noImage } = body;
      problem(await call(a.key, 'POST', '/v2/clusters', noImage), 422, /image/);
      problem(
        await call(a.key, 'POST', '/v2/clusters', { ...body, compute: { ...body.compute, gpuTypeId: 'NVIDIA B9000' } }),
        400,
      );
      assert.deepEqual((await call(a.key, 'GET', '/v2/clusters')).body, { clusters: [] });
    });

    test("when the shared pool's 4,096 cluster networks are all taken, a create answers 400 NO_CAPACITY and keeps nothing; a freed network is taken again", async () => {
      const db = t.services.db.kysely;
      const taken = new Set((await db.selectFrom('clusters').select('cidr').execute()).map((r) => r.cidr));
      // another tenant holds every free network (rows only: the pool is what is exhausted)
      const fillers = [];
      for (let n = 0; n < CLUSTER_NETWORKS; n++)
        if (!taken.has(clusterCidr(n)))
          fillers.push({
            id: `filler-${n}`,
            account_id: b.accountId,
            name: `filler-${n}`,
            type: 'TRAINING',
            gpu_type_id: GPU,
            gpu_count_per_pod: 1,
            pod_count: 2,
            cidr: clusterCidr(n),
            data_center_id: 'US-TX-3',
            created_at: 0,
          });
      for (let i = 0; i < fillers.length; i += 500)
        await db
          .insertInto('clusters')
          .values(fillers.slice(i, i + 500))
          .execute();
      try {
        const podsBefore = (await call(a.key, 'GET', '/v2/pods?includeClusterPods=true')).body;
        const clustersBefore = (await call(a.key, 'GET', '/v2/clusters')).body;
        const instancesBefore = runtime.specs.size;
        const refused = await call(a.key, 'POST', '/v2/clusters', {
          name: 'one-too-many',
          type: 'TRAINING',
          image: 'fake/idle',
          compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
        });
        problem(refused, 400, /Every cluster network is taken \(4096 clusters exist\)/);
        assert.equal(refused.body.code, 'NO_CAPACITY');
        assert.deepEqual((await call(a.key, 'GET', '/v2/pods?includeClusterPods=true')).body, podsBefore);
        assert.deepEqual((await call(a.key, 'GET', '/v2/clusters')).body, clustersBefore);
        assert.equal(runtime.specs.size, instancesBefore, 'no instance was started');
        assert.equal(
          Number(
            (
              await db
                .selectFrom('clusters')
                .select((eb) => eb.fn.countAll().as('n'))
                .executeTakeFirstOrThrow()
            ).n,
          ),
          CLUSTER_NETWORKS,
        );
        // one network freed: the next create takes exactly it
        const freed = fillers[fillers.length - 1]!;
        await db.deleteFrom('clusters').where('id', '=', freed.id).execute();
        const created = await create(a.key, { compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 } });
        assert.equal(created.network.cidr, freed.cidr);
        await remove(a.key, created.id);
      } finally {
        await db.deleteFrom('clusters').where('id', 'like', 'filler-%').execute();
      }
    });
  });
}
