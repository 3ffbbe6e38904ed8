// The pod REST API (spec 2.1-2.9, 4.1, 7; DESIGN "Decisions where the spec is silent") over
// in-process HTTP. Unmapped images run as idle placeholders, so every pod can reach RUNNING.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';
import type { LightMyRequestResponse } from 'fastify';
import { FakeClock } from '../src/domain/clock.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const sshKey = `ssh-ed25519 ${Buffer.concat([Buffer.from([0, 0, 0, 11]), Buffer.from('ssh-ed25519'), Buffer.from([0, 0, 0, 32]), Buffer.alloc(32, 7)]).toString('base64')} me@laptop`;

// Enough GPUs that every test can create pods; the A5000 type does not support global networking.
const fleet = [
  {
    id: 'tx-4090',
    dataCenterId: 'US-TX-3',
    gpuTypeId: GPU,
    gpuCount: 256,
    cudaVersion: '12.4',
    vcpus: 512,
    memoryGb: 4096,
    diskGb: 100_000,
    portRange: [20000, 24999],
  },
  {
    id: 'ca-a5000',
    dataCenterId: 'US-CA-2',
    gpuTypeId: 'NVIDIA RTX A5000',
    gpuCount: 8,
    cudaVersion: '12.1',
    portRange: [25000, 25999],
  },
  {
    id: 'ro-l40s',
    dataCenterId: 'EU-RO-1',
    gpuTypeId: 'NVIDIA L40S',
    gpuCount: 8,
    cudaVersion: '12.4',
    portRange: [26000, 26999],
  },
  {
    id: 'tx-cpu',
    dataCenterId: 'US-TX-3',
    cpuFlavors: ['cpu3c', 'cpu3g', 'cpu3m'],
    vcpus: 512,
    memoryGb: 4096,
    portRange: [27000, 27999],
  },
  {
    id: 'ro-cpu',
    dataCenterId: 'EU-RO-1',
    cloud: 'COMMUNITY',
    cpuFlavors: ['cpu3c'],
    vcpus: 128,
    memoryGb: 1024,
    portRange: [28000, 28999],
  },
];

let t: TestApp;
let clock: FakeClock;
let a: { accountId: string; key: string; readKey: string };
let b: { accountId: string; key: string; readKey: string };

before(async () => {
  clock = new FakeClock(Date.now());
  // one account fills the fleet to test placement: no quota may refuse it first (tenant-matrix-quotas tests those)
  t = await createTestApp({
    clock,
    file: {
      rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
      quotas: { pods: 10_000, gpus: 10_000 },
      fleet,
    },
  });
  a = await t.newAccount('pods-a');
  b = await t.newAccount('pods-b');
});
after(() => t.close());

const create = (body: Record<string, unknown>, key = a.key) => t.request(key, 'POST', '/v2/pods', body);
const get = (id: string, key = a.key) => t.request(key, 'GET', `/v2/pods/${id}`);

async function createPod(body: Record<string, unknown> = {}, key = a.key): Promise<any> {
  const res = await create({ name: 'p', image: 'ubuntu:22.04', gpu: { id: GPU }, ...body }, key);
  assert.equal(res.statusCode, 201, res.body);
  return json(res);
}

/** Polls the pod until it has `status`, failing after a bounded deadline. */
async function waitForStatus(id: string, status: string, key = a.key, timeoutMs = 10_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < deadline) {
    last = json(await get(id, key));
    if (last.status === status) return last;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(
    `pod ${id} did not reach ${status} within ${timeoutMs} ms (last: ${last?.status} ${last?.statusReason ?? ''})`,
  );
}

const problem = (res: LightMyRequestResponse, status: number, detail?: RegExp) => {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  if (detail) assert.match(json(res).detail, detail);
  return json(res);
};

