import { test } from 'node:test';
import assert from 'node:assert/strict';
import { instanceSpec } from '../runtime-contract.js';
import type { InstanceSpec } from '../runtime.js';
import { instanceEnv } from './instance-env.js';

const spec = (overrides: Partial<InstanceSpec> = {}): InstanceSpec =>
  instanceSpec({ id: 'pod1', vcpus: 4, memoryGb: 16, ...overrides });
const ctx = {
  hostEnv: { PATH: '/usr/bin', HOME: '/home/g', SECRET_TOKEN: 'server-only' },
  instanceDir: '/data/instances/pod1',
  volumeFolders: [] as string[],
};

test('a process names its GPUs by host index and is reached on 127.0.0.1', () => {
  const env = instanceEnv(spec({ gpuIndices: [1, 3] }), ctx);
  assert.equal(env.CUDA_VISIBLE_DEVICES, '1,3');
  assert.equal(env.NVIDIA_VISIBLE_DEVICES, '1,3');
  assert.equal(env.RUNPOD_GPU_COUNT, '2');
  assert.equal(env.RUNPOD_PUBLIC_IP, '127.0.0.1');
  assert.equal(env.GANTRY_INSTANCE_DIR, '/data/instances/pod1');
  const cpu = instanceEnv(spec(), ctx);
  assert.equal(cpu.CUDA_VISIBLE_DEVICES, '');
  assert.equal(cpu.NVIDIA_VISIBLE_DEVICES, 'none');
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
  assert.equal(env.GANTRY_VOLUME_1, '/d/n');
});

test('PORT is the public port of the first binding, whatever the pod env says', () => {
  const env = instanceEnv(
    spec({
      env: { PORT: '1', GANTRY_PORT_8888: '2', RUNPOD_TCP_PORT_22: '3' },
      ports: [
        { private: 8888, public: 31001, protocol: 'http' },
        { private: 22, public: 31002, protocol: 'tcp' },
      ],
    }),
    ctx,
  );
  assert.equal(env.PORT, '31001');
  assert.equal(env.GANTRY_PORT_8888, '31001');
  assert.equal(env.RUNPOD_TCP_PORT_22, '31002');
});

test("host basics < the image's env < the tenant's < the platform's, and the process's own variables over all", () => {
  const env = instanceEnv(
    spec({
      env: { LANG: 'tenant', MODEL: 'tenant', FROM_IMAGE: 'tenant', GANTRY_INSTANCE_DIR: 'tenant' },
      platformEnv: { MODEL: 'platform' },
    }),
    {
      ...ctx,
      hostEnv: { ...ctx.hostEnv, LANG: 'C.UTF-8' },
      imageEnv: { FROM_IMAGE: 'image', LANG: 'image', ONLY_IMAGE: 'image' },
    },
  );
  assert.equal(env.LANG, 'tenant');
  assert.equal(env.ONLY_IMAGE, 'image');
  assert.equal(env.FROM_IMAGE, 'tenant');
  assert.equal(env.MODEL, 'platform');
  assert.equal(env.GANTRY_INSTANCE_DIR, '/data/instances/pod1');
});
