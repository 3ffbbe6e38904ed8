import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultCatalog } from '../domain/catalog.js';
import { ApiError } from '../domain/errors.js';
import {
  applyMountPatch,
  injectedEnv,
  resolveCreate,
  type CreatePodInput,
  type TemplateDefaults,
} from './pod-rules.js';

const catalog = defaultCatalog();
const gpu = { id: 'NVIDIA GeForce RTX 4090' };
const cpu = { id: 'cpu3c', vcpuCount: 4 };

const template: TemplateDefaults = {
  image: 'tpl/image:1',
  args: 'serve --tpl',
  disk: 50,
  ports: ['8888/http', '22/tcp'],
  env: { A: 'template', B: 'template' },
  registry: 'reg-tpl',
  volumeInGb: 30,
  volumeMountPath: '/workspace',
  startSsh: true,
  startJupyter: true,
  allowedCudaVersions: ['12.4'],
};

const fails = (fn: () => unknown, code: ApiError['code'], status: number, detail?: RegExp): void => {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, code);
    assert.equal(err.status, status);
    if (detail) assert.match(err.detail, detail);
    return true;
  });
};

const create = (body: Partial<CreatePodInput>, tpl: TemplateDefaults | null = null) =>
  resolveCreate({ name: 'p', image: 'img', ...body }, tpl, catalog);

test('rule 1: exactly one of gpu or cpu — both or neither is a 400', () => {
  fails(() => create({}), 'GPU_OR_CPU_REQUIRED', 400);
  fails(() => create({ gpu, cpu }), 'GPU_OR_CPU_REQUIRED', 400);
  assert.equal(create({ gpu }).compute.kind, 'gpu');
  assert.equal(create({ cpu }).compute.kind, 'cpu');
});

test('rule 2: CPU memory is vcpuCount × the flavor RAM multiplier and a persistent mount is refused on a CPU pod', () => {
  assert.deepEqual(create({ cpu: { id: 'cpu3m', vcpuCount: 8 } }).compute, {
    kind: 'cpu',
    flavorId: 'cpu3m',
    vcpuCount: 8,
    memoryGb: 64,
  });
  fails(() => create({ cpu, mounts: { persistent: { size: 10, path: '/data' } } }), 'MOUNT_RULE', 400, /CPU pods/);
  assert.deepEqual(create({ cpu, mounts: { network: [{ volumeId: 'v1', path: '/data' }] } }).mounts, {
    network: [{ volumeId: 'v1', path: '/data' }],
  });
});

test('vcpuCount must be a power of two the flavor offers; the 400 names the valid options', () => {
  fails(() => create({ cpu: { id: 'cpu3c', vcpuCount: 6 } }), 'BAD_REQUEST', 400, /valid options: 2, 4, 8, 16, 32/);
  fails(() => create({ cpu: { id: 'cpu3m', vcpuCount: 32 } }), 'BAD_REQUEST', 400, /valid options: 2, 4, 8, 16\./);
});

test('an unknown GPU type or CPU flavor is a 400 naming it', () => {
  fails(() => create({ gpu: { id: 'NVIDIA Imaginary' } }), 'UNKNOWN_REFERENCE', 400, /NVIDIA Imaginary/);
  fails(() => create({ cpu: { id: 'cpu9z', vcpuCount: 2 } }), 'UNKNOWN_REFERENCE', 400, /cpu9z/);
});

test('rule 3: both CUDA fields is a 400, either with cpu is a 400', () => {
  fails(() => create({ gpu, allowedCudaVersions: ['12.4'], minCudaVersion: '12' }), 'CUDA_CONSTRAINT_CONFLICT', 400);
  fails(() => create({ cpu, allowedCudaVersions: ['12.4'] }), 'CUDA_CONSTRAINT_ON_CPU', 400);
  fails(() => create({ cpu, minCudaVersion: '12.1' }), 'CUDA_CONSTRAINT_ON_CPU', 400);
  const s = create({ gpu, minCudaVersion: '12.1' });
  assert.equal(s.minCudaVersion, '12.1');
  assert.deepEqual(s.allowedCudaVersions, []);
});

test('defaults: gpu count 1, no minimum vCPUs or memory, disk 20, cloud SECURE, no mounts, empty env and ports', () => {
  const s = create({ gpu });
  assert.deepEqual(s.compute, { kind: 'gpu', gpuTypeId: gpu.id, count: 1, minVcpus: 0, minMemoryGb: 0 });
  assert.equal(s.disk, 20);
  assert.equal(s.cloud, 'SECURE');
  assert.deepEqual(s.mounts, {});
  assert.deepEqual(s.env, {});
  assert.deepEqual(s.ports, []);
  assert.equal(s.registry, null);
  assert.equal(s.globalNetworking, false);
});