describe('create', () => {
  test('a GPU pod answers 201 PROVISIONING with every spec field, an empty runtime and no startedAt', async () => {
    const res = await create({ name: 'first', image: 'ubuntu:22.04', gpu: { id: GPU } });
    assert.equal(res.statusCode, 201, res.body);
    const pod = json(res);
    assert.match(pod.id, /^[a-z0-9]+$/);
    assert.equal(pod.name, 'first');
    assert.equal(pod.status, 'PROVISIONING');
    assert.deepEqual(pod.actions, ['stop', 'terminate']);
    assert.equal(pod.image, 'ubuntu:22.04');
    assert.equal(pod.args, '');
    assert.equal(pod.disk, 20);
    assert.deepEqual(pod.mounts, {});
    assert.deepEqual(pod.ports, []);
    assert.deepEqual(pod.env, {});
    assert.equal(pod.registry, null);
    assert.deepEqual(
      pod.gpu,
      { id: GPU, count: 1, vcpuCount: 2, memory: 16 },
      'its allotment on its host, as upstream answers it',
    );
    assert.equal('cpu' in pod, false);
    assert.equal(pod.cloud, 'SECURE');
    assert.equal(pod.dataCenterId, 'US-TX-3');
    assert.equal(pod.cudaVersion, '12.4');
    assert.deepEqual(pod.ssh, { proxy: null, direct: null });
    assert.equal(pod.template, null);
    assert.equal(pod.cost, 0.69);
    assert.equal(pod.locked, false);
    assert.deepEqual(pod.globalNetworking, { enabled: false });
    assert.deepEqual(pod.runtime, {});
    assert.equal(pod.startedAt, null);
    assert.ok(!Number.isNaN(Date.parse(pod.createdAt)));
    assert.equal(pod.statusReason, null);
    assert.equal('startSsh' in pod || 'startJupyter' in pod, false);
  });

  test('a CPU pod carries cpu {id, vcpuCount, memory = vcpus × multiplier}, no gpu key and a null cudaVersion', async () => {
    const pod = await createPod({ gpu: undefined, cpu: { id: 'cpu3g', vcpuCount: 4 } });
    assert.deepEqual(pod.cpu, { id: 'cpu3g', vcpuCount: 4, memory: 16 });
    assert.equal('gpu' in pod, false);
    assert.equal(pod.cudaVersion, null);
    assert.equal(pod.cost, 0.16);
  });

  test('every unknown property, at any level, is one 422 errors entry', async () => {
    const res = await create({
      name: 'x',
      image: 'i',
      gpu: { id: GPU, vram: 1 },
      mounts: { persistent: { size: 10, path: '/w', fast: true }, other: {} },
      colour: 'red',
    });
    const body = problem(res, 422);
    assert.equal(body.errors.length, 4, body.errors.join(' | '));
    for (const field of ['gpu.vram', 'mounts.persistent.fast', 'mounts.other', 'colour'])
      assert.ok(
        body.errors.some((e: string) => e.startsWith(field)),
        field,
      );
  });

  test('schema bounds are 422: empty name, disk 0, gpu count 0, vcpuCount 1, persistent size 9, two network mounts, bad CUDA version', async () => {
    const bad = [
      { name: '', image: 'i', gpu: { id: GPU } },
      { name: 'x', image: 'i', disk: 0, gpu: { id: GPU } },
      { name: 'x', image: 'i', gpu: { id: GPU, count: 0 } },
      { name: 'x', image: 'i', cpu: { id: 'cpu3c', vcpuCount: 1 } },
      { name: 'x', image: 'i', gpu: { id: GPU }, mounts: { persistent: { size: 9, path: '/w' } } },
      {
        name: 'x',
        image: 'i',
        gpu: { id: GPU },
        mounts: {
          network: [
            { volumeId: 'a', path: '/a' },
            { volumeId: 'b', path: '/b' },
          ],
        },
      },
      { name: 'x', image: 'i', gpu: { id: GPU }, allowedCudaVersions: ['12'] },
      { name: 'x', image: 'i', gpu: { id: GPU }, minCudaVersion: 'twelve' },
      { name: 'x', image: 'i', gpu: { id: GPU }, mounts: { network: [{ volumeId: 'a' }] } },
    ];
    for (const body of bad) problem(await create(body), 422);
  });

  test('malformed JSON is a 400', async () => {
    problem(await t.request(a.key, 'POST', '/v2/pods', '{"name":', { 'content-type': 'application/json' }), 400);
  });

  test('cross-field rules are 400: both or neither gpu/cpu, CUDA conflicts, CUDA with cpu, both mounts, persistent on cpu', async () => {
    problem(await create({ name: 'x', image: 'i' }), 400, /exactly one/);
    problem(
      await create({ name: 'x', image: 'i', gpu: { id: GPU }, cpu: { id: 'cpu3c', vcpuCount: 2 } }),
      400,
      /exactly one/,
    );
    problem(
      await create({ name: 'x', image: 'i', gpu: { id: GPU }, allowedCudaVersions: ['12.4'], minCudaVersion: '12' }),
      400,
    );
    problem(await create({ name: 'x', image: 'i', cpu: { id: 'cpu3c', vcpuCount: 2 }, minCudaVersion: '12' }), 400);
    problem(
      await create({
        name: 'x',
        image: 'i',
        gpu: { id: GPU },
        mounts: { persistent: { size: 10, path: '/a' }, network: [{ volumeId: 'v', path: '/b' }] },
      }),
      400,
    );
    problem(
      await create({
        name: 'x',
        image: 'i',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        mounts: { persistent: { size: 10, path: '/a' } },
      }),
      400,
      /CPU pods/,
    );
  });

  test('an unknown GPU type or CPU flavor, or a vCPU count the flavor lacks, is a 400 naming it', async () => {
    problem(await create({ name: 'x', image: 'i', gpu: { id: 'NVIDIA Nope' } }), 400, /NVIDIA Nope/);
    problem(await create({ name: 'x', image: 'i', cpu: { id: 'cpu0', vcpuCount: 2 } }), 400, /cpu0/);
    problem(
      await create({ name: 'x', image: 'i', cpu: { id: 'cpu3c', vcpuCount: 6 } }),
      400,
      /valid options: 2, 4, 8, 16, 32/,
    );
  });

  test('no capacity is a 400 NO_CAPACITY whose detail is the placement reason, including a CUDA version no machine reports', async () => {
    const many = problem(await create({ name: 'x', image: 'i', gpu: { id: GPU, count: 1000 } }), 400);
    assert.equal(many.code, 'NO_CAPACITY');
    assert.ok(many.detail.length > 10);
    const cuda = problem(await create({ name: 'x', image: 'i', gpu: { id: GPU }, allowedCudaVersions: ['9.9'] }), 400);
    assert.equal(cuda.code, 'NO_CAPACITY');
  });

  test('image is required unless templateId is set', async () => {
    problem(await create({ name: 'x', gpu: { id: GPU } }), 422, /image/);
  });

  test('startSsh injects PUBLIC_KEY and startJupyter a JUPYTER_PASSWORD, neither ever returned; the user env is', async () => {
    await t.request(a.key, 'PUT', '/v2/account/ssh-keys', [sshKey]);
    const pod = await createPod({
      startSsh: true,
      startJupyter: true,
      env: { MINE: 'yes' },
      ports: ['22/tcp', '8888/http'],
    });
    assert.deepEqual(pod.env, { MINE: 'yes' });
    const stored = (await t.services.pods.store.get(pod.id))!;
    assert.equal(stored.hiddenEnv.PUBLIC_KEY, sshKey);
    assert.match(stored.hiddenEnv.JUPYTER_PASSWORD ?? '', /^[A-Za-z0-9_-]{16,}$/);
    await waitForStatus(pod.id, 'RUNNING');
    for (const res of [await get(pod.id), await t.request(a.key, 'GET', '/v2/pods')]) {
      assert.ok(
        !res.body.includes('JUPYTER_PASSWORD') &&
          !res.body.includes('PUBLIC_KEY') &&
          !res.body.includes(stored.hiddenEnv.JUPYTER_PASSWORD!),
        'an injected secret leaked',
      );
      assert.ok(!res.body.includes('startSsh') && !res.body.includes('startJupyter'));
    }
  });

  test('a PUBLIC_KEY or JUPYTER_PASSWORD the request sets is kept, not replaced, and is returned as user env', async () => {
    const pod = await createPod({
      startSsh: true,
      startJupyter: true,
      env: { PUBLIC_KEY: 'k', JUPYTER_PASSWORD: 'p' },
    });
    assert.deepEqual(pod.env, { PUBLIC_KEY: 'k', JUPYTER_PASSWORD: 'p' });
    assert.deepEqual((await t.services.pods.store.get(pod.id))!.hiddenEnv, {});
  });

  test('startSsh without registered keys has no effect', async () => {
    const pod = await createPod({ startSsh: true }, b.key);
    assert.deepEqual((await t.services.pods.store.get(pod.id))!.hiddenEnv, {});
  });

  test('a template supplies the settings, the body overrides them, env merges, and the pod keeps no link to it', async () => {
    const tpl = await t.services.templates.create(a.accountId, {
      name: 'tpl',
      imageName: 'tpl/image:2',
      args: 'serve',
      containerDiskInGb: 33,
      volumeInGb: 15,
      volumeMountPath: '/data',
      ports: ['8888/http'],
      env: { A: 'tpl', B: 'tpl' },
      startJupyter: true,
    });
    const pod = await createPod({ image: undefined, templateId: tpl.id, env: { B: 'body' } });
    assert.equal(pod.image, 'tpl/image:2');
    assert.equal(pod.args, 'serve');
    assert.equal(pod.disk, 33);
    assert.deepEqual(pod.ports, ['8888/http']);
    assert.deepEqual(pod.env, { A: 'tpl', B: 'body' });
    assert.deepEqual(pod.mounts, { persistent: { size: 15, path: '/data' } });
    assert.equal(pod.template, null);
    assert.equal((await t.services.pods.store.get(pod.id))!.templateId, null);
    assert.ok((await t.services.pods.store.get(pod.id))!.hiddenEnv.JUPYTER_PASSWORD);
    // a CPU pod does not inherit the persistent mount
    const cpuPod = await createPod({
      gpu: undefined,
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      image: undefined,
      templateId: tpl.id,
    });
    assert.deepEqual(cpuPod.mounts, {});
  });

  test('a template created over REST v2 (image, disk, mounts, startSsh and startJupyter defaults) resolves into the pod', async () => {
    const res = await t.request(a.key, 'POST', '/v2/templates', {
      name: 'v2-tpl',
      image: 'tpl/image:3',
      disk: 21,
      mounts: { persistent: { size: 12, path: '/models' } },
      ports: ['8888/http', '22/tcp'],
      env: { FROM: 'template' },
    });
    assert.equal(res.statusCode, 201, res.body);
    const tpl = json(res);
    assert.equal(tpl.startSsh && tpl.startJupyter, true);
    await t.request(a.key, 'PUT', '/v2/account/ssh-keys', { keys: [sshKey] });
    const pod = await createPod({ image: undefined, templateId: tpl.id });
    assert.equal(pod.image, 'tpl/image:3');
    assert.equal(pod.disk, 21);
    assert.deepEqual(pod.mounts, { persistent: { size: 12, path: '/models' } });
    assert.deepEqual(pod.env, { FROM: 'template' });
    const hidden = (await t.services.pods.store.get(pod.id))!.hiddenEnv;
    assert.equal(hidden.PUBLIC_KEY, sshKey);
    assert.ok(hidden.JUPYTER_PASSWORD);
  });

  test("an unknown or another account's template is a 404; a serverless template is a 422", async () => {
    problem(await create({ name: 'x', gpu: { id: GPU }, templateId: 'nosuchtemplate' }), 404);
    const other = await t.services.templates.create(b.accountId, { name: 'b-tpl', imageName: 'b:1' });
    problem(await create({ name: 'x', gpu: { id: GPU }, templateId: other.id }), 404);
    const sls = await t.services.templates.create(a.accountId, { name: 'sls', imageName: 's:1', isServerless: true });
    problem(await create({ name: 'x', gpu: { id: GPU }, templateId: sls.id }), 422);
  });

  test("a registry that is not the caller's is a 400 UNKNOWN_REFERENCE; the caller's own is accepted", async () => {
    const theirs = await t.services.registries.create(b.accountId, { name: 'r', username: 'u', password: 'p' });
    assert.equal(
      problem(await create({ name: 'x', image: 'i', gpu: { id: GPU }, registry: theirs.id }), 400).code,
      'UNKNOWN_REFERENCE',
    );
    const mine = await t.services.registries.create(a.accountId, { name: 'r', username: 'u', password: 'p' });
    assert.equal((await createPod({ registry: mine.id })).registry, mine.id);
  });

  test("a network volume must be the caller's, and the pod is placed in the volume's data center", async () => {
    const theirs = await t.services.volumes.create(b.accountId, { name: 'v', size: 10, dataCenterId: 'EU-RO-1' });
    assert.equal(
      problem(
        await create({
          name: 'x',
          image: 'i',
          gpu: { id: 'NVIDIA L40S' },
          mounts: { network: [{ volumeId: theirs.id, path: '/v' }] },
        }),
        400,
      ).code,
      'UNKNOWN_REFERENCE',
    );
    const mine = await t.services.volumes.create(a.accountId, { name: 'v', size: 10, dataCenterId: 'EU-RO-1' });
    const cpuPod = await createPod({
      gpu: undefined,
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      cloud: 'COMMUNITY',
      mounts: { network: [{ volumeId: mine.id, path: '/v' }] },
    });
    assert.equal(cpuPod.dataCenterId, 'EU-RO-1');
    assert.deepEqual(cpuPod.mounts, { network: [{ volumeId: mine.id, path: '/v' }] });
    // the 4090s are all in US-TX-3: nothing can be placed next to the volume
    assert.equal(
      problem(
        await create({
          name: 'x',
          image: 'i',
          gpu: { id: GPU },
          mounts: { network: [{ volumeId: mine.id, path: '/v' }] },
        }),
        400,
      ).code,
      'NO_CAPACITY',
    );
  });

  test('global networking assigns the lowest free pool address and an internal DNS name; an unsupported GPU type cannot have it', async () => {
    const pod = await createPod({ globalNetworking: true });
    assert.equal(pod.globalNetworking.enabled, true);
    assert.match(pod.globalNetworking.ip, /^10\.200\.\d+\.\d+$/);
    assert.equal(pod.globalNetworking.internalDns, `${pod.id}.gantry.internal`);
    const second = await createPod({ globalNetworking: true });
    assert.notEqual(second.globalNetworking.ip, pod.globalNetworking.ip);
    assert.equal(
      problem(await create({ name: 'x', image: 'i', gpu: { id: 'NVIDIA RTX A5000' }, globalNetworking: true }), 400)
        .code,
      'NO_CAPACITY',
    );
    // terminating releases the address for the next pod
    assert.equal((await t.request(a.key, 'DELETE', `/v2/pods/${second.id}`)).statusCode, 204);
    const third = await createPod({ globalNetworking: true });
    assert.equal(third.globalNetworking.ip, second.globalNetworking.ip);
  });

  test('PATCH globalNetworking equal to the pod’s own is accepted; the other value answers 400 GLOBAL_NETWORKING_FIXED and changes nothing', async () => {
    const on = await createPod({ globalNetworking: true });
    const off = await createPod({});
    const same = await t.request(a.key, 'PATCH', `/v2/pods/${on.id}`, { globalNetworking: true, name: 'kept-on' });
    assert.equal(same.statusCode, 200, same.body);
    assert.deepEqual(json(same).globalNetworking, on.globalNetworking);
    assert.equal(json(same).name, 'kept-on');
    for (const [pod, value] of [
      [on, false],
      [off, true],
    ] as const) {
      const refused = problem(
        await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { globalNetworking: value, name: 'changed' }),
        400,
        /globalNetworking is fixed when a pod is created/,
      );
      assert.equal(refused.code, 'GLOBAL_NETWORKING_FIXED');
      const after = json(await t.request(a.key, 'GET', `/v2/pods/${pod.id}`));
      assert.deepEqual(after.globalNetworking, pod.globalNetworking);
      assert.notEqual(after.name, 'changed');
    }
    problem(await t.request(a.key, 'PATCH', `/v2/pods/${off.id}`, { globalNetworking: 'yes' }), 422);
  });
});

