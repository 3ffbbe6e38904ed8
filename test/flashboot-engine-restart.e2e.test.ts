/**
 * FlashBoot through an engine restart (issue 30): a worker suspended (its container paused) on a
 * Docker engine that restarts — its containers stop with it, as an engine without live-restore
 * does — is a lost worker: it leaves `suspended`, its stopped container is not left behind, and
 * the next job is answered by a new worker in a new container. The engine is a test daemon of its
 * own (test/support/docker-daemons.ts), restarted on the same data; the world (server, image,
 * endpoint) is test/support/flashboot-docker.ts's. Skipped, saying why, where no daemon can start.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dockerDaemonsUnavailable, startDockerDaemon, type DockerDaemon } from './support/docker-daemons.js';
import { eventually } from './support/eventually.js';
import { FlashbootDockerWorld } from './support/flashboot-docker.js';

const unavailable = dockerDaemonsUnavailable();

describe('FlashBoot through a Docker engine restart', { skip: unavailable ?? false }, () => {
  let daemon: DockerDaemon;
  let w: FlashbootDockerWorld;

  before(async () => {
    daemon = await startDockerDaemon();
    w = new FlashbootDockerWorld(daemon.client, daemon.host);
    await w.start();
  });
  after(async () => {
    await w?.close();
    await daemon?.stop();
  });

  test('a worker suspended when its engine restarts is a lost worker: it leaves suspended, its container goes, and the next job gets a new worker', async () => {
    const first = await w.job({ n: 1 });
    await w.suspended();
    assert.equal(await w.paused(first.containerId), true, 'suspended: its container is paused');

    await daemon.restart();
    const after = await daemon.client.inspectContainer(first.containerId);
    assert.notEqual(after?.State.Running, true, 'the restart stopped the container (or it is removed already)');
    await eventually(
      async () =>
        `the lost worker to be forgotten; health ${JSON.stringify(await w.health())}, containers ${JSON.stringify(
          (await w.workerContainers()).map((c) => [c.Id.slice(0, 12), c.State]),
        )}\n${w.server!.output().slice(-2_000)}`,
      async () =>
        (await w.health()).suspended === 0 && !(await w.workerContainers()).some((c) => c.Id === first.containerId),
      90_000,
    );

    const next = await w.job({ n: 2 });
    assert.notEqual(next.workerId, first.workerId, 'a new worker answered');
    assert.notEqual(next.containerId, first.containerId, 'from a new container');
    assert.equal(await w.paused(next.containerId), false);
  });
});