test("a GPU pod's minimum vCPUs and memory are kept; a CPU pod ignores them; a negative or fractional one is a 400", () => {
  const s = create({ gpu, minVcpuCount: 12, minMemoryInGb: 100 });
  assert.deepEqual(s.compute, { kind: 'gpu', gpuTypeId: gpu.id, count: 1, minVcpus: 12, minMemoryGb: 100 });
  const cpu = create({ cpu: { id: 'cpu3c', vcpuCount: 2 }, minVcpuCount: 12 });
  assert.deepEqual(cpu.compute, { kind: 'cpu', flavorId: 'cpu3c', vcpuCount: 2, memoryGb: 4 });
  for (const bad of [{ minVcpuCount: -1 }, { minMemoryInGb: 1.5 }, { minVcpuCount: 5000 }])
    fails(() => create({ gpu, ...bad }), 'BAD_REQUEST', 400);
});

test('2.3: both persistent and network mounts is a 400', () => {
  fails(
    () => create({ gpu, mounts: { persistent: { size: 10, path: '/a' }, network: [{ volumeId: 'v', path: '/b' }] } }),
    'MOUNT_CONFLICT',
    400,
  );
});

test('image is required unless templateId is set (422)', () => {
  fails(() => resolveCreate({ name: 'p', gpu }, null, catalog), 'VALIDATION_FAILED', 422, /image/);
});

test('rule 4: the template supplies image, args, disk, ports, env, registry, persistent mount, startSsh, startJupyter and CUDA versions', () => {
  const s = resolveCreate({ name: 'p', gpu, templateId: 't' }, template, catalog);
  assert.equal(s.image, 'tpl/image:1');
  assert.equal(s.args, 'serve --tpl');
  assert.equal(s.disk, 50);
  assert.deepEqual(s.ports, ['8888/http', '22/tcp']);
  assert.deepEqual(s.env, { A: 'template', B: 'template' });
  assert.equal(s.registry, 'reg-tpl');
  assert.deepEqual(s.mounts, { persistent: { size: 30, path: '/workspace' } });
  assert.equal(s.startSsh, true);
  assert.equal(s.startJupyter, true);
  assert.deepEqual(s.allowedCudaVersions, ['12.4']);
});

test('rule 4: body fields override the template and env merges per key with the body winning', () => {
  const s = resolveCreate(
    {
      name: 'p',
      gpu,
      templateId: 't',
      image: 'mine',
      args: '',
      disk: 7,
      ports: ['80/http'],
      env: { B: 'body', C: 'body' },
      registry: null,
      startSsh: false,
      mounts: { network: [{ volumeId: 'v', path: '/n' }] },
    },
    template,
    catalog,
  );
  assert.equal(s.image, 'mine');
  assert.equal(s.args, '');
  assert.equal(s.disk, 7);
  assert.deepEqual(s.ports, ['80/http']);
  assert.deepEqual(s.env, { A: 'template', B: 'body', C: 'body' });
  assert.equal(s.registry, null);
  assert.equal(s.startSsh, false);
  assert.deepEqual(s.mounts, { network: [{ volumeId: 'v', path: '/n' }] });
});

test('rule 4: sending either CUDA field replaces the template CUDA constraint entirely', () => {
  const withMin = resolveCreate({ name: 'p', gpu, templateId: 't', minCudaVersion: '11' }, template, catalog);
  assert.deepEqual(withMin.allowedCudaVersions, []);
  assert.equal(withMin.minCudaVersion, '11');
  const withAllowed = resolveCreate(
    { name: 'p', gpu, templateId: 't', allowedCudaVersions: ['12.8'] },
    template,
    catalog,
  );
  assert.deepEqual(withAllowed.allowedCudaVersions, ['12.8']);
});

test('rule 4: a CPU pod ignores the template CUDA constraint and does not inherit its persistent mount', () => {
  const s = resolveCreate({ name: 'p', cpu, templateId: 't' }, template, catalog);
  assert.deepEqual(s.allowedCudaVersions, []);
  assert.equal(s.minCudaVersion, null);
  assert.deepEqual(s.mounts, {});
});

test('ports must be <port>/<protocol> with a real port number, each port once', () => {
  fails(() => create({ gpu, ports: ['70000/tcp'] }), 'BAD_REQUEST', 400, /70000/);
  fails(() => create({ gpu, ports: ['80/http', '80/tcp'] }), 'BAD_REQUEST', 400, /twice/);
});

test('rule 5: startSsh injects PUBLIC_KEY from the account keys unless env sets one; without keys it does nothing', () => {
  const pw = () => 'pw';
  assert.deepEqual(injectedEnv({ env: {}, startSsh: true, startJupyter: false }, ['k1', 'k2'], pw), {
    PUBLIC_KEY: 'k1\nk2',
  });
  assert.deepEqual(injectedEnv({ env: { PUBLIC_KEY: 'mine' }, startSsh: true, startJupyter: false }, ['k1'], pw), {});
  assert.deepEqual(injectedEnv({ env: {}, startSsh: true, startJupyter: false }, [], pw), {});
  assert.deepEqual(injectedEnv({ env: {}, startSsh: false, startJupyter: false }, ['k1'], pw), {});
});