describe('read', () => {
  test('a RUNNING pod shows a runtime, startedAt, and ssh.direct only when 22/tcp is published', async () => {
    const withSsh = await createPod({ ports: ['22/tcp', '8888/http'] });
    const noSsh = await createPod({ ports: ['8888/http'] });
    const running = await waitForStatus(withSsh.id, 'RUNNING');
    assert.ok(running.startedAt);
    assert.equal(typeof running.runtime.uptime, 'number');
    assert.equal(running.runtime.ports.length, 2);
    assert.deepEqual(running.runtime.gpus, [], 'the demo fleet declares its GPUs: no figures are invented for them');
    const port22 = running.runtime.ports.find((p: any) => p.private === 22);
    assert.equal(port22.type, 'tcp');
    assert.equal(running.ssh.direct.port, port22.public);
    assert.equal(running.ssh.direct.username, 'root');
    assert.equal(running.ssh.direct.command, `ssh root@${running.ssh.direct.host} -p ${port22.public}`);
    assert.equal(running.ssh.proxy, null);
    assert.equal((await waitForStatus(noSsh.id, 'RUNNING')).ssh.direct, null);
  });

  test('lists hide TERMINATED and cluster pods by default and filter by status, name, GPU type and data center', async () => {
    const acct = await t.newAccount();
    const gpuPod = await createPod({ name: 'alpha' }, acct.key);
    const cpuPod = await createPod(
      {
        name: 'beta',
        gpu: undefined,
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        dataCenterIds: ['EU-RO-1'],
        cloud: 'COMMUNITY',
      },
      acct.key,
    );
    const gone = await createPod({ name: 'gone' }, acct.key);
    const member = await createPod({ name: 'member' }, acct.key);
    await t.services.pods.store.update(member.id, { cluster: 'cl1' });
    assert.equal((await t.request(acct.key, 'DELETE', `/v2/pods/${gone.id}`)).statusCode, 204);
    const ids = async (qs = '') =>
      json(await t.request(acct.key, 'GET', `/v2/pods${qs}`))
        .pods.map((p: any) => p.id)
        .sort();
    assert.deepEqual(await ids(), [gpuPod.id, cpuPod.id].sort());
    assert.deepEqual(await ids('?includeTerminated=true'), [gpuPod.id, cpuPod.id, gone.id].sort());
    assert.deepEqual(await ids('?includeClusterPods=true'), [gpuPod.id, cpuPod.id, member.id].sort());
    assert.deepEqual(await ids('?name=beta'), [cpuPod.id]);
    assert.deepEqual(await ids(`?gpuTypeId=${encodeURIComponent(GPU)}`), [gpuPod.id]);
    assert.deepEqual(await ids('?dataCenterId=EU-RO-1'), [cpuPod.id]);
    assert.deepEqual(await ids('?status=TERMINATED'), [gone.id]);
    problem(await t.request(acct.key, 'GET', '/v2/pods?status=SLEEPING'), 400);
  });

  test('an unknown pod id is a 404', async () => {
    problem(await get('nosuchpod'), 404);
  });

  test("account B gets 404 on A's pod for GET, PATCH, action and DELETE, and A's pod is untouched", async () => {
    const pod = await createPod({ name: 'private' });
    problem(await get(pod.id, b.key), 404);
    problem(await t.request(b.key, 'PATCH', `/v2/pods/${pod.id}`, { name: 'stolen' }), 404);
    problem(await t.request(b.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'terminate' }), 404);
    problem(await t.request(b.key, 'DELETE', `/v2/pods/${pod.id}`), 404);
    const own = json(await get(pod.id));
    assert.equal(own.name, 'private');
    assert.notEqual(own.status, 'TERMINATED');
  });

  test('a read-scope key can read pods but not create them', async () => {
    problem(await create({ name: 'x', image: 'i', gpu: { id: GPU } }, a.readKey), 403);
    assert.equal((await t.request(a.readKey, 'GET', '/v2/pods')).statusCode, 200);
  });
});

