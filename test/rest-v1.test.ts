// REST v1 (/v1, what runpodctl's REST commands speak) over in-process HTTP: every operation of the
// v1 OpenAPI, with request bodies as runpodctl sends them and replies in v1's shapes.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';
import type { FakeClock } from '../src/domain/clock.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const OTHER_GPU = 'NVIDIA RTX A5000';
const PASSWORD = 'pw-v1-never-show-me-9321';
const USERNAME = 'robot$v1-pull-user';
const fleet = [
  {
    id: 'tx-4090',
    dataCenterId: 'US-TX-3',
    gpuTypeId: GPU,
    gpuCount: 64,
    cudaVersion: '12.4',
    vcpus: 512,
    memoryGb: 4096,
    diskGb: 100_000,
    portRange: [20000, 24999],
  },
  {
    id: 'tx-cpu',
    dataCenterId: 'US-TX-3',
    cpuFlavors: ['cpu3c'],
    vcpus: 128,
    memoryGb: 1024,
    portRange: [27000, 27999],
  },
];

let t: TestApp;
let a: { accountId: string; key: string; readKey: string };
let b: { accountId: string; key: string; readKey: string };
before(async () => {
  t = await createTestApp({
    file: {
      rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
      quotas: { pods: 1000, gpus: 1000 },
      fleet,
    },
  });
  a = await t.newAccount('v1-a');
  b = await t.newAccount('v1-b');
});
after(() => t.close());

type Json = Record<string, any>;
const ok = (res: { statusCode: number; body: string }, status = 200): any => {
  assert.equal(res.statusCode, status, res.body);
  return res.body === '' ? null : JSON.parse(res.body);
};
const problem = (res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number) => {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  return JSON.parse(res.body) as { status: number; detail: string; code?: string; errors?: string[] };
};
/** A request the way runpodctl's Go client sends one without a body: JSON content type, nothing after it. */
const bare = (key: string, method: 'POST' | 'DELETE', url: string) =>
  t.app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': '0' },
    payload: '',
  });

/** runpodctl's `pod create` body (PodCreateRequest, omitempty fields). */
const runpodctlPod = (extra: Json = {}) => ({
  name: 'v1-pod',
  imageName: 'runpod/pytorch:2.1',
  computeType: 'GPU',
  gpuTypeIds: [GPU],
  gpuCount: 1,
  containerDiskInGb: 30,
  volumeInGb: 20,
  volumeMountPath: '/workspace',
  ports: ['8888/http', '22/tcp'],
  env: { HELLO: 'world' },
  cloudType: 'SECURE',
  minCudaVersion: '12.0',
  dockerArgs: 'sleep infinity',
  ...extra,
});

const createPod = async (key = a.key, extra: Json = {}) =>
  ok(await t.request(key, 'POST', '/v1/pods', runpodctlPod(extra)), 201);

