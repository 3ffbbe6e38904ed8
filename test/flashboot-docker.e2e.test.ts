/**
 * FlashBoot on the Docker runtime (issue 30): the compiled server (`gantry serve`, spawned) on a
 * real engine launches a real worker container (test/fixtures/container-echo-worker.mjs over
 * dist/worker). A FlashBoot endpoint's idle worker's container is paused, not removed; the next
 * job unpauses it and the same container answers it. A control plane killed with SIGKILL while the
 * worker is suspended adopts it as suspended from the engine's `State.Paused`, and the next job
 * resumes it. A suspended container removed behind Gantry's back is a lost worker: the next job is
 * answered by a new one. After the keep time a suspended worker's container is removed. The GPUs
 * come from a stand-in `nvidia-smi` (no NVIDIA GPU here). Skipped, saying why, without an engine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../src/runtime/runtime-contract.js';
import { dockerEngine, noEngine, removeNamespace, uniqueNamespace } from './support/docker.js';
import { buildImage } from './support/docker-images.js';
import { eventually, freePortRange } from './support/eventually.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi } from './support/nvidia-smi.js';
import { spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';

const ROOT = resolve(import.meta.dirname, '..');
const KEY = 'flashboot-docker-admin-key-0123456789';
const TWO_4090 = [0, 1]
  .map((i) => `${i}, GPU-6f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b1${i}, NVIDIA GeForce RTX 4090, 24564`)
  .join('\n');

const engine = await dockerEngine();
after(() => engine?.client.close());

interface Job {
  id: string;
  status: string;
  output?: { echoed: unknown; podId: string | null };
}
interface Health {
  workers: { idle: number; running: number; suspended: number };
}

describe('FlashBoot on the Docker runtime', { skip: engine ? false : noEngine() }, () => {
  const e = engine!;
  const namespace = uniqueNamespace();
  const dir = mkdtempSync(join(tmpdir(), 'gantry-flashboot-docker-'));
  const args = ['--data-dir', dir, '--config', join(dir, 'config.yaml')];
  let server: SpawnedGantry | null = null;
  let endpointId = '';
  /** The worker (its id) and its container of the last job, as the tests go. */
  let workerId = '';
  let containerId = '';
  let startedAt = '';
  let image = '';

  const writeConfig = (maxKeepMs: number, portRange: [number, number], nvidiaSmi: string) =>
    writeFileSync(
      join(dir, 'config.yaml'),
      JSON.stringify({
        runtime: {
          kind: 'docker',
          docker: {
            namespace,
            bindIp: '127.0.0.1',
            publicIp: '127.0.0.1',
            portRange,
            nvidiaSmi,
            gpuMode: 'env-only',
            // the engine shares this machine's network namespace: its firewall stays untouched
            firewall: { mode: 'off' },
          },
        },
        pods: { stopGraceMs: 2_000 },
        jobs: { timekeeperIntervalMs: 200, pingIntervalMs: 1_000 },
        serverless: { autoscaler: { intervalMs: 200 }, flashboot: { maxKeepMs } },
      }),
    );
  const call = async <T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${server!.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  };
  const health = async () => (await call<Health>('GET', `/v2/${endpointId}/health`)).body.workers;
  const workerContainers = () =>
    e.client.listContainers({
      all: true,
      filters: { label: [`gantry.namespace=${namespace}`, `gantry.endpoint=${endpointId}`] },
    });
  /** Submits a job and waits for its end; answers it and the container that answered. */
  const job = async (input: unknown) => {
    const sent = await call<Job>('POST', `/v2/${endpointId}/run`, { input });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const done = await eventually(
      async () =>
        `job ${sent.body.id} to finish; health ${JSON.stringify(await health())}\n${server!.output().slice(-2_000)}`,
      async () => {
        const s = (await call<Job>('GET', `/v2/${endpointId}/status/${sent.body.id}`)).body;
        return s.status === 'COMPLETED' || s.status === 'FAILED' ? s : null;
      },
      60_000,
    );
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.output?.echoed, input);
    const containers = (await workerContainers()).filter((c) => c.Labels?.['gantry.instance'] === done.output?.podId);
    assert.equal(containers.length, 1, `one container of worker ${done.output?.podId}`);
    const inspected = await e.client.inspectContainer(containers[0]!.Id);
    return { workerId: done.output!.podId!, containerId: containers[0]!.Id, startedAt: inspected!.State.StartedAt };
  };
  const suspended = () =>
    eventually(
      async () => `the idle worker to be suspended; health ${JSON.stringify(await health())}`,
      async () => {
        const h = await health();
        return h.suspended === 1 && h.idle === 0 && h.running === 0;
      },
      60_000,
    );
  const paused = async (id: string) => (await e.client.inspectContainer(id))?.State.Paused;

  before(async () => {
    const nvidiaSmi = standInNvidiaSmi({ csv: TWO_4090, banner: BANNER_12_4 });
    writeConfig(600_000, await freePortRange(20), nvidiaSmi.path);
    args.push('--port', String(await freePort()));
    server = await spawnGantry(args, { DOCKER_HOST: process.env.DOCKER_HOST ?? '', GANTRY_BOOTSTRAP_KEY: KEY });
    const workerDir = join(ROOT, 'dist', 'worker');
    image = await buildImage(e.client, {
      name: 'echo-worker',
      node: true,
      files: [
        { from: join(ROOT, 'test', 'fixtures', 'container-echo-worker.mjs'), to: '/app/handler.mjs' },
        ...readdirSync(workerDir)
          .filter((f) => f.endsWith('.js'))
          .map((f) => ({ from: join(workerDir, f), to: `/app/worker/${f}` })),
      ],
      changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/handler.mjs"]'],
    });
    const tpl = await call<{ id: string }>('POST', '/v2/templates', {
      name: `flashboot-docker-${Date.now()}`,
      image,
      serverless: true,
    });
    assert.equal(tpl.status, 201, JSON.stringify(tpl.body));
    const ep = await call<{ id: string }>('POST', '/v2/serverless', {
      name: 'flashboot-docker',
      templateId: tpl.body.id,
      type: 'QUEUE',
      gpu: { pools: ['ADA_24'] },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
      workers: { min: 0, max: 1, idleTimeout: 1 },
      flashboot: 'FLASHBOOT',
    });
    assert.equal(ep.status, 201, JSON.stringify(ep.body));
    endpointId = ep.body.id;
  });
  after(async () => {
    await server?.stop();
    await removeNamespace(e.client, namespace);
    removeStandIns();
    rmSync(dir, { recursive: true, force: true });
  });

  test("an idle worker's container is paused, not removed; the next job unpauses it and the same container answers it", async () => {
    ({ workerId, containerId, startedAt } = await job({ n: 1 }));
    await suspended();
    assert.equal(await paused(containerId), true, 'the container is paused');
    assert.equal((await workerContainers()).length, 1, 'and kept');

    const next = await job({ n: 2 });
    assert.equal(next.workerId, workerId, 'the same worker answered');
    assert.equal(next.containerId, containerId, 'from the same container');
    assert.equal(next.startedAt, startedAt, 'which was not restarted');
    assert.equal(await paused(containerId), false);
  });

  test('a control plane killed while its worker is suspended adopts it still suspended, its container still paused; the next job resumes it', async () => {
    await suspended();
    assert.equal(await server!.stop('SIGKILL'), null);
    assert.equal(await paused(containerId), true, 'the container outlives the server, still paused');
    server = await spawnGantry(args, { DOCKER_HOST: process.env.DOCKER_HOST ?? '', GANTRY_BOOTSTRAP_KEY: KEY });
    await suspended();
    assert.equal((await workerContainers()).length, 1, 'adopted, not leaked or doubled');

    const next = await job({ n: 3 });
    assert.equal(next.workerId, workerId);
    assert.equal(next.containerId, containerId);
    assert.equal(next.startedAt, startedAt, 'resumed, not restarted');
  });

  test('a worker whose container was paused while its row says it runs is thawed when a restarted control plane adopts it, and answers the next job', async () => {
    // An endpoint without FlashBoot whose worker stays (a long idle timeout): paused outside
    // Gantry, as a server killed between its pause and its row's write would leave it.
    const tpl = await call<{ id: string }>('POST', '/v2/templates', {
      name: `flashboot-docker-off-${Date.now()}`,
      image,
      serverless: true,
    });
    const ep = await call<{ id: string }>('POST', '/v2/serverless', {
      name: 'flashboot-docker-off',
      templateId: tpl.body.id,
      type: 'QUEUE',
      gpu: { pools: ['ADA_24'] },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
      workers: { min: 0, max: 1, idleTimeout: 600 },
    });
    assert.equal(ep.status, 201, JSON.stringify(ep.body));
    const flash = endpointId;
    endpointId = ep.body.id;
    try {
      const first = await job({ n: 'off-1' });
      await e.client.pauseContainer(first.containerId);
      assert.equal(await server!.stop('SIGKILL'), null);
      server = await spawnGantry(args, { DOCKER_HOST: process.env.DOCKER_HOST ?? '', GANTRY_BOOTSTRAP_KEY: KEY });
      await eventually(
        'the adopted container to be thawed',
        async () => (await paused(first.containerId)) === false,
        60_000,
      );
      const next = await job({ n: 'off-2' });
      assert.equal(next.workerId, first.workerId, 'the adopted worker answered, not a new one');
      assert.equal(next.startedAt, first.startedAt, 'from its container, not restarted');
    } finally {
      endpointId = flash;
    }
  });

  test('a suspended container removed behind its back is a lost worker: the next job is answered by a new one', async () => {
    await suspended();
    await e.client.removeContainer(containerId, { force: true });
    await eventually(
      async () => `the removed worker to be forgotten; health ${JSON.stringify(await health())}`,
      async () => (await health()).suspended === 0,
      60_000,
    );
    const next = await job({ n: 4 });
    assert.notEqual(next.workerId, workerId, 'a new worker');
    assert.notEqual(next.containerId, containerId);
    ({ workerId, containerId, startedAt } = next);
  });

  test('a suspended container killed behind its back is a lost worker: its container goes and the next job is answered by a new one', async () => {
    await suspended();
    await e.client.killContainer(containerId, 'SIGKILL');
    await eventually(
      async () => `the killed worker to be forgotten; health ${JSON.stringify(await health())}`,
      async () => (await health()).suspended === 0 && !(await workerContainers()).some((c) => c.Id === containerId),
      60_000,
    );
    const next = await job({ n: 5 });
    assert.notEqual(next.workerId, workerId, 'a new worker');
    assert.notEqual(next.containerId, containerId);
    ({ workerId, containerId, startedAt } = next);
  });

  test("after the keep time a suspended worker's container is removed", async () => {
    await suspended();
    // The keep time shortened to 1 s: the restarted server finds the worker suspended longer than that.
    await server!.stop();
    const config = JSON.parse(readFileSync(join(dir, 'config.yaml'), 'utf8')) as {
      serverless: { flashboot: { maxKeepMs: number } };
    };
    config.serverless.flashboot.maxKeepMs = 1_000;
    writeFileSync(join(dir, 'config.yaml'), JSON.stringify(config));
    server = await spawnGantry(args, { DOCKER_HOST: process.env.DOCKER_HOST ?? '', GANTRY_BOOTSTRAP_KEY: KEY });
    await eventually(
      async () => `the suspended worker to be removed; containers ${JSON.stringify(await workerContainers())}`,
      async () => (await workerContainers()).length === 0 && (await health()).suspended === 0,
      60_000,
    );
  });
});
