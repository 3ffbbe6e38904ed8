/**
 * What a hostile tenant sends a container runtime (image, args, env, mount paths, ids of volumes,
 * ports) must never reach the host: the container the Docker runtime plans is never privileged,
 * mounts no host path, adds no capability, uses no host namespace but the network a loopback job
 * URL needs, and holds process, CPU, memory, /dev/shm and open-files limits. Checked on the pure
 * plan (no engine needed); test/tenant-matrix-allotment.test.ts plays the memory limit on an engine.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CONTAINER_PIDS_LIMIT,
  DROPPED_CAPABILITIES,
  planContainer,
  SECURITY_OPTIONS,
  type ContainerContext,
} from '../src/runtime/docker/container-config.js';
import { instanceSpec } from '../src/runtime/runtime-contract.js';
import type { InstanceSpec } from '../src/runtime/runtime.js';

const ctx: ContainerContext = {
  namespace: 'tm',
  host: { publicIp: '203.0.113.7', gpuUuids: ['GPU-a', 'GPU-b'], gpuMode: 'nvidia' },
  bindIp: '127.0.0.1',
  diskLimit: false,
  engineCpus: 2,
  openFiles: 65_536,
  logMaxBytes: 1024,
  // what the runtime passes: the account's own network (instance-networks.ts)
  network: { name: 'gantry-tm-acct-acct-evil', fixedIp: false },
  hardening: true,
};

const hostile: Partial<InstanceSpec>[] = [
  { args: '--privileged -v /:/host --cap-add SYS_ADMIN --pid=host' },
  {
    env: {
      DOCKER_HOST: 'unix:///var/run/docker.sock',
      LD_PRELOAD: '/tmp/x.so',
      NVIDIA_VISIBLE_DEVICES: 'all',
      RUNPOD_POD_ID: 'other-pod',
      __proto__: 'x',
    },
  },
  {
    volumes: [
      { kind: 'persistent', path: '/var/run/docker.sock' },
      { kind: 'network', volumeId: 'nv1', path: '/host' },
    ],
  },
  { image: 'evil/image:latest --privileged', ports: [{ private: 2375, public: 20001, protocol: 'tcp' }] },
  { gpuIndices: [0], env: { CUDA_VISIBLE_DEVICES: '0,1', NVIDIA_VISIBLE_DEVICES: 'all' } },
];

test('a container planned from hostile tenant input is never privileged, mounts no host path, adds no capability and leaves its account network', () => {
  for (const overrides of hostile) {
    const plan = planContainer(instanceSpec({ owner: { kind: 'pod', accountId: 'acct-evil' }, ...overrides }), ctx);
    const host = plan.body.HostConfig as Record<string, unknown>;
    for (const key of [
      'Privileged',
      'Binds',
      'CapAdd',
      'PidMode',
      'IpcMode',
      'UTSMode',
      'UsernsMode',
      'Devices',
      'VolumesFrom',
      'CgroupParent',
    ])
      assert.equal(host[key], undefined, `${key} is never set (${JSON.stringify(overrides)})`);
    assert.equal(host.PidsLimit, CONTAINER_PIDS_LIMIT);
    assert.deepEqual(host.CapDrop, [...DROPPED_CAPABILITIES], 'no raw sockets, no device nodes');
    assert.deepEqual(
      host.SecurityOpt,
      [...SECURITY_OPTIONS],
      'no-new-privileges, and nothing that would lift a default profile',
    );
    assert.equal(host.NetworkMode, 'gantry-tm-acct-acct-evil', "a pod lives on its account's network");
    // nothing a tenant sends lifts a limit: CPUs, memory, /dev/shm within it, open files
    assert.equal(host.NanoCpus, 2e9);
    assert.equal(host.Memory, 4 * 1024 ** 3);
    assert.equal(host.ShmSize, 2 * 1024 ** 3);
    assert.deepEqual(host.Ulimits, [{ Name: 'nofile', Soft: 65_536, Hard: 65_536 }]);
    for (const mount of plan.body.HostConfig.Mounts ?? []) {
      assert.equal(mount.Type, 'volume', 'only named volumes, never a host path');
      assert.match(mount.Source, /^gantry-tm-(pod|nv)-[A-Za-z0-9_.-]+$/);
      assert.doesNotMatch(mount.Source, /\//);
    }
    const bindings = Object.values(plan.body.HostConfig.PortBindings ?? {}).flat();
    for (const b of bindings) assert.equal(b.HostIp, '127.0.0.1', 'ports bind where the operator said');
  }
});

test('a volume id that could name something else on the engine is refused, not mounted', () => {
  for (const volumeId of ['../../etc', '/var/lib/docker', 'a b', 'x:y'])
    assert.throws(
      () => planContainer(instanceSpec({ volumes: [{ kind: 'network', volumeId, path: '/data' }] }), ctx),
      /cannot be part of a Docker name/,
      volumeId,
    );
});

test('a tenant cannot override the GPUs, identity or public address a container is given', () => {
  const plan = planContainer(
    instanceSpec({
      id: 'pod1',
      gpuIndices: [1],
      env: {
        CUDA_VISIBLE_DEVICES: '0,1',
        NVIDIA_VISIBLE_DEVICES: 'all',
        RUNPOD_POD_ID: 'other',
        RUNPOD_PUBLIC_IP: '10.0.0.1',
      },
    }),
    ctx,
  );
  const env = Object.fromEntries(plan.body.Env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
  assert.equal(env.NVIDIA_VISIBLE_DEVICES, 'GPU-b');
  assert.equal(env.CUDA_VISIBLE_DEVICES, 'GPU-b');
  assert.equal(env.RUNPOD_POD_ID, 'pod1');
  assert.equal(env.RUNPOD_PUBLIC_IP, '203.0.113.7');
  assert.deepEqual(
    plan.body.HostConfig.DeviceRequests,
    [{ Driver: 'nvidia', DeviceIDs: ['GPU-b'], Capabilities: [['gpu']] }],
    'only the assigned device',
  );
});