describe('pods', () => {
  test('a pod created with the body runpodctl sends answers 201 in v1 shape', async () => {
    const pod = await createPod();
    assert.match(pod.id, /^[A-Za-z0-9]/);
    assert.equal(pod.name, 'v1-pod');
    assert.equal(pod.image, 'runpod/pytorch:2.1');
    assert.equal(pod.imageName, 'runpod/pytorch:2.1');
    assert.equal(pod.desiredStatus, 'RUNNING');
    assert.equal(pod.containerDiskInGb, 30);
    assert.equal(pod.volumeInGb, 20);
    assert.equal(pod.volumeMountPath, '/workspace');
    assert.deepEqual(pod.env, { HELLO: 'world' });
    assert.deepEqual(pod.ports, ['8888/http', '22/tcp']);
    assert.deepEqual(pod.gpu, { id: GPU, count: 1, displayName: pod.gpu.displayName });
    assert.equal(pod.gpuCount, 1);
    assert.deepEqual(pod.dockerStartCmd, ['sleep', 'infinity']);
    assert.deepEqual(pod.dockerEntrypoint, []);
    assert.equal(typeof pod.costPerHr, 'number');
    assert.equal(pod.interruptible, false);
  });

  test('a pod created through v1 is the same pod through /v2', async () => {
    const pod = await createPod(a.key, { dockerStartCmd: ['python', '-c', 'print("a b")'], dockerArgs: undefined });
    const v2 = ok(await t.request(a.key, 'GET', `/v2/pods/${pod.id}`));
    assert.equal(v2.image, 'runpod/pytorch:2.1');
    assert.equal(v2.disk, 30);
    assert.deepEqual(v2.mounts, { persistent: { size: 20, path: '/workspace' } });
    assert.deepEqual(v2.gpu, { id: GPU, count: 1, vcpuCount: 6, memory: 48 });
    assert.deepEqual(pod.dockerStartCmd, ['python', '-c', 'print("a b")']);
  });

  test('a pod created with only a GPU type takes the v1 defaults', async () => {
    const pod = ok(await t.request(a.key, 'POST', '/v1/pods', { imageName: 'busybox', gpuTypeIds: [GPU] }), 201);
    assert.equal(pod.name, 'my pod');
    assert.equal(pod.containerDiskInGb, 50);
    assert.equal(pod.volumeInGb, 20);
    assert.equal(pod.volumeMountPath, '/workspace');
    assert.deepEqual(pod.ports, ['8888/http', '22/tcp']);
  });

  test('the first GPU type of gpuTypeIds with capacity is the one used', async () => {
    const pod = ok(
      await t.request(a.key, 'POST', '/v1/pods', { imageName: 'busybox', gpuTypeIds: [OTHER_GPU, GPU] }),
      201,
    );
    assert.equal(pod.gpu.id, GPU);
  });

  test('a CPU pod is created from computeType CPU and cpuFlavorIds', async () => {
    const pod = ok(
      await t.request(a.key, 'POST', '/v1/pods', {
        imageName: 'busybox',
        computeType: 'CPU',
        cpuFlavorIds: ['cpu3c'],
        vcpuCount: 2,
      }),
      201,
    );
    assert.equal(pod.cpuFlavorId, 'cpu3c');
    assert.equal(pod.vcpuCount, 2);
    assert.equal(pod.volumeInGb, 0);
    assert.equal(pod.gpuCount, 0);
  });

  test('listing pods answers a bare array, filtered by repeated gpuTypeId and by name', async () => {
    const pod = await createPod(a.key, { name: 'listed-one' });
    const all = ok(await t.request(a.key, 'GET', '/v1/pods'));
    assert.ok(Array.isArray(all));
    assert.ok(all.some((p: Json) => p.id === pod.id));
    const byGpu = ok(
      await t.request(
        a.key,
        'GET',
        `/v1/pods?gpuTypeId=${encodeURIComponent(OTHER_GPU)}&gpuTypeId=${encodeURIComponent(GPU)}`,
      ),
    );
    assert.ok(byGpu.some((p: Json) => p.id === pod.id));
    const none = ok(await t.request(a.key, 'GET', `/v1/pods?gpuTypeId=${encodeURIComponent(OTHER_GPU)}`));
    assert.deepEqual(none, []);
    const byName = ok(await t.request(a.key, 'GET', '/v1/pods?name=listed-one'));
    assert.deepEqual(
      byName.map((p: Json) => p.id),
      [pod.id],
    );
    assert.ok(!ok(await t.request(b.key, 'GET', '/v1/pods')).some((p: Json) => p.id === pod.id));
  });

  test('reading a pod with includeMachine adds its data center and GPU type', async () => {
    const pod = await createPod();
    const read = ok(await t.request(a.key, 'GET', `/v1/pods/${pod.id}?includeMachine=true&includeNetworkVolume=true`));
    assert.equal(read.machine.dataCenterId, 'US-TX-3');
    assert.equal(read.machine.gpuTypeId, GPU);
    assert.equal(read.machine.secureCloud, true);
  });

  test("a v1 pod answers its owner, the host it is placed on, when its status last changed, and neutral values for the platform's own fields", async () => {
    const clock = t.clock as FakeClock;
    const pod = await createPod();
    assert.equal(pod.consumerUserId, a.accountId);
    assert.equal(pod.machineId, 'tx-4090');
    assert.equal(pod.lastStatusChange, new Date(clock.now()).toISOString());
    assert.equal(pod.endpointId, null);
    assert.equal(pod.aiApiId, null);
    assert.equal(pod.slsVersion, 0);
    assert.deepEqual(pod.savingsPlans, []);
    assert.equal(pod.volumeEncrypted, false);
    clock.advance(90_000);
    const stoppedAt = new Date(clock.now()).toISOString();
    assert.equal(ok(await bare(a.key, 'POST', `/v1/pods/${pod.id}/stop`)).lastStatusChange, stoppedAt);
    clock.advance(60_000);
    // a change that is not one of status leaves it
    const renamed = ok(await t.request(a.key, 'PATCH', `/v1/pods/${pod.id}`, { name: 'renamed' }));
    assert.equal(renamed.lastStatusChange, stoppedAt);
    const listed = ok(await t.request(a.key, 'GET', `/v1/pods?id=${pod.id}`)) as Json[];
    assert.deepEqual(
      listed.map((p) => [p.machineId, p.lastStatusChange, p.consumerUserId]),
      [['tx-4090', stoppedAt, a.accountId]],
    );
  });

  test('stop, start, restart and reset answer the pod to requests with a JSON content type and no body', async () => {
    const pod = await createPod();
    const stopped = ok(await bare(a.key, 'POST', `/v1/pods/${pod.id}/stop`));
    assert.equal(stopped.desiredStatus, 'EXITED');
    const started = ok(await bare(a.key, 'POST', `/v1/pods/${pod.id}/start`));
    assert.equal(started.desiredStatus, 'RUNNING');
    assert.equal(ok(await bare(a.key, 'POST', `/v1/pods/${pod.id}/restart`)).id, pod.id);
    assert.equal(ok(await bare(a.key, 'POST', `/v1/pods/${pod.id}/reset`)).id, pod.id);
  });

  test('PATCH and POST update change a pod with v1 field names', async () => {
    const pod = await createPod();
    const patched = ok(
      await t.request(a.key, 'PATCH', `/v1/pods/${pod.id}`, {
        name: 'renamed',
        env: { ONLY: '1' },
        containerDiskInGb: 40,
      }),
    );
    assert.equal(patched.name, 'renamed');
    assert.deepEqual(patched.env, { ONLY: '1' });
    assert.equal(patched.containerDiskInGb, 40);
    const posted = ok(
      await t.request(a.key, 'POST', `/v1/pods/${pod.id}/update`, { imageName: 'busybox:2', volumeMountPath: '/data' }),
    );
    assert.equal(posted.image, 'busybox:2');
    assert.equal(posted.volumeMountPath, '/data');
    assert.equal(posted.volumeInGb, 20);
    assert.equal(ok(await t.request(a.key, 'GET', `/v2/pods/${pod.id}`)).image, 'busybox:2');
    // Gantry keeps a pod volume's size (a deliberate difference, docs/rest-v1.md)
    const p = problem(await t.request(a.key, 'PATCH', `/v1/pods/${pod.id}`, { volumeInGb: 30 }), 400);
    assert.equal(p.code, 'MOUNT_RULE');
  });

  test('deleting a pod answers 204 and terminates it', async () => {
    const pod = await createPod();
    assert.equal((await bare(a.key, 'DELETE', `/v1/pods/${pod.id}`)).statusCode, 204);
    assert.equal(ok(await t.request(a.key, 'GET', `/v2/pods/${pod.id}`)).status, 'TERMINATED');
    assert.ok(!ok(await t.request(a.key, 'GET', '/v1/pods')).some((p: Json) => p.id === pod.id));
  });

  test('bad pod bodies answer 400 problem+json naming each field', async () => {
    let p = problem(await t.request(a.key, 'POST', '/v1/pods', { ...runpodctlPod(), gpuCount: 'two', nope: 1 }), 400);
    assert.ok(p.errors?.some((e) => e.startsWith('gpuCount')));
    assert.ok(p.errors?.some((e) => e.startsWith('nope: unknown property')));
    p = problem(await t.request(a.key, 'POST', '/v1/pods', { imageName: 'busybox' }), 400);
    assert.match(p.detail, /gpuTypeIds/);
    p = problem(await t.request(a.key, 'POST', '/v1/pods', runpodctlPod({ dockerEntrypoint: ['/bin/sh'] })), 400);
    assert.match(p.detail, /dockerEntrypoint/);
    problem(await t.request(a.key, 'PATCH', '/v1/pods/nope', { containerDiskInGb: -1 }), 400);
    problem(await t.request(a.key, 'POST', '/v1/pods', '{"name":', { 'content-type': 'application/json' }), 400);
  });

  test("another account's pod answers 404 to every pod operation", async () => {
    const pod = await createPod();
    problem(await t.request(b.key, 'GET', `/v1/pods/${pod.id}`), 404);
    problem(await t.request(b.key, 'PATCH', `/v1/pods/${pod.id}`, { name: 'x' }), 404);
    problem(await t.request(b.key, 'POST', `/v1/pods/${pod.id}/update`, { name: 'x' }), 404);
    for (const action of ['start', 'stop', 'restart', 'reset'])
      problem(await bare(b.key, 'POST', `/v1/pods/${pod.id}/${action}`), 404);
    problem(await bare(b.key, 'DELETE', `/v1/pods/${pod.id}`), 404);
    assert.equal(ok(await t.request(a.key, 'GET', `/v1/pods/${pod.id}`)).desiredStatus, 'RUNNING');
  });

  test('v1 needs a key, and a read key may not write', async () => {
    problem(await t.request(null, 'GET', '/v1/pods'), 401);
    problem(await t.request(a.readKey, 'POST', '/v1/pods', runpodctlPod()), 403);
    assert.ok(Array.isArray(ok(await t.request(a.readKey, 'GET', '/v1/pods'))));
  });
});

