// What the pod services ask of the runtime port, on the in-memory runtime and a fake clock:
// terminate removes an instance and stop keeps it, an instance the runtime cannot see keeps its
// pod's status with the reason, an unavailable runtime refuses creates and starts (503
// RUNTIME_UNAVAILABLE) and holds launches back, and a globally networked pod joins its account's
// network.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { FakeClock } from '../src/domain/clock.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { until } from './support/eventually.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const SMALL = 'NVIDIA RTX A5000';
const fleet = [
  {
    id: 'big',
    dataCenterId: 'US-TX-3',
    gpuTypeId: GPU,
    gpuCount: 64,
    cudaVersion: '12.4',
    vcpus: 256,
    memoryGb: 2048,
    portRange: [32000, 32999],
  },
  {
    id: 'small',
    dataCenterId: 'US-CA-2',
    gpuTypeId: SMALL,
    gpuCount: 2,
    cudaVersion: '12.1',
    portRange: [31000, 31099],
  },
];
const ENGINE_AWAY = 'the Docker Engine at unix:///var/run/docker.sock is unreachable (connect ECONNREFUSED)';

describe('pods on the runtime port', () => {
  let t: TestApp;
  let runtime: FakeRuntime;
  let key: string;
  let accountId: string;

  const create = async (body: Record<string, unknown> = {}) => {
    const res = await t.request(key, 'POST', '/v2/pods', {
      name: 'port',
      image: 'ubuntu:22.04',
      gpu: { id: GPU },
      ...body,
    });
    assert.equal(res.statusCode, 201, res.body);
    const pod = json(res);
    await t.services.podController.idle(pod.id);
    return pod;
  };
  const get = async (id: string) => json(await t.request(key, 'GET', `/v2/pods/${id}`));
  const act = (id: string, action: string) => t.request(key, 'POST', `/v2/pods/${id}/action`, { action });

  before(async () => {
    runtime = new FakeRuntime();
    t = await createTestApp({
      clock: new FakeClock(Date.now()),
      runtime,
      file: { fleet, pods: { reconcileIntervalMs: 50 } },
    });
    ({ key, accountId } = await t.newAccount('port'));
    await t.services.podController.start();
  });
  after(() => t.close());

  test('terminate removes the instance and all it had; stop only stops it, keeping its storage', async () => {
    const pod = await create({ mounts: { persistent: { size: 10, path: '/workspace' } } });
    assert.equal((await get(pod.id)).status, 'RUNNING');
    assert.equal((await act(pod.id, 'stop')).statusCode, 200);
    assert.ok(runtime.stopped.includes(pod.id));
    assert.equal(runtime.removed.includes(pod.id), false, 'a stopped pod keeps its persistent volume');
    assert.equal((await t.request(key, 'DELETE', `/v2/pods/${pod.id}`)).statusCode, 204);
    assert.deepEqual(
      runtime.removed.filter((id) => id === pod.id),
      [pod.id],
    );
  });

  test('an instance the runtime reports unknown keeps its pod RUNNING with the reason, is not restarted by the sweep, and the reason clears when it is seen again', async () => {
    const pod = await create();
    assert.equal((await get(pod.id)).status, 'RUNNING');
    const starts = runtime.started.filter((id) => id === pod.id).length;
    runtime.report(pod.id, 'unknown', ENGINE_AWAY);
    await t.services.podController.idle(pod.id);
    const away = await get(pod.id);
    assert.equal(away.status, 'RUNNING');
    assert.equal(away.statusReason, ENGINE_AWAY);
    const sweeps = runtime.lists;
    await until('three sweeps', () => runtime.lists >= sweeps + 3);
    await t.services.podController.idle(pod.id);
    assert.equal(runtime.started.filter((id) => id === pod.id).length, starts, 'not restarted');
    assert.equal(runtime.stopped.includes(pod.id), false, 'not stopped');
    assert.equal((await get(pod.id)).status, 'RUNNING');
    runtime.report(pod.id, 'running');
    await t.services.podController.idle(pod.id);
    const back = await get(pod.id);
    assert.equal(back.status, 'RUNNING');
    assert.equal(back.statusReason, null);
  });

  test('a globally networked pod joins its account’s network under its internal DNS name at its global address', async () => {
    const pod = await create({ globalNetworking: true });
    const spec = runtime.specs.get(pod.id)!;
    assert.deepEqual(spec.network, {
      name: `acct-${accountId}`,
      aliases: [`${pod.id}.gantry.internal`],
      ip: pod.globalNetworking.ip,
    });
    assert.equal(spec.networkMode, 'default');
    const plain = await create();
    assert.equal(runtime.specs.get(plain.id)!.network, null);
  });

  describe('while the runtime is unavailable', () => {
    const pods = async () =>
      (await t.services.db.kysely.selectFrom('pods').select('id').where('account_id', '=', accountId).execute()).length;

    test('POST /v2/pods answers 503 RUNTIME_UNAVAILABLE with the reason, storing and reserving nothing', async () => {
      const before = await pods();
      runtime.unavailableReason = ENGINE_AWAY;
      try {
        const res = await t.request(key, 'POST', '/v2/pods', {
          name: 'refused',
          image: 'ubuntu:22.04',
          gpu: { id: SMALL, count: 2 },
        });
        assert.equal(res.statusCode, 503, res.body);
        assert.match(String(res.headers['content-type']), /application\/problem\+json/);
        const problem = json(res);
        assert.equal(problem.code, 'RUNTIME_UNAVAILABLE');
        assert.ok(problem.detail.includes(ENGINE_AWAY), problem.detail);
        assert.equal(await pods(), before);
      } finally {
        runtime.unavailableReason = null;
      }
      // the host's 2 GPUs it asked for were not reserved: a pod can take them now
      const all = await create({ gpu: { id: SMALL, count: 2 } });
      assert.equal((await t.request(key, 'DELETE', `/v2/pods/${all.id}`)).statusCode, 204);
    });

    test('GraphQL podFindAndDeployOnDemand answers RUNTIME_UNAVAILABLE with the reason and creates nothing', async () => {
      const before = await pods();
      runtime.unavailableReason = ENGINE_AWAY;
      try {
        const res = await t.request(key, 'POST', '/graphql', {
          query: `mutation { podFindAndDeployOnDemand(input: { name: "g", imageName: "ubuntu:22.04", gpuTypeId: "${GPU}", gpuCount: 1, cloudType: ALL }) { id } }`,
        });
        const body = json(res);
        assert.equal(body.data?.podFindAndDeployOnDemand ?? null, null);
        assert.equal(body.errors?.[0]?.extensions?.code, 'RUNTIME_UNAVAILABLE', res.body);
        assert.ok(String(body.errors[0].message).includes(ENGINE_AWAY), res.body);
        assert.equal(await pods(), before);
      } finally {
        runtime.unavailableReason = null;
      }
    });

    test('start of a stopped pod answers 503 RUNTIME_UNAVAILABLE, the pod stays EXITED and reserves nothing', async () => {
      const pod = await create();
      assert.equal((await act(pod.id, 'stop')).statusCode, 200);
      runtime.unavailableReason = ENGINE_AWAY;
      try {
        for (const action of ['start', 'restart']) {
          const res = await act(pod.id, action);
          assert.equal(res.statusCode, 503, res.body);
          assert.equal(json(res).code, 'RUNTIME_UNAVAILABLE');
        }
        assert.equal((await get(pod.id)).status, 'EXITED');
        assert.equal(t.services.inventory.allocationOf(pod.id), undefined);
      } finally {
        runtime.unavailableReason = null;
      }
      assert.equal((await act(pod.id, 'start')).statusCode, 200);
      await t.services.podController.idle(pod.id);
      assert.equal((await get(pod.id)).status, 'RUNNING');
    });

    test('stop and terminate of a running pod answer 503 RUNTIME_UNAVAILABLE while the runtime is away, and the pod stays RUNNING', async () => {
      const pod = await create();
      await t.services.podController.idle(pod.id);
      runtime.unavailableReason = ENGINE_AWAY;
      try {
        for (const action of ['stop', 'terminate']) {
          const res = await act(pod.id, action);
          assert.equal(res.statusCode, 503, res.body);
          assert.equal(json(res).code, 'RUNTIME_UNAVAILABLE');
          assert.match(
            json(res).detail,
            new RegExp(`cannot be ${action === 'stop' ? 'stopped' : 'terminated'} right now`),
          );
        }
        assert.equal((await get(pod.id)).status, 'RUNNING');
      } finally {
        runtime.unavailableReason = null;
      }
      assert.equal((await act(pod.id, 'terminate')).statusCode, 204);
    });

    test('a pod whose instance vanished while the runtime is unavailable waits in STARTING with the reason instead of failing, and runs once the runtime is back', async () => {
      const pod = await create();
      runtime.unavailableReason = ENGINE_AWAY;
      try {
        // Its instance vanished (the sweep relaunches such a pod), while no instance can start.
        await runtime.stop(pod.id);
        await until(
          'the pod waits with the reason',
          async () => (await get(pod.id)).statusReason === `waiting for the runtime: ${ENGINE_AWAY}`,
        );
        const waiting = await get(pod.id);
        assert.equal(waiting.status, 'STARTING');
        const sweeps = runtime.lists;
        await until('three more sweeps', () => runtime.lists >= sweeps + 3);
        assert.equal((await get(pod.id)).status, 'STARTING', 'not put in ERROR');
      } finally {
        runtime.unavailableReason = null;
      }
      await until('the pod runs again', async () => (await get(pod.id)).status === 'RUNNING');
      assert.equal((await get(pod.id)).statusReason, null);
    });
  });
});
