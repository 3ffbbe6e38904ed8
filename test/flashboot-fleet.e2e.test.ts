/**
 * FlashBoot on the fleet end to end (issue 30): the compiled control plane (`gantry serve` with
 * `runtime: fleet`, spawned) and a real `gantry agent` process over a real Docker Engine
 * (DOCKER_HOST), on a host with exactly one GPU (a stand-in nvidia-smi) that the endpoint's one
 * worker holds. The idle worker's container is paused through the agent, not removed, and the next
 * job is answered by the same container; a job arriving as the agent pauses it completes there
 * too; a control plane killed with SIGKILL while the worker is suspended finds it suspended again,
 * not leaked nor doubled; a pod that needs the worker's GPU takes it (the worker removed through
 * the agent, the pod running); a suspended container killed behind Gantry's back is a lost
 * worker; the keep time removes a suspended worker's container through the agent. The world is test/support/flashboot-fleet.ts's. Skipped, saying why, without an engine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dockerEngine, noEngine } from './support/docker.js';
import { eventually } from './support/eventually.js';
import { FlashbootFleetWorld, RTX_4090 } from './support/flashboot-fleet.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

interface Pod {
  id: string;
  status: string;
}

describe('FlashBoot on the fleet (a real agent over a real engine)', { skip: engine ? false : noEngine() }, () => {
  const e = engine!;
  const w = new FlashbootFleetWorld();
  const HOST = 'gpu-host';
  /** The worker of the last job, its container and when that container started, as the tests go. */
  let workerId = '';
  let containerId = '';
  let startedAt = '';
  const { job, health, suspended, call } = w;
  const containers = () => w.containersOn(HOST);
  const paused = (id: string) => w.paused(HOST, id);

  before(async () => {
    await w.start();
    await w.addHost(HOST, { client: e.client, dockerHost: e.dockerHost });
    await w.endpoint('flashboot-fleet');
  });
  after(() => w.close());

  test("an idle worker's container is paused through its host's agent, not removed; the next job is answered by the same container, not restarted", async () => {
    ({ workerId, containerId, startedAt } = await job({ n: 1 }));
    await suspended();
    assert.equal(await paused(containerId), true, 'the container is paused');
    assert.equal((await containers()).length, 1, 'and kept');

    const next = await job({ n: 2 });
    assert.deepEqual(
      [next.workerId, next.containerId, next.startedAt, next.host],
      [workerId, containerId, startedAt, HOST],
      'the same worker, from the same container, not restarted',
    );
    assert.equal(await paused(containerId), false);
  });

  test('a job that arrives as the agent pauses the idle worker is completed by the same container, with no retry counted', async () => {
    for (let round = 0; round < 2; round++) {
      await eventually(
        'the idle worker to be paused by the agent',
        async () => (await paused(containerId)) === true,
        60_000,
        20,
      );
      // The control plane may not have heard the agent's ack yet: its suspension is still under way.
      const input = { round };
      const done = await w.finished(await w.submit(input), input);
      assert.deepEqual([done.workerId, done.containerId, done.startedAt], [workerId, containerId, startedAt]);
      assert.equal(done.retries, 0, 'taken back by the platform, not failed: no retry counted');
    }
    const { jobs } = await health();
    assert.equal(jobs.failed, 0);
  });

  test('a control plane killed while its worker is suspended finds it suspended again from the paused container, not leaked nor doubled; the next job resumes it', async () => {
    await suspended();
    assert.equal(await w.server!.stop('SIGKILL'), null);
    assert.equal(await paused(containerId), true, 'the container outlives the control plane, still paused');
    await w.startServer();
    await suspended();
    assert.equal((await containers()).length, 1, 'adopted, not leaked or doubled');
    assert.equal(await paused(containerId), true, 'still paused');

    const next = await job({ n: 3 });
    assert.deepEqual([next.workerId, next.containerId, next.startedAt], [workerId, containerId, startedAt]);
  });

  test("a pod that needs the GPU a suspended worker holds takes it: the worker's container is removed through the agent and the pod runs", async () => {
    await suspended();
    const created = await call<Pod & { detail?: string }>('POST', '/v2/pods', {
      name: 'needs-the-gpu',
      image: e.images.idle,
      gpu: { id: RTX_4090, count: 1 },
      disk: 5,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await eventually(
      async () =>
        `the pod to run; pod ${JSON.stringify((await call<Pod>('GET', `/v2/pods/${created.body.id}`)).body)}, health ${JSON.stringify(await health())}`,
      async () => (await call<Pod>('GET', `/v2/pods/${created.body.id}`)).body.status === 'RUNNING',
      90_000,
    );
    await eventually(
      async () => `the reclaimed worker gone; containers ${JSON.stringify(await containers())}`,
      async () => (await containers()).length === 0 && (await health()).workers.suspended === 0,
      60_000,
    );
    assert.equal((await call('DELETE', `/v2/pods/${created.body.id}`)).status, 204);
  });

  test('a suspended container killed on its fleet host behind its back is a lost worker: its container goes and the next job is answered by a new one', async () => {
    // The GPU is free again (the pod deleted): the next job gets a new worker.
    const victim = await job({ n: 4 });
    assert.notEqual(victim.containerId, containerId, 'a new container: the old one was reclaimed');
    await suspended();
    await e.client.killContainer(victim.containerId, 'SIGKILL');
    await eventually(
      async () => `the killed worker forgotten; health ${JSON.stringify(await health())}`,
      async () =>
        (await health()).workers.suspended === 0 && !(await containers()).some((c) => c.Id === victim.containerId),
      60_000,
    );
    const next = await job({ n: 5 });
    assert.notEqual(next.workerId, victim.workerId, 'a new worker');
    assert.notEqual(next.containerId, victim.containerId);
    ({ workerId, containerId, startedAt } = next);
  });

  test("after the keep time a suspended worker's container is removed through the agent", async () => {
    await suspended();
    assert.equal(await paused(containerId), true);
    // The keep time shortened to 1 s: the restarted control plane finds the worker suspended longer than that.
    await w.server!.stop();
    w.setMaxKeepMs(1_000);
    await w.startServer();
    await eventually(
      async () => `the suspended worker removed; containers ${JSON.stringify(await containers())}`,
      async () => (await containers()).length === 0 && (await health()).workers.suspended === 0,
      60_000,
    );
  });
});