describe('templates', () => {
  const runpodctlTemplate = {
    name: 'v1-template',
    imageName: 'runpod/base:1',
    ports: ['8888/http'],
    dockerStartCmd: ['bash', '-c', 'echo hi && sleep 1'],
    env: { A: '1' },
    containerDiskInGb: 25,
    volumeInGb: 10,
    volumeMountPath: '/data',
    readme: '# hi',
  };

  test('a template created with v1 names answers 200 in v1 shape with v1 defaults', async () => {
    const created = ok(await t.request(a.key, 'POST', '/v1/templates', runpodctlTemplate));
    assert.equal(created.name, 'v1-template');
    assert.deepEqual(created.dockerStartCmd, ['bash', '-c', 'echo hi && sleep 1']);
    assert.equal(created.volumeMountPath, '/data');
    assert.equal(created.isRunpod, false);
    assert.equal(created.isServerless, false);
    const defaults = ok(await t.request(a.key, 'POST', '/v1/templates', { name: 'd', imageName: 'd:1' }));
    assert.equal(defaults.containerDiskInGb, 50);
    assert.equal(defaults.volumeInGb, 20);
    assert.equal(defaults.volumeMountPath, '/workspace');
    assert.deepEqual(defaults.ports, ['8888/http', '22/tcp']);
    assert.equal(defaults.category, 'NVIDIA');
    const v2 = ok(await t.request(a.key, 'GET', `/v2/templates/${created.id}`));
    assert.equal(v2.args, "bash -c 'echo hi && sleep 1'");
  });

  test('templates list as a bare array; the catalog ones only with includePublicTemplates', async () => {
    const created = ok(await t.request(a.key, 'POST', '/v1/templates', { name: 'listed', imageName: 'l:1' }));
    const own = ok(await t.request(a.key, 'GET', '/v1/templates'));
    assert.ok(Array.isArray(own));
    assert.ok(own.some((x: Json) => x.id === created.id));
    assert.ok(own.every((x: Json) => x.isRunpod === false));
    const withPublic = ok(await t.request(a.key, 'GET', '/v1/templates?includePublicTemplates=true'));
    assert.ok(withPublic.some((x: Json) => x.isRunpod === true));
    assert.equal(ok(await t.request(a.key, 'GET', `/v1/templates/${created.id}`)).name, 'listed');
  });

  test('PATCH and POST update change a template; delete answers 204', async () => {
    const created = ok(await t.request(a.key, 'POST', '/v1/templates', { name: 'u', imageName: 'u:1' }));
    assert.equal(
      ok(await t.request(a.key, 'PATCH', `/v1/templates/${created.id}`, { imageName: 'u:2' })).imageName,
      'u:2',
    );
    assert.equal(
      ok(await t.request(a.key, 'POST', `/v1/templates/${created.id}/update`, { readme: 'new' })).readme,
      'new',
    );
    assert.equal((await bare(a.key, 'DELETE', `/v1/templates/${created.id}`)).statusCode, 204);
    problem(await t.request(a.key, 'GET', `/v1/templates/${created.id}`), 404);
  });

  test("another account's template answers 404 and a bad template body 400", async () => {
    const created = ok(await t.request(a.key, 'POST', '/v1/templates', { name: 'mine', imageName: 'm:1' }));
    problem(await t.request(b.key, 'GET', `/v1/templates/${created.id}`), 404);
    problem(await t.request(b.key, 'PATCH', `/v1/templates/${created.id}`, { name: 'x' }), 404);
    problem(await bare(b.key, 'DELETE', `/v1/templates/${created.id}`), 404);
    const p = problem(await t.request(a.key, 'POST', '/v1/templates', { name: 'no-image' }), 400);
    assert.ok(p.errors?.includes('imageName: is required'));
    problem(await t.request(a.key, 'POST', '/v1/templates', { name: 'v', imageName: 'v:1', volumeInGb: 5 }), 400);
  });
});

