/**
 * FlashBoot on a load-balancing endpoint on the Docker runtime (issue 30; docs/load-balancing.md
 * "FlashBoot"): a whole server over a real engine (DOCKER_HOST, a namespace of its own), a worker
 * container running test/fixtures/lb-worker.mjs on its PORT (80), reached through the proxy
 * listener with real HTTP. The autoscaler's time is a FakeClock (the idle timeout and the keep time
 * move only when the test advances it); the container, its pause, health checks and waits are real.
 * Skipped, saying why, without an engine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FakeClock } from '../src/domain/clock.js';
import { dockerEngine, noEngine, removeNamespace, testDockerRuntime, uniqueNamespace } from './support/docker.js';
import { buildImage } from './support/docker-images.js';
import { eventually } from './support/eventually.js';
import { startSshFixture, type SshFixture, type SshTenant } from './support/ssh-fixture.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

const KEEP_MS = 60_000;
const WORKER_WAIT_MS = 60_000;

interface Whoami {
  workerId: string;
  boot: string;
}

describe('FlashBoot on a load-balancing endpoint on the Docker runtime', { skip: engine ? false : noEngine() }, () => {
  const e = engine!;
  const namespace = uniqueNamespace();
  const clock = new FakeClock(Date.now());
  let f: SshFixture;
  let owner: SshTenant;
  let endpointId = '';

  before(async () => {
    const image = await buildImage(e.client, {
      name: 'lb-worker',
      node: true,
      files: [{ from: join(import.meta.dirname, 'fixtures', 'lb-worker.mjs'), to: '/app/lb-worker.mjs' }],
      changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/lb-worker.mjs"]'],
    });
    f = await startSshFixture(
      {
        runtime: await testDockerRuntime(namespace),
        images: {},
        pods: { stopGraceMs: 1_000 },
        proxy: { port: 0, loadBalancer: { workerWaitMs: WORKER_WAIT_MS, healthIntervalMs: 200 } },
        serverless: { autoscaler: { intervalMs: 100, nudgeGapMs: 0 }, flashboot: { maxKeepMs: KEEP_MS } },
      },
      { clock },
    );
    owner = await f.tenant('lbfd-owner');
    const { templates, endpoints } = f.server.server.services;
    const template = await templates.create(owner.accountId, {
      name: 'lb-flash-docker',
      imageName: image,
      isServerless: true,
      containerDiskInGb: 5,
    });
    endpointId = (
      await endpoints.create(owner.accountId, {
        name: 'lb-flash-docker',
        type: 'LB',
        templateId: template.id,
        instanceIds: ['cpu3c-2-4'],
        workersMin: 0,
        workersMax: 1,
        idleTimeout: 5,
        scalerType: 'REQUEST_COUNT',
        scalerValue: 1,
        flashboot: true,
      })
    ).id;
  });
  after(async () => {
    await f?.close();
    await removeNamespace(e.client, namespace);
  });

  const services = () => f.server.server.services;
  const lbUrl = () => `${f.server.server.proxy!.url}/lb/${endpointId}/whoami`;
  const status = async (id: string) =>
    (await services().db.kysely.selectFrom('workers').select('status').where('id', '=', id).executeTakeFirst())?.status;
  const containerOf = async (workerId: string) =>
    (
      await e.client.listContainers({
        all: true,
        filters: { label: [`gantry.namespace=${namespace}`, `gantry.instance=${workerId}`] },
      })
    )[0] ?? null;
  /** Whether the worker's container is paused (null when it is gone), and when it started. */
  const container = async (workerId: string) => {
    const c = await containerOf(workerId);
    const inspected = c ? await e.client.inspectContainer(c.Id) : null;
    return inspected
      ? { id: inspected.Id, paused: inspected.State.Paused, startedAt: inspected.State.StartedAt }
      : null;
  };

  const whoami = async (affinity?: string): Promise<Whoami> => {
    const res = await fetch(lbUrl(), {
      headers: { authorization: `Bearer ${owner.key}`, ...(affinity ? { 'x-runpod-worker-id': affinity } : {}) },
    });
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as Whoami;
    assert.equal(res.headers.get('x-runpod-worker-id'), body.workerId);
    return body;
  };
  /** Moves the autoscaler's clock past the idle timeout and waits until the worker's container is paused. */
  const idleUntilSuspended = async (workerId: string) => {
    clock.advance(6_000);
    await eventually(
      `worker ${workerId} to be suspended`,
      async () => (await status(workerId)) === 'suspended',
      60_000,
    );
    await eventually(`its container to be paused`, async () => (await container(workerId))?.paused === true, 60_000);
  };

  let first: Whoami;
  let started: NonNullable<Awaited<ReturnType<typeof container>>>;

  test("an idle worker's container is paused and leaves the balancer; the next request resumes the same container within workerWaitMs and is answered by it", async () => {
    const { autoscaler, lb } = services();
    first = await whoami();
    started = (await container(first.workerId))!;
    assert.equal(started.paused, false);

    await idleUntilSuspended(first.workerId);
    assert.deepEqual(autoscaler.workerIds(endpointId), [first.workerId], 'kept, not stopped');
    assert.equal(lb.workerState(first.workerId)?.ready, false, 'out of the balancer');

    const starts = autoscaler.decisions.starts;
    const begun = Date.now();
    const again = await whoami();
    const waited = Date.now() - begun;
    assert.ok(waited < WORKER_WAIT_MS, `answered within workerWaitMs (${waited} ms)`);
    assert.deepEqual([again.workerId, again.boot], [first.workerId, first.boot], 'the same worker process answered');
    const now = (await container(first.workerId))!;
    assert.deepEqual(
      [now.id, now.startedAt, now.paused],
      [started.id, started.startedAt, false],
      'its container unpaused, not restarted',
    );
    assert.equal(autoscaler.decisions.starts, starts, 'no launch');
  });

  test('strict to a suspended worker answers 404 affinity_worker_gone and leaves its container paused; strict-resume resumes that container for the request', async () => {
    await idleUntilSuspended(first.workerId);
    const strict = await fetch(lbUrl(), {
      headers: { authorization: `Bearer ${owner.key}`, 'x-runpod-worker-id': `strict ${first.workerId}` },
    });
    assert.equal(strict.status, 404);
    assert.equal(strict.headers.get('content-type'), 'application/problem+json');
    assert.match(((await strict.json()) as { detail: string }).detail, /^affinity_worker_gone: .*strict-resume/);
    assert.equal(await status(first.workerId), 'suspended', 'strict does not resume it');
    assert.equal((await container(first.workerId))?.paused, true);

    const pinned = await whoami(`strict-resume ${first.workerId}`);
    assert.deepEqual([pinned.workerId, pinned.boot], [first.workerId, first.boot]);
    const now = (await container(first.workerId))!;
    assert.deepEqual([now.id, now.startedAt, now.paused], [started.id, started.startedAt, false]);
  });

  test("a suspended worker's container is removed at its keep time's end", async () => {
    await idleUntilSuspended(first.workerId);
    clock.advance(KEEP_MS);
    await eventually(
      'the keep time to remove the worker and its container',
      async () =>
        services().autoscaler.workerIds(endpointId).length === 0 &&
        (await status(first.workerId)) === 'dead' &&
        (await containerOf(first.workerId)) === null,
      60_000,
    );
    assert.equal(services().lb.has(first.workerId), false);
  });
});
