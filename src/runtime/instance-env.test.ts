import { test } from 'node:test';
import assert from 'node:assert/strict';
import { instanceSpec } from './runtime-contract.js';
import { layeredInstanceEnv, platformInstanceEnv } from './instance-env.js';
import type { InstanceSpec } from './runtime.js';

const spec = (overrides: Partial<InstanceSpec> = {}): InstanceSpec =>
  instanceSpec({ id: 'pod1', vcpus: 4, memoryGb: 16, ...overrides });
const cpu = { publicIp: '203.0.113.7', gpuDevices: [] };

test('an instance is told its id under both names, its vCPUs and its public IP', () => {
  const env = platformInstanceEnv(spec(), cpu);
  assert.equal(env.GANTRY_INSTANCE_ID, 'pod1');
  assert.equal(env.RUNPOD_POD_ID, 'pod1');
  assert.equal(env.RUNPOD_CPU_COUNT, '4');
  assert.equal(env.RUNPOD_PUBLIC_IP, '203.0.113.7');
});

test('a CPU instance sees no GPU: CUDA_VISIBLE_DEVICES is empty and NVIDIA_VISIBLE_DEVICES is none', () => {
  const env = platformInstanceEnv(spec(), cpu);
  assert.equal(env.CUDA_VISIBLE_DEVICES, '');
  assert.equal(env.NVIDIA_VISIBLE_DEVICES, 'none');
  assert.equal(env.RUNPOD_GPU_COUNT, '0');
});

test('a GPU instance sees the devices it is given, as given: indices or UUIDs', () => {
  const byIndex = platformInstanceEnv(spec({ gpuIndices: [1, 3] }), { ...cpu, gpuDevices: ['1', '3'] });
  assert.equal(byIndex.CUDA_VISIBLE_DEVICES, '1,3');
  assert.equal(byIndex.NVIDIA_VISIBLE_DEVICES, '1,3');
  assert.equal(byIndex.RUNPOD_GPU_COUNT, '2');
  const uuids = ['GPU-8f6d1e0c-0000-4000-8000-000000000001', 'GPU-8f6d1e0c-0000-4000-8000-000000000002'];
  const byUuid = platformInstanceEnv(spec({ gpuIndices: [0, 1] }), { ...cpu, gpuDevices: uuids });
  assert.equal(byUuid.NVIDIA_VISIBLE_DEVICES, uuids.join(','));
  assert.equal(byUuid.CUDA_VISIBLE_DEVICES, uuids.join(','));
});

test('each port binding is named by its private port, tcp ones also the RunPod way, the first binding of a port winning', () => {
  const env = platformInstanceEnv(
    spec({
      ports: [
        { private: 8888, public: 31001, protocol: 'http' },
        { private: 22, public: 31002, protocol: 'tcp' },
        { private: 8888, public: 31003, protocol: 'tcp' },
      ],
    }),
    cpu,
  );
  assert.equal(env.GANTRY_PORT_8888, '31001');
  assert.equal(env.GANTRY_PORT_22, '31002');
  assert.equal(env.RUNPOD_TCP_PORT_22, '31002');
  assert.equal(env.RUNPOD_TCP_PORT_8888, '31003');
  assert.equal(env.PORT, undefined, 'PORT is the process runtime’s own');
});

test("the platform's env is layered over the tenant's, and the platform's per-instance variables over both", () => {
  const env = layeredInstanceEnv(
    spec({
      env: { JUPYTER_PASSWORD: 'tenant', MODEL: 'm', RUNPOD_POD_ID: 'tenant', GANTRY_PORT_80: '1' },
      platformEnv: {
        JUPYTER_PASSWORD: 'generated',
        RUNPOD_SKIP_GPU_CHECK: 'true',
        RUNPOD_POD_ID: 'platform',
        CUDA_VISIBLE_DEVICES: '0,1',
      },
      ports: [{ private: 80, public: 30080, protocol: 'http' }],
    }),
    cpu,
  );
  assert.equal(env.JUPYTER_PASSWORD, 'generated');
  assert.equal(env.RUNPOD_SKIP_GPU_CHECK, 'true');
  assert.equal(env.MODEL, 'm');
  assert.equal(env.RUNPOD_POD_ID, 'pod1');
  assert.equal(env.CUDA_VISIBLE_DEVICES, '');
  assert.equal(env.GANTRY_PORT_80, '30080');
});

test('a tenant variable named __proto__ stays a variable and leaves the environment a plain object', () => {
  const tenant = JSON.parse('{"__proto__": "x", "A": "1"}') as Record<string, string>;
  const env = layeredInstanceEnv(spec({ env: tenant }), cpu);
  assert.equal(Object.getPrototypeOf(env), Object.prototype);
  assert.ok(Object.hasOwn(env, '__proto__'));
  assert.equal(env.A, '1');
});