describe('network volumes', () => {
  test('network volumes are created (200), listed as a bare array, read, updated both ways and deleted', async () => {
    const created = ok(
      await t.request(a.key, 'POST', '/v1/networkvolumes', { name: 'vol', size: 10, dataCenterId: 'US-TX-3' }),
    );
    assert.deepEqual(Object.keys(created).sort(), ['dataCenterId', 'id', 'name', 'size']);
    const list = ok(await t.request(a.key, 'GET', '/v1/networkvolumes'));
    assert.ok(Array.isArray(list) && list.some((v: Json) => v.id === created.id));
    assert.equal(ok(await t.request(a.key, 'GET', `/v1/networkvolumes/${created.id}`)).size, 10);
    assert.equal(
      ok(await t.request(a.key, 'PATCH', `/v1/networkvolumes/${created.id}`, { name: 'vol2' })).name,
      'vol2',
    );
    assert.equal(ok(await t.request(a.key, 'POST', `/v1/networkvolumes/${created.id}/update`, { size: 20 })).size, 20);
    assert.equal(ok(await t.request(a.key, 'GET', `/v2/network-volumes/${created.id}`)).size, 20);
    assert.equal((await bare(a.key, 'DELETE', `/v1/networkvolumes/${created.id}`)).statusCode, 204);
    problem(await t.request(a.key, 'GET', `/v1/networkvolumes/${created.id}`), 404);
  });

  test('a pod on a network volume shows its id, and the volume with includeNetworkVolume', async () => {
    const vol = ok(
      await t.request(a.key, 'POST', '/v1/networkvolumes', { name: 'podvol', size: 10, dataCenterId: 'US-TX-3' }),
    );
    const pod = await createPod(a.key, { networkVolumeId: vol.id, volumeInGb: undefined, volumeMountPath: '/mnt/vol' });
    assert.equal(pod.networkVolumeId, vol.id, JSON.stringify(pod));
    assert.equal(pod.volumeMountPath, '/mnt/vol');
    const read = ok(await t.request(a.key, 'GET', `/v1/pods/${pod.id}?includeNetworkVolume=true`));
    assert.deepEqual(read.networkVolume, { id: vol.id, name: 'podvol', size: 10, dataCenterId: 'US-TX-3' });
  });

  test("another account's volume answers 404 and a volume without a size 400", async () => {
    const created = ok(
      await t.request(a.key, 'POST', '/v1/networkvolumes', { name: 'v', size: 10, dataCenterId: 'US-TX-3' }),
    );
    problem(await t.request(b.key, 'GET', `/v1/networkvolumes/${created.id}`), 404);
    problem(await t.request(b.key, 'PATCH', `/v1/networkvolumes/${created.id}`, { name: 'x' }), 404);
    problem(await bare(b.key, 'DELETE', `/v1/networkvolumes/${created.id}`), 404);
    const p = problem(
      await t.request(a.key, 'POST', '/v1/networkvolumes', { name: 'v', dataCenterId: 'US-TX-3' }),
      400,
    );
    assert.ok(p.errors?.includes('size: is required'));
  });
});

