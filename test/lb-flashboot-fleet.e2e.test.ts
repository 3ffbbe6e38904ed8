/**
 * FlashBoot on a load-balancing endpoint on the fleet (issue 30; docs/load-balancing.md
 * "FlashBoot"): the compiled control plane (`runtime: fleet`, its proxy listener on), a real
 * `gantry agent` over a real Docker Engine (DOCKER_HOST), a worker container running
 * test/fixtures/lb-worker.mjs on its PORT (80), reached through the agent's tunnel with real HTTP.
 * The idle worker (1 s idle timeout, real time) is suspended through the agent, its container
 * paused; the next request resumes the same container within `workerWaitMs`; `strict` to it while
 * suspended answers 404 and leaves it paused, `strict-resume` resumes it. The world is
 * test/support/flashboot-fleet.ts's. Skipped, saying why, without an engine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { dockerEngine, noEngine } from './support/docker.js';
import { buildImage } from './support/docker-images.js';
import { eventually } from './support/eventually.js';
import { FlashbootFleetWorld } from './support/flashboot-fleet.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

const WORKER_WAIT_MS = 60_000;
const KEY = 'flashboot-fleet-admin-key-0123456789';

interface Whoami {
  workerId: string;
  boot: string;
}

describe('FlashBoot on a load-balancing endpoint on the fleet', { skip: engine ? false : noEngine() }, () => {
  const e = engine!;
  const w = new FlashbootFleetWorld();
  const HOST = 'lb-host';
  let url = '';

  before(async () => {
    await w.start(600_000, {
      proxy: {
        port: 0,
        connectTimeoutMs: 5_000,
        loadBalancer: { workerWaitMs: WORKER_WAIT_MS, healthIntervalMs: 200 },
      },
    });
    await w.addHost(HOST, { client: e.client, dockerHost: e.dockerHost });
    const image = await buildImage(e.client, {
      name: 'lb-worker',
      node: true,
      files: [{ from: join(import.meta.dirname, 'fixtures', 'lb-worker.mjs'), to: '/app/lb-worker.mjs' }],
      changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/lb-worker.mjs"]'],
    });
    const template = await w.call<{ id: string }>('POST', '/v2/templates', {
      name: `lb-flash-fleet-${Date.now()}`,
      image,
      serverless: true,
    });
    assert.equal(template.status, 201, JSON.stringify(template.body));
    const endpoint = await w.call<{ id: string; loadBalancerUrl?: string }>('POST', '/v2/serverless', {
      name: 'lb-flash-fleet',
      templateId: template.body.id,
      type: 'LOAD_BALANCER',
      gpu: { pools: ['ADA_24'] },
      scaling: { type: 'REQUEST_COUNT', requestCount: 1 },
      workers: { min: 0, max: 1, idleTimeout: 1 },
      flashboot: 'FLASHBOOT',
    });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
    w.endpointId = endpoint.body.id;
    url = endpoint.body.loadBalancerUrl!;
  });
  after(() => w.close());

  const send = (affinity?: string) =>
    fetch(`${url}/whoami`, {
      headers: { authorization: `Bearer ${KEY}`, ...(affinity ? { 'x-runpod-worker-id': affinity } : {}) },
    });
  const whoami = async (affinity?: string): Promise<Whoami> => {
    const res = await send(affinity);
    assert.equal(res.status, 200, `${await res.clone().text()}\n${w.server!.output().slice(-2_000)}`);
    return (await res.json()) as Whoami;
  };
  /** The worker's container: its id, whether it is paused, when it started. */
  const container = async (workerId: string) => {
    const [c] = (await w.containersOn(HOST)).filter((x) => x.Labels?.['gantry.instance'] === workerId);
    const inspected = c ? await e.client.inspectContainer(c.Id) : null;
    return inspected
      ? { id: inspected.Id, paused: inspected.State.Paused, startedAt: inspected.State.StartedAt }
      : null;
  };
  /** The worker's status in the endpoint's worker list. */
  const status = async (workerId: string) =>
    (
      await w.call<{ workers: Array<{ id: string; status: string }> }>('GET', `/v2/serverless/${w.endpointId}/workers`)
    ).body.workers.find((x) => x.id === workerId)?.status;
  const suspended = async (workerId: string) => {
    await eventually(
      async () => `worker ${workerId} suspended (${await status(workerId)})`,
      async () => (await status(workerId)) === 'SUSPENDED',
      60_000,
    );
    await eventually('its container paused', async () => (await container(workerId))?.paused === true, 60_000);
  };

  test("an idle worker's container is paused through the agent; the next request resumes the same container within workerWaitMs; strict to it while suspended is 404 and strict-resume resumes it", async () => {
    const first = await whoami();
    const started = (await container(first.workerId))!;
    assert.ok(started, 'the worker is a container of the agent host');

    await suspended(first.workerId);
    const again = await whoami();
    assert.deepEqual([again.workerId, again.boot], [first.workerId, first.boot], 'the same worker process answered');
    const now = (await container(first.workerId))!;
    assert.deepEqual(
      [now.id, now.startedAt, now.paused],
      [started.id, started.startedAt, false],
      'unpaused, not restarted',
    );

    await suspended(first.workerId);
    const strict = await send(`strict ${first.workerId}`);
    assert.equal(strict.status, 404);
    assert.match(((await strict.json()) as { detail: string }).detail, /^affinity_worker_gone: .*strict-resume/);
    assert.equal(await status(first.workerId), 'SUSPENDED', 'strict does not resume it');
    assert.equal((await container(first.workerId))?.paused, true);

    const pinned = await whoami(`strict-resume ${first.workerId}`);
    assert.deepEqual([pinned.workerId, pinned.boot], [first.workerId, first.boot]);
    assert.equal((await container(first.workerId))?.startedAt, started.startedAt);
  });
});
