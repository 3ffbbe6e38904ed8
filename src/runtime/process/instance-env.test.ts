import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InstanceSpec } from '../runtime.js';
import { instanceEnv } from './instance-env.js';

const spec = (overrides: Partial<InstanceSpec> = {}): InstanceSpec => ({
  id: 'pod1',
  owner: { kind: 'pod', accountId: 'acct' },
  image: 'img',
  diskGb: 0,
  args: '',
  env: {},
  platformEnv: {},
  hostId: 'local',
  gpuIndices: [],
  vcpus: 4,
  memoryGb: 16,
  ports: [],
  volumes: [],
  ...overrides,
});
const ctx = { hostEnv: { PATH: '/usr/bin', HOME: '/home/g', SECRET_TOKEN: 'server-only' }, instanceDir: '/data/instances/pod1', volumeFolders: [] as string[] };

test('a CPU instance sees no GPU: CUDA_VISIBLE_DEVICES is empty and NVIDIA_VISIBLE_DEVICES is none', () => {
  const env = instanceEnv(spec(), ctx);
  assert.equal(env.CUDA_VISIBLE_DEVICES, '');
  assert.equal(env.NVIDIA_VISIBLE_DEVICES, 'none');
  assert.equal(env.RUNPOD_GPU_COUNT, '0');
  assert.equal(env.RUNPOD_CPU_COUNT, '4');
});

test('only basic host variables are passed on from the server', () => {
  const env = instanceEnv(spec(), ctx);
  assert.equal(env.PATH, '/usr/bin');
  assert.equal(env.HOME, '/home/g');
  assert.equal(env.SECRET_TOKEN, undefined);
});

test('without ports there is no PORT, and without a volume no volume path', () => {
  const env = instanceEnv(spec(), ctx);
  assert.equal(env.PORT, undefined);
  assert.equal(env.RUNPOD_VOLUME_PATH, undefined);
  assert.equal(env.GANTRY_VOLUME_PATH, undefined);
  assert.equal(env.GANTRY_VOLUME_0, undefined);
  assert.equal(env.GANTRY_MOUNTS, '[]');
});

test('the persistent volume is the volume path when it comes before a network one', () => {
  const env = instanceEnv(
    spec({
      volumes: [
        { path: '/workspace', kind: 'persistent' },
        { path: '/net', kind: 'network', volumeId: 'nv1' },
      ],
    }),
    { ...ctx, volumeFolders: ['/d/p', '/d/n'] },
  );
  assert.equal(env.RUNPOD_VOLUME_PATH, '/d/p');
});

test('PORT is the first binding and platform port variables win over the pod env', () => {
  const env = instanceEnv(
    spec({
      env: { PORT: '1', GANTRY_PORT_8888: '2', RUNPOD_TCP_PORT_22: '3' },
      ports: [
        { private: 8888, public: 31001, protocol: 'http' },
        { private: 22, public: 31002, protocol: 'tcp' },
        { private: 8888, public: 31003, protocol: 'tcp' },
      ],
    }),
    ctx,
  );
  assert.equal(env.PORT, '31001');
  assert.equal(env.GANTRY_PORT_8888, '31001');
  assert.equal(env.RUNPOD_TCP_PORT_22, '31002');
  assert.equal(env.RUNPOD_TCP_PORT_8888, '31003');
});

test("the platform's env is layered over the tenant's, and the runtime's own variables over both", () => {
  const env = instanceEnv(
    spec({ env: { JUPYTER_PASSWORD: 'tenant', MODEL: 'm', RUNPOD_POD_ID: 'tenant' }, platformEnv: { JUPYTER_PASSWORD: 'generated', RUNPOD_SKIP_GPU_CHECK: 'true', RUNPOD_POD_ID: 'platform' } }),
    ctx,
  );
  assert.equal(env.JUPYTER_PASSWORD, 'generated');
  assert.equal(env.RUNPOD_SKIP_GPU_CHECK, 'true');
  assert.equal(env.MODEL, 'm');
  assert.equal(env.RUNPOD_POD_ID, 'pod1');
});