describe('container registry auth', () => {
  test('a registry credential is stored and never echoed: create, list, get and delete show only id and name', async () => {
    const res = await t.request(a.key, 'POST', '/v1/containerregistryauth', {
      name: 'ghcr',
      username: USERNAME,
      password: PASSWORD,
    });
    const created = ok(res);
    assert.deepEqual(Object.keys(created).sort(), ['id', 'name']);
    const list = await t.request(a.key, 'GET', '/v1/containerregistryauth');
    const got = await t.request(a.key, 'GET', `/v1/containerregistryauth/${created.id}`);
    for (const r of [res, list, got]) {
      assert.ok(!r.body.includes(PASSWORD) && !r.body.includes(USERNAME), r.body);
    }
    assert.ok(Array.isArray(json(list)) && json<Json[]>(list).some((x) => x.id === created.id));
    assert.deepEqual(json(got), { id: created.id, name: 'ghcr' });
    assert.ok(ok(await t.request(a.key, 'GET', '/v2/registries')).registries.some((x: Json) => x.id === created.id));
    problem(await t.request(b.key, 'GET', `/v1/containerregistryauth/${created.id}`), 404);
    problem(await bare(b.key, 'DELETE', `/v1/containerregistryauth/${created.id}`), 404);
    assert.equal((await bare(a.key, 'DELETE', `/v1/containerregistryauth/${created.id}`)).statusCode, 204);
    problem(await t.request(a.key, 'GET', `/v1/containerregistryauth/${created.id}`), 404);
  });

  test('a registry credential without a password answers 400, and a pod can pull with one by containerRegistryAuthId', async () => {
    const p = problem(await t.request(a.key, 'POST', '/v1/containerregistryauth', { name: 'x', username: 'u' }), 400);
    assert.ok(p.errors?.includes('password: is required'));
    const reg = ok(
      await t.request(a.key, 'POST', '/v1/containerregistryauth', { name: 'r', username: 'u', password: 'p' }),
    );
    const pod = await createPod(a.key, { containerRegistryAuthId: reg.id });
    assert.equal(pod.containerRegistryAuthId, reg.id);
    problem(await createPodRaw(b.key, { containerRegistryAuthId: reg.id }), 400);
  });
});
const createPodRaw = (key: string, extra: Json) => t.request(key, 'POST', '/v1/pods', runpodctlPod(extra));