describe('actions', () => {
  test('stop answers 200 EXITED with cost 0 and the CUDA version kept; start brings it back to RUNNING', async () => {
    const pod = await createPod();
    await waitForStatus(pod.id, 'RUNNING');
    const stop = await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'stop' });
    assert.equal(stop.statusCode, 200, stop.body);
    const stopped = json(stop);
    assert.equal(stopped.status, 'EXITED');
    assert.equal(stopped.cost, 0);
    assert.equal(stopped.cudaVersion, '12.4');
    assert.equal(stopped.runtime, null);
    assert.equal(stopped.statusReason, 'stopped by user');
    assert.deepEqual(stopped.actions, ['start', 'terminate']);
    const again = json(await get(pod.id));
    assert.equal(again.cost, 0);
    assert.equal(again.cudaVersion, '12.4');
    const start = await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'start' });
    assert.equal(start.statusCode, 200, start.body);
    const running = await waitForStatus(pod.id, 'RUNNING');
    assert.equal(running.cost, 0.69);
  });

  test('actions the status does not allow are 409; an unknown action is 422', async () => {
    const pod = await createPod();
    await waitForStatus(pod.id, 'RUNNING');
    problem(await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'start' }), 409);
    problem(await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'explode' }), 422);
    await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'stop' });
    problem(await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'stop' }), 409);
    problem(await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'restart' }), 409);
  });

  test('a locked pod refuses stop and restart with 409, lists neither, and can still be terminated', async () => {
    const pod = await createPod();
    await waitForStatus(pod.id, 'RUNNING');
    const locked = json(await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { locked: true }));
    assert.equal(locked.locked, true);
    assert.deepEqual(locked.actions, ['terminate']);
    assert.equal(
      problem(await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'stop' }), 409).code,
      'POD_LOCKED',
    );
    assert.equal(
      problem(await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'restart' }), 409).code,
      'POD_LOCKED',
    );
    assert.equal(
      (await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'terminate' })).statusCode,
      204,
    );
  });

  test('terminate (action or DELETE) answers 204; the pod is TERMINATED with cost 0 and then accepts no action', async () => {
    const pod = await createPod();
    const res = await t.request(a.key, 'DELETE', `/v2/pods/${pod.id}`);
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, '');
    const gone = json(await get(pod.id));
    assert.equal(gone.status, 'TERMINATED');
    assert.equal(gone.cost, 0);
    assert.deepEqual(gone.actions, []);
    assert.equal(gone.runtime, null);
    problem(await t.request(a.key, 'DELETE', `/v2/pods/${pod.id}`), 409);
    problem(await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { name: 'zombie' }), 409);
  });

  test('a cluster member pod cannot be modified, acted on or deleted through the pod endpoints', async () => {
    const pod = await createPod();
    await t.services.pods.store.update(pod.id, { cluster: 'cl9' });
    problem(await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { name: 'x' }), 409, /cluster/);
    problem(await t.request(a.key, 'DELETE', `/v2/pods/${pod.id}`), 409, /cluster/);
    problem(await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'stop' }), 409, /cluster/);
  });
});

