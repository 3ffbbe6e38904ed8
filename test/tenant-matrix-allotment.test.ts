/**
 * Tenant matrix, container limits (docs/security.md "Containers"): a tenant cannot take more of a
 * shared host than it was given. Two accounts' GPU pods share one host on a real engine; one
 * allocates memory without end and its own pod ends in ERROR, killed for its allotment, while the
 * other's container runs on untouched (the host's GPUs are env-only: no NVIDIA runtime here). And
 * on an engine whose storage driver cannot cap a container's disk (the shared test engine:
 * overlay2 on ext4), a container writing past its disk is stopped by the runtime's sampler.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Host } from '../src/domain/catalog.js';
import type { DockerRuntimeOptions } from '../src/runtime/docker/docker-runtime-options.js';
import { dockerEngine, makeDockerRuntime, noEngine, testHost, type DockerEngine } from './support/docker.js';
import { eventually } from './support/eventually.js';
import { json } from './support/harness.js';
import { withDockerApp } from './support/docker-engine-app.js';
import { ChangeRecorder, instanceSpec } from '../src/runtime/runtime-contract.js';

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

interface SharedHost {
  /** Creates a GPU pod of the `greedy` or `quiet` tenant running node with `args`. */
  create(tenant: 'greedy' | 'quiet', args: string, extra?: Record<string, unknown>): Promise<Pod>;
  get(tenant: 'greedy' | 'quiet', id: string): Promise<Pod>;
  /** Waits until the pod is RUNNING, or fails saying how it ended. */
  running(tenant: 'greedy' | 'quiet', id: string): Promise<Pod>;
  /** Waits until the pod ended (EXITED or ERROR). */
  ended(tenant: 'greedy' | 'quiet', id: string): Promise<Pod>;
  container(id: string): Promise<{
    HostConfig: { Memory: number; NanoCpus: number };
    State: { Running: boolean; OOMKilled: boolean };
  } | null>;
}

/** Node that keeps 256 MB and runs on: the quiet tenant. */
const QUIET = `-e "const keep = Buffer.alloc(256 << 20, 1); setInterval(() => keep[0]++, 1000)"`;

/**
 * Two tenants on one host: 2 GPUs on 2 vCPUs and 2 GB, so a GPU's share is 1 vCPU and 1 GB, less
 * than an RTX 4090 comes with.
 */
async function onSharedHost(
  e: DockerEngine,
  body: (h: SharedHost) => Promise<void>,
  overrides: Partial<DockerRuntimeOptions> = {},
): Promise<void> {
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
  await withDockerApp(
    e,
    host,
    async (t, fixture) => {
      const keys = { greedy: (await t.newAccount('greedy')).key, quiet: (await t.newAccount('quiet')).key };
      const get = async (tenant: 'greedy' | 'quiet', id: string): Promise<Pod> =>
        json<Pod>(await t.request(keys[tenant], 'GET', `/v2/pods/${id}`));
      await body({
        create: async (tenant, args, extra = {}) => {
          const res = await t.request(keys[tenant], 'POST', '/v2/pods', {
            name: tenant,
            image: e.images.node,
            args,
            gpu: { id: GPU, count: 1 },
            ...extra,
          });
          assert.equal(res.statusCode, 201, res.body);
          return json<Pod>(res);
        },
        get,
        running: (tenant, id) =>
          eventually(`the ${tenant} tenant's pod runs`, async () => {
            const p = await get(tenant, id);
            if (p.status === 'ERROR' || p.status === 'EXITED') throw new Error(`${id} ended: ${p.statusReason}`);
            return p.status === 'RUNNING' ? p : null;
          }),
        ended: (tenant, id) =>
          eventually(
            `the ${tenant} tenant's pod ends`,
            async () => {
              const p = await get(tenant, id);
              return p.status === 'ERROR' || p.status === 'EXITED' ? p : null;
            },
            90_000,
          ),
        container: async (id) =>
          (await e.client.inspectContainer(`gantry-${fixture.namespace}-${id}`)) as unknown as Awaited<
            ReturnType<SharedHost['container']>
          >,
      });
    },
    overrides,
  );
}

if (!engine) {
  test('a GPU tenant cannot take more of a shared host than its allotment', { skip: noEngine() }, () => {});
} else {
  const e = engine;

  test("a GPU tenant's container that allocates past its allotment is killed for its own limit, and the other tenant's container on the host runs on", () =>
    onSharedHost(e, async (h) => {
      const calm = await h.create('quiet', QUIET);
      await h.running('quiet', calm.id);
      const hog = await h.create(
        'greedy',
        `-e "console.log('allocating'); const keep = []; for (;;) keep.push(Buffer.alloc(1 << 20, 1))"`,
      );
      assert.deepEqual([hog.vcpuCount, hog.memoryInGb], [1, 1], "the host's share of its GPU");
      const ended = await h.ended('greedy', hog.id);
      assert.equal(ended.status, 'ERROR');
      assert.match(ended.statusReason ?? '', /^process was killed for running out of memory \(its limit of 1 GiB\)/);
      const hogged = await h.container(hog.id);
      assert.equal(hogged?.HostConfig.Memory, GiB);
      assert.equal(hogged?.HostConfig.NanoCpus, 1e9, 'nor more CPU than its one vCPU');
      assert.equal(hogged?.State.OOMKilled, true);

      const other = await h.container(calm.id);
      assert.equal(other?.State.Running, true, "the other tenant's container runs on");
      assert.equal(other?.State.OOMKilled, false);
      assert.equal((await h.get('quiet', calm.id)).status, 'RUNNING');
    }));

  test("a tenant's container that writes past its container disk, where the storage driver cannot cap it, is stopped saying so, and the other tenant's on the engine runs on", async () => {
    const fixture = makeDockerRuntime(e, { statsIntervalMs: 250 });
    try {
      const { runtime } = fixture;
      // small disks (the runtime takes fractions of a GB), so the test writes little
      const writer = (accountId: string, megabytes: number) =>
        instanceSpec({
          owner: { kind: 'pod', accountId },
          image: e.images.node,
          diskGb: 0.01,
          args: `-e "require('fs').writeFileSync('/fill', Buffer.alloc(${megabytes} << 20, 1)); setInterval(() => {}, 1 << 30)"`,
        });
      const quiet = writer('acct-quiet', 1);
      const greedy = writer('acct-greedy', 24);
      const changes = new ChangeRecorder(runtime);
      await runtime.start(quiet);
      if (runtime.diskLimit.enforced !== false) return; // an engine that caps disks refuses the write itself
      const container = (id: string) => e.client.inspectContainer(`gantry-${fixture.namespace}-${id}`);
      assert.equal((await container(quiet.id))?.Config.Labels?.['gantry.disk'], String(Math.round(0.01 * GiB)));
      await runtime.start(greedy);
      const failed = await changes.next(greedy.id, 'failed', 60_000);
      assert.match(
        failed.reason ?? '',
        /^its container disk grew to 0\.0[12] GB, past its 0\.01 GB \(containerDiskInGb\): the engine's storage driver cannot cap it, so Gantry stopped the instance$/,
      );
      await eventually('its container is stopped', async () =>
        (await container(greedy.id))?.State.Running === false ? true : null,
      );
      assert.equal((await runtime.inspect(greedy.id))?.state, 'failed');
      assert.equal((await runtime.inspect(quiet.id))?.state, 'running', 'sampled in the same turns, within its disk');
      assert.equal((await container(quiet.id))?.State.Running, true);
    } finally {
      await fixture.cleanup();
    }
  });
}