describe('endpoints', () => {
  let templateId: string;
  before(async () => {
    templateId = ok(
      await t.request(a.key, 'POST', '/v1/templates', { name: 'sls', imageName: 'w:1', isServerless: true }),
    ).id;
  });

  test('an endpoint created with v1 names answers 200; its GPU types and data centers read back', async () => {
    const created = ok(
      await t.request(a.key, 'POST', '/v1/endpoints', {
        name: 'ep',
        templateId,
        gpuTypeIds: [GPU],
        workersMin: 0,
        workersMax: 2,
        idleTimeout: 7,
        scalerType: 'REQUEST_COUNT',
        scalerValue: 3,
        dataCenterIds: ['US-TX-3'],
        executionTimeoutMs: 60000,
        flashboot: true,
      }),
    );
    assert.equal(created.name, 'ep');
    assert.equal(created.templateId, templateId);
    assert.ok(created.gpuTypeIds.includes(GPU));
    assert.equal(created.workersMax, 2);
    assert.equal(created.idleTimeout, 7);
    assert.equal(created.scalerType, 'REQUEST_COUNT');
    assert.ok(created.dataCenterIds.includes('US-TX-3'));
    assert.ok(!created.dataCenterIds.includes('EU-RO-1'));
    assert.equal(created.flashboot, true);
    assert.equal(created.userId, a.accountId);
    const v2 = ok(await t.request(a.key, 'GET', `/v2/serverless/${created.id}`));
    assert.equal(v2.workers.max, 2);
  });

  test('minCudaVersion is stored and answered on v1 and /v2; "" removes it; a bare major answers 400', async () => {
    const created = ok(await t.request(a.key, 'POST', '/v1/endpoints', { templateId, minCudaVersion: '12.4' }));
    assert.equal(created.minCudaVersion, '12.4');
    assert.equal(ok(await t.request(a.key, 'GET', `/v1/endpoints/${created.id}`)).minCudaVersion, '12.4');
    const stored = await t.services.endpoints.get(a.accountId, created.id);
    assert.equal(stored.minCudaVersion, '12.4');
    const v2 = ok(await t.request(a.key, 'GET', `/v2/serverless/${created.id}`));
    assert.equal(v2.gpu.minCudaVersion, '12.4');
    const raised = ok(await t.request(a.key, 'POST', `/v1/endpoints/${created.id}/update`, { minCudaVersion: '12.8' }));
    assert.equal(raised.minCudaVersion, '12.8');
    const cleared = ok(await t.request(a.key, 'PATCH', `/v1/endpoints/${created.id}`, { minCudaVersion: '' }));
    assert.equal(cleared.minCudaVersion, null);
    problem(await t.request(a.key, 'PATCH', `/v1/endpoints/${created.id}`, { minCudaVersion: '12' }), 400);
  });

  test('endpoints list as a bare array, with the template when includeTemplate is true', async () => {
    const created = ok(await t.request(a.key, 'POST', '/v1/endpoints', { templateId }));
    assert.equal(created.scalerType, 'QUEUE_DELAY');
    assert.equal(created.scalerValue, 4);
    assert.equal(created.idleTimeout, 5);
    const list = ok(await t.request(a.key, 'GET', '/v1/endpoints?includeTemplate=true&includeWorkers=true'));
    const mine = list.find((e: Json) => e.id === created.id);
    assert.equal(mine.template.id, templateId);
    assert.deepEqual(mine.workers, []);
    const got = ok(await t.request(a.key, 'GET', `/v1/endpoints/${created.id}`));
    assert.equal(got.template, undefined);
  });

  test('PATCH and POST update change an endpoint; delete answers 204', async () => {
    const created = ok(await t.request(a.key, 'POST', '/v1/endpoints', { templateId, name: 'upd' }));
    assert.equal(ok(await t.request(a.key, 'PATCH', `/v1/endpoints/${created.id}`, { workersMax: 5 })).workersMax, 5);
    assert.equal(
      ok(await t.request(a.key, 'POST', `/v1/endpoints/${created.id}/update`, { name: 'upd2' })).name,
      'upd2',
    );
    assert.equal((await bare(a.key, 'DELETE', `/v1/endpoints/${created.id}`)).statusCode, 204);
    problem(await t.request(a.key, 'GET', `/v1/endpoints/${created.id}`), 404);
  });

  test("another account's endpoint answers 404 and bad endpoint bodies 400", async () => {
    const created = ok(await t.request(a.key, 'POST', '/v1/endpoints', { templateId }));
    problem(await t.request(b.key, 'GET', `/v1/endpoints/${created.id}`), 404);
    problem(await t.request(b.key, 'PATCH', `/v1/endpoints/${created.id}`, { name: 'x' }), 404);
    problem(await bare(b.key, 'DELETE', `/v1/endpoints/${created.id}`), 404);
    let p = problem(await t.request(a.key, 'POST', '/v1/endpoints', { name: 'no-template' }), 400);
    assert.ok(p.errors?.includes('templateId: is required'));
    p = problem(await t.request(a.key, 'POST', '/v1/endpoints', { templateId, gpuTypeIds: ['NO SUCH GPU'] }), 400);
    assert.match(p.detail, /NO SUCH GPU/);
    problem(await t.request(a.key, 'POST', '/v1/endpoints', { templateId, workersMin: 5, workersMax: 1 }), 400);
  });
});