test('rule 6: startJupyter injects a generated JUPYTER_PASSWORD unless env sets one', () => {
  assert.deepEqual(
    injectedEnv({ env: {}, startSsh: false, startJupyter: true }, [], () => 'generated'),
    { JUPYTER_PASSWORD: 'generated' },
  );
  assert.deepEqual(
    injectedEnv({ env: { JUPYTER_PASSWORD: 'x' }, startSsh: false, startJupyter: true }, [], () => 'generated'),
    {},
  );
});

const persistent = { persistent: { size: 20, path: '/workspace' } };
const network = { network: [{ volumeId: 'vol1', path: '/data' }] };

test('PATCH: omitting mounts or sending {} leaves the mount unchanged', () => {
  assert.equal(applyMountPatch(persistent, undefined), persistent);
  assert.equal(applyMountPatch(network, {}), network);
  assert.deepEqual(applyMountPatch({}, {}), {});
});

test('PATCH: network [] is a 400', () => {
  fails(() => applyMountPatch(network, { network: [] }), 'MOUNT_RULE', 400);
  fails(() => applyMountPatch({}, { network: [] }), 'MOUNT_RULE', 400);
});

test('PATCH: the mount kind is fixed at create — adding a kind or any mount to a pod without one is a 400', () => {
  fails(() => applyMountPatch(persistent, { network: [{ volumeId: 'vol1', path: '/x' }] }), 'MOUNT_RULE', 400);
  fails(() => applyMountPatch(network, { persistent: { size: 20, path: '/x' } }), 'MOUNT_RULE', 400);
  fails(() => applyMountPatch({}, { persistent: { size: 20, path: '/x' } }), 'MOUNT_RULE', 400, /without a mount/);
  fails(
    () => applyMountPatch({}, { network: [{ volumeId: 'vol1', path: '/x' }] }),
    'MOUNT_RULE',
    400,
    /without a mount/,
  );
  fails(
    () =>
      applyMountPatch(persistent, { persistent: { size: 20, path: '/a' }, network: [{ volumeId: 'v', path: '/b' }] }),
    'MOUNT_CONFLICT',
    400,
  );
});

test('PATCH: a network mount volumeId is immutable and its path changes', () => {
  fails(() => applyMountPatch(network, { network: [{ volumeId: 'vol2', path: '/data' }] }), 'MOUNT_RULE', 400, /vol1/);
  assert.deepEqual(applyMountPatch(network, { network: [{ volumeId: 'vol1', path: '/elsewhere' }] }), {
    network: [{ volumeId: 'vol1', path: '/elsewhere' }],
  });
});

test('PATCH: a persistent mount path changes, its size does not', () => {
  assert.deepEqual(applyMountPatch(persistent, { persistent: { size: 20, path: '/new' } }), {
    persistent: { size: 20, path: '/new' },
  });
  fails(() => applyMountPatch(persistent, { persistent: { size: 40, path: '/new' } }), 'MOUNT_RULE', 400, /size/);
});

test("a mount over the container's system folders is refused at create, from the body or from the template, naming the field", () => {
  const base: CreatePodInput = { name: 'p', image: 'i', gpu };
  fails(
    () => resolveCreate({ ...base, mounts: { persistent: { size: 20, path: '//proc/' } } }, null, catalog),
    'MOUNT_RULE',
    400,
    /^mounts\.persistent\.path \(volumeMountPath\) "\/\/proc\/"/,
  );
  fails(
    () => resolveCreate({ ...base, mounts: { network: [{ volumeId: 'v', path: '/dev/shm' }] } }, null, catalog),
    'MOUNT_RULE',
    400,
    /^mounts\.network\.0\.path/,
  );
  fails(
    () => resolveCreate({ name: 'p', gpu, templateId: 't' }, { ...template, volumeMountPath: '/sys' }, catalog),
    'MOUNT_RULE',
    400,
    /\/sys/,
  );
});

test("PATCH: a mount path may move, but not onto the container's system folders", () => {
  fails(() => applyMountPatch(persistent, { persistent: { size: 20, path: '/./dev' } }), 'MOUNT_RULE', 400, /\/dev/);
  fails(
    () => applyMountPatch(network, { network: [{ volumeId: 'vol1', path: '/data/../proc' }] }),
    'MOUNT_RULE',
    400,
    /mounts\.network\.0\.path/,
  );
  fails(() => applyMountPatch(persistent, { persistent: { size: 20, path: '/' } }), 'MOUNT_RULE', 400, /root/);
});