describe('PATCH', () => {
  test('name and locked change without restarting the instance', async () => {
    const pod = await createPod();
    const running = await waitForStatus(pod.id, 'RUNNING');
    const res = await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { name: 'renamed', locked: true });
    assert.equal(res.statusCode, 200, res.body);
    const patched = json(res);
    assert.equal(patched.name, 'renamed');
    assert.equal(patched.status, 'RUNNING');
    assert.equal(patched.startedAt, running.startedAt);
  });

  test('image, env and ports changes restart a RUNNING pod so they take effect; new ports get public ports', async () => {
    const pod = await createPod({ env: { A: '1', B: '2' }, ports: ['8888/http'] });
    const before = await waitForStatus(pod.id, 'RUNNING');
    const kept = before.runtime.ports[0].public;
    const res = await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, {
      image: 'ubuntu:24.04',
      env: { C: '3' },
      ports: ['8888/http', '22/tcp'],
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(json(res).status, 'STARTING');
    const after = await waitForStatus(pod.id, 'RUNNING');
    assert.equal(after.image, 'ubuntu:24.04');
    assert.deepEqual(after.env, { C: '3' });
    assert.deepEqual(after.ports, ['8888/http', '22/tcp']);
    assert.equal(after.runtime.ports.find((p: any) => p.private === 8888).public, kept);
    assert.ok(after.ssh.direct, 'the new 22/tcp port is published');
  });

  test('mount rules: {} leaves the mount; network [] and a new mount kind are 400; path changes; partial entries are 422', async () => {
    const pod = await createPod({ mounts: { persistent: { size: 10, path: '/workspace' } } });
    assert.deepEqual(json(await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { mounts: {} })).mounts, {
      persistent: { size: 10, path: '/workspace' },
    });
    problem(await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { mounts: { network: [] } }), 400);
    problem(
      await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { mounts: { network: [{ volumeId: 'v', path: '/n' }] } }),
      400,
    );
    problem(await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { mounts: { persistent: { path: '/other' } } }), 422);
    const moved = json(
      await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { mounts: { persistent: { size: 10, path: '/other' } } }),
    );
    assert.deepEqual(moved.mounts, { persistent: { size: 10, path: '/other' } });
    const bare = await createPod();
    problem(
      await t.request(a.key, 'PATCH', `/v2/pods/${bare.id}`, { mounts: { persistent: { size: 10, path: '/w' } } }),
      400,
      /without a mount/,
    );
  });

  test('a network volume cannot be swapped for another, but its path can change', async () => {
    const vol = await t.services.volumes.create(a.accountId, { name: 'v', size: 10, dataCenterId: 'US-TX-3' });
    const pod = await createPod({ mounts: { network: [{ volumeId: vol.id, path: '/data' }] } });
    problem(
      await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, {
        mounts: { network: [{ volumeId: 'othervol', path: '/data' }] },
      }),
      400,
      /cannot change/,
    );
    const moved = json(
      await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, {
        mounts: { network: [{ volumeId: vol.id, path: '/mnt' }] },
      }),
    );
    assert.deepEqual(moved.mounts, { network: [{ volumeId: vol.id, path: '/mnt' }] });
  });

  test('startSsh, startJupyter, CUDA fields, gpu and unknown fields are not patchable (422)', async () => {
    const pod = await createPod();
    for (const body of [
      { startSsh: true },
      { startJupyter: true },
      { minCudaVersion: '12' },
      { allowedCudaVersions: ['12.4'] },
      { gpu: { id: GPU } },
      { colour: 1 },
    ]) {
      problem(await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, body), 422);
    }
  });

  test('templateId in a PATCH applies the template settings as body fields', async () => {
    const tpl = await t.services.templates.create(a.accountId, {
      name: 'patch-tpl',
      imageName: 'tpl/patched:1',
      args: 'go',
      env: { T: 'tpl' },
    });
    const pod = await createPod({ env: { MINE: '1' } });
    const patched = json(await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { templateId: tpl.id }));
    assert.equal(patched.image, 'tpl/patched:1');
    assert.equal(patched.args, 'go');
    assert.deepEqual(patched.env, { MINE: '1', T: 'tpl' });
    problem(await t.request(a.key, 'PATCH', `/v2/pods/${pod.id}`, { templateId: 'nosuchtemplate' }), 404);
  });
});

describe('usage', () => {
  test('usage accrues hours × rate while RUNNING and stops accruing once the pod is stopped', async () => {
    const pod = await createPod();
    await waitForStatus(pod.id, 'RUNNING');
    clock.advance(2 * 3_600_000);
    const running = await t.services.pods.usage(a.accountId, pod.id);
    assert.ok(Math.abs(running.hours - 2) < 1e-6, String(running.hours));
    assert.ok(Math.abs(running.cost - 1.38) < 1e-6, String(running.cost));
    await t.request(a.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'stop' });
    clock.advance(5 * 3_600_000);
    const stopped = await t.services.pods.usage(a.accountId, pod.id);
    assert.ok(Math.abs(stopped.hours - 2) < 1e-6, String(stopped.hours));
    await assert.rejects(t.services.pods.usage(b.accountId, pod.id), /No pod/);
  });
});
