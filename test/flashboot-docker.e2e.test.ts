/**
 * FlashBoot on the Docker runtime (issue 30): the compiled server (`gantry serve`, spawned) on a
 * real engine launches a real worker container (test/fixtures/container-echo-worker.mjs over
 * dist/worker). A FlashBoot endpoint's idle worker's container is paused, not removed; the next
 * job unpauses it and the same container answers it. A control plane killed with SIGKILL while the
 * worker is suspended adopts it as suspended from the engine's `State.Paused`, and the next job
 * resumes it. A suspended container removed behind Gantry's back is a lost worker: the next job is
 * answered by a new one. A pod that needs a suspended worker's GPU takes it (the container
 * removed, the pod running). After the keep time a suspended worker's container is removed. The world
 * (server, image, endpoint) is test/support/flashboot-docker.ts's. Skipped, saying why, without an engine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dockerEngine, DOCKER_HOST, noEngine } from './support/docker.js';
import { eventually } from './support/eventually.js';
import { FlashbootDockerWorld } from './support/flashboot-docker.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

describe('FlashBoot on the Docker runtime', { skip: engine ? false : noEngine() }, () => {
  const e = engine!;
  const w = new FlashbootDockerWorld(e.client, DOCKER_HOST);
  /** The worker (its id) and its container of the last job, as the tests go. */
  let workerId = '';
  let containerId = '';
  let startedAt = '';
  const { job, health, suspended, paused, workerContainers } = w;

  before(() => w.start());
  after(() => w.close());

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
    assert.equal(await w.server!.stop('SIGKILL'), null);
    assert.equal(await paused(containerId), true, 'the container outlives the server, still paused');
    await w.startServer();
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
    const flash = w.endpointId;
    w.endpointId = await w.endpoint('flashboot-docker-off', { idleTimeout: 600, flashboot: false });
    try {
      const first = await job({ n: 'off-1' });
      await e.client.pauseContainer(first.containerId);
      assert.equal(await w.server!.stop('SIGKILL'), null);
      await w.startServer();
      await eventually(
        'the adopted container to be thawed',
        async () => (await paused(first.containerId)) === false,
        60_000,
      );
      const next = await job({ n: 'off-2' });
      assert.equal(next.workerId, first.workerId, 'the adopted worker answered, not a new one');
      assert.equal(next.startedAt, first.startedAt, 'from its container, not restarted');
    } finally {
      w.endpointId = flash;
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

  test("a pod that needs the GPU a suspended worker holds takes it: the worker's container is removed and the pod runs", async () => {
    await suspended();
    // The host has two GPUs: the worker holds one, the running worker of the endpoint without
    // FlashBoot (the thawing test's) the other, so a pod asking for one needs the suspended worker's.
    const created = await w.call<{ id: string; status: string }>('POST', '/v2/pods', {
      name: 'needs-a-gpu',
      image: e.images.idle,
      gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
      disk: 5,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const pod = async () => (await w.call<{ status: string }>('GET', `/v2/pods/${created.body.id}`)).body;
    await eventually(
      async () => `the pod to run; pod ${JSON.stringify(await pod())}, health ${JSON.stringify(await health())}`,
      async () => (await pod()).status === 'RUNNING',
      90_000,
    );
    await eventually(
      async () => `the reclaimed worker gone; containers ${JSON.stringify(await workerContainers())}`,
      async () => (await workerContainers()).length === 0 && (await health()).suspended === 0,
      60_000,
    );
    assert.equal((await w.call('DELETE', `/v2/pods/${created.body.id}`)).status, 204);
    // The GPUs free again: the next job gets a new worker (suspended at the next test's start).
    const next = await job({ n: 6 });
    assert.notEqual(next.containerId, containerId);
    ({ workerId, containerId, startedAt } = next);
  });

  test("after the keep time a suspended worker's container is removed", async () => {
    await suspended();
    // The keep time shortened to 1 s: the restarted server finds the worker suspended longer than that.
    await w.server!.stop();
    w.setMaxKeepMs(1_000);
    await w.startServer();
    await eventually(
      async () => `the suspended worker to be removed; containers ${JSON.stringify(await workerContainers())}`,
      async () => (await workerContainers()).length === 0 && (await health()).suspended === 0,
      60_000,
    );
  });
});