describe('billing', () => {
  test('billing for pods, endpoints and network volumes answers bare arrays to the queries runpodctl sends', async () => {
    for (const path of [
      '/v1/billing/pods?bucketSize=day&grouping=podId&startTime=2026-01-01T00:00:00Z',
      '/v1/billing/endpoints?bucketSize=hour&grouping=endpointId',
      '/v1/billing/networkvolumes?bucketSize=month',
    ])
      assert.ok(Array.isArray(ok(await t.request(a.key, 'GET', path))), path);
    problem(await t.request(a.key, 'GET', '/v1/billing/pods?bucketSize=fortnight'), 400);
    problem(await t.request(null, 'GET', '/v1/billing/pods'), 401);
  });
});

describe('OpenAPI', () => {
  const V1_OPERATIONS = [
    'post /pods',
    'get /pods',
    'get /pods/{podId}',
    'patch /pods/{podId}',
    'delete /pods/{podId}',
    'post /pods/{podId}/update',
    'post /pods/{podId}/start',
    'post /pods/{podId}/stop',
    'post /pods/{podId}/reset',
    'post /pods/{podId}/restart',
    'post /endpoints',
    'get /endpoints',
    'get /endpoints/{endpointId}',
    'patch /endpoints/{endpointId}',
    'delete /endpoints/{endpointId}',
    'post /endpoints/{endpointId}/update',
    'post /templates',
    'get /templates',
    'get /templates/{templateId}',
    'patch /templates/{templateId}',
    'delete /templates/{templateId}',
    'post /templates/{templateId}/update',
    'post /networkvolumes',
    'get /networkvolumes',
    'get /networkvolumes/{networkVolumeId}',
    'patch /networkvolumes/{networkVolumeId}',
    'delete /networkvolumes/{networkVolumeId}',
    'post /networkvolumes/{networkVolumeId}/update',
    'post /containerregistryauth',
    'get /containerregistryauth',
    'get /containerregistryauth/{containerRegistryAuthId}',
    'delete /containerregistryauth/{containerRegistryAuthId}',
    'get /billing/pods',
    'get /billing/endpoints',
    'get /billing/networkvolumes',
  ];

  test('GET /v1/openapi.json is served without a key and describes exactly the 35 v1 operations', async () => {
    const doc = ok(await t.request(null, 'GET', '/v1/openapi.json'));
    assert.match(doc.openapi, /^3\./);
    assert.match(doc.servers[0].url, /\/v1$/);
    const ops = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method} ${path}`),
    );
    assert.deepEqual(ops.sort(), [...V1_OPERATIONS].sort());
    const list = doc.paths['/pods'].get.responses['200'].content['application/json'].schema;
    assert.equal(list.type, 'array');
  });

  test('/v2/openapi.json describes no /v1 route', async () => {
    const doc = ok(await t.request(null, 'GET', '/v2/openapi.json'));
    assert.ok(Object.keys(doc.paths).every((p) => !p.startsWith('/v1')));
    assert.ok(doc.paths['/v2/pods']);
  });
});

describe('over a real socket', () => {
  test("runpodctl's sequence over HTTP with its headers: credential, volume, template, pod, stop, start, delete", async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `${address}/v1`;
    // runpodctl's client: a bearer key, a JSON content type on every request, bodies only when it has one
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${a.key}`,
          'content-type': 'application/json',
          'user-agent': 'runpod-cli/test (linux; amd64)',
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${text}`);
      return text === '' ? null : JSON.parse(text);
    };
    const reg = await call('POST', '/containerregistryauth', { name: 'sock', username: 'u', password: 'p' });
    const vol = await call('POST', '/networkvolumes', { name: 'sock', size: 10, dataCenterId: 'US-TX-3' });
    const tpl = await call('POST', '/templates', {
      name: 'sock',
      imageName: 'busybox',
      containerRegistryAuthId: reg.id,
    });
    const pod = await call('POST', '/pods', {
      name: 'sock',
      templateId: tpl.id,
      gpuTypeIds: [GPU],
      gpuCount: 1,
      networkVolumeId: vol.id,
      cloudType: 'SECURE',
    });
    // the template's image and registry credential; Gantry keeps no link to the template itself
    assert.equal(pod.image, 'busybox');
    assert.equal(pod.containerRegistryAuthId, reg.id);
    assert.equal(pod.networkVolumeId, vol.id);
    assert.equal((await call('POST', `/pods/${pod.id}/stop`)).desiredStatus, 'EXITED');
    assert.equal((await call('POST', `/pods/${pod.id}/start`)).desiredStatus, 'RUNNING');
    assert.ok((await call('GET', '/pods')).some((p: Json) => p.id === pod.id));
    assert.equal(await call('DELETE', `/pods/${pod.id}`), null);
    assert.equal(await call('DELETE', `/templates/${tpl.id}`), null);
    assert.equal(await call('DELETE', `/networkvolumes/${vol.id}`), null);
    assert.equal(await call('DELETE', `/containerregistryauth/${reg.id}`), null);
  });
});
