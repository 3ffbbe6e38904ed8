import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { instanceSpec } from '../runtime-contract.js';
import type { InstanceSpec } from '../runtime.js';
import {
  CONTAINER_NOFILE_LIMIT,
  SHM_SHARE_OF_MEMORY,
  SHM_WITHOUT_MEMORY_LIMIT,
  planContainer,
  type ContainerContext,
} from './container-config.js';
import { containerEnv } from './container-env.js';

const ctx = (overrides: Partial<ContainerContext> = {}): ContainerContext => ({
  namespace: 'ns1',
  host: { publicIp: '203.0.113.7', gpuUuids: ['GPU-aaa', 'GPU-bbb', 'GPU-ccc'], gpuMode: 'env-only' },
  bindIp: '0.0.0.0',
  diskLimit: true,
  engineCpus: 16,
  openFiles: CONTAINER_NOFILE_LIMIT,
  logMaxBytes: 1024,
  network: null,
  hardening: true,
  ...overrides,
});

const spec = (overrides: Partial<InstanceSpec> = {}): InstanceSpec =>
  instanceSpec({
    id: 'pod1',
    image: 'team/app:1',
    owner: { kind: 'worker', accountId: 'acc1', endpointId: 'ep1' },
    hostId: 'h1',
    ...overrides,
  });

const envOf = (body: { Env: string[] }): Record<string, string> =>
  Object.fromEntries(body.Env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));

describe('planContainer', () => {
  test('names the container after the namespace and id and labels it with its owner, host, spec hash and memory limit', () => {
    const plan = planContainer(spec(), ctx());
    assert.equal(plan.name, 'gantry-ns1-pod1');
    assert.deepEqual(plan.body.Labels, {
      'gantry.namespace': 'ns1',
      'gantry.instance': 'pod1',
      'gantry.kind': 'worker',
      'gantry.account': 'acc1',
      'gantry.endpoint': 'ep1',
      'gantry.host': 'h1',
      'gantry.spec': plan.specHash,
      'gantry.memory': String(plan.body.HostConfig.Memory),
      'gantry.hardened': '1',
    });
    assert.ok(Number(plan.body.Labels['gantry.memory']) > 0);
    assert.match(plan.specHash, /^[0-9a-f]{32}$/);
    assert.equal(plan.body.HostConfig.RestartPolicy.Name, 'no');
  });

  test('the spec hash is stable for the same spec and changes with anything the container is made from', () => {
    const base = planContainer(spec({ env: { A: '1', B: '2' } }), ctx()).specHash;
    assert.equal(planContainer(spec({ env: { B: '2', A: '1' } }), ctx()).specHash, base, 'env order does not matter');
    assert.notEqual(planContainer(spec({ env: { A: '1', B: '3' } }), ctx()).specHash, base);
    assert.notEqual(planContainer(spec({ env: { A: '1', B: '2' }, image: 'team/app:2' }), ctx()).specHash, base);
    assert.notEqual(planContainer(spec({ env: { A: '1', B: '2' }, args: '--x' }), ctx()).specHash, base);
    assert.notEqual(
      planContainer(spec({ env: { A: '1', B: '2' }, ports: [{ private: 80, public: 30080, protocol: 'http' }] }), ctx())
        .specHash,
      base,
    );
    assert.notEqual(planContainer(spec({ env: { A: '1', B: '2' }, memoryGb: 8 }), ctx()).specHash, base);
  });

  test('args are split like a shell and replace the image CMD; empty args keep it', () => {
    assert.deepEqual(planContainer(spec({ args: `serve --name "two words" 'x y'` }), ctx()).body.Cmd, [
      'serve',
      '--name',
      'two words',
      'x y',
    ]);
    assert.equal(planContainer(spec({ args: '' }), ctx()).body.Cmd, undefined);
    assert.throws(
      () => planContainer(spec({ args: 'a "b' }), ctx()),
      /cannot start image "team\/app:1": its args have an unterminated " quote/,
    );
  });

  test('an entrypoint replaces the image ENTRYPOINT with the args as the whole command, empty ones too, and is in the spec hash', () => {
    const body = planContainer(spec({ entrypoint: ['/bin/sh', '-c'], args: `'echo hi && exec sleep 1'` }), ctx()).body;
    assert.deepEqual(body.Entrypoint, ['/bin/sh', '-c']);
    assert.deepEqual(body.Cmd, ['echo hi && exec sleep 1']);
    // with an entrypoint an empty command stays empty: the engine does not bring the image's CMD back
    assert.deepEqual(planContainer(spec({ entrypoint: ['/start.sh'], args: '' }), ctx()).body.Cmd, []);
    assert.equal(planContainer(spec({ entrypoint: null, args: 'x' }), ctx()).body.Entrypoint, undefined);
    assert.notEqual(
      planContainer(spec({ entrypoint: ['/bin/sh', '-c'], args: 'x' }), ctx()).specHash,
      planContainer(spec({ args: 'x' }), ctx()).specHash,
    );
  });

  test('every binding is exposed and published on the bind address, http and tcp alike', () => {
    const plan = planContainer(
      spec({
        ports: [
          { private: 8888, public: 30001, protocol: 'http' },
          { private: 22, public: 30002, protocol: 'tcp' },
          { private: 8888, public: 30003, protocol: 'http' },
        ],
      }),
      ctx({ bindIp: '127.0.0.1' }),
    );
    assert.deepEqual(plan.body.ExposedPorts, { '8888/tcp': {}, '22/tcp': {} });
    assert.deepEqual(plan.body.HostConfig.PortBindings, {
      '8888/tcp': [
        { HostIp: '127.0.0.1', HostPort: '30001' },
        { HostIp: '127.0.0.1', HostPort: '30003' },
      ],
      '22/tcp': [{ HostIp: '127.0.0.1', HostPort: '30002' }],
    });
  });

  test("on the host's network nothing is published and no hostname or network is set", () => {
    const plan = planContainer(
      spec({
        networkMode: 'host',
        ports: [{ private: 8000, public: 30001, protocol: 'http' }],
        network: { name: 'acct', aliases: ['a'], ip: null },
      }),
      ctx({ network: { name: 'gantry-ns1-acct', fixedIp: false } }),
    );
    assert.equal(plan.body.HostConfig.NetworkMode, 'host');
    assert.equal(plan.body.HostConfig.PortBindings, undefined);
    assert.equal(plan.body.ExposedPorts, undefined);
    assert.equal(plan.body.Hostname, undefined);
    assert.equal(plan.body.NetworkingConfig, undefined);
    assert.equal(envOf(plan.body).GANTRY_PORT_8000, '30001');
  });

  test('a private network joins its engine network with the aliases, and the fixed IP only where it may be asked for', () => {
    const network = { name: 'acct', aliases: ['pod1.gantry'], ip: '10.200.0.9' };
    const allowed = planContainer(spec({ network }), ctx({ network: { name: 'gantry-ns1-acct', fixedIp: true } }));
    assert.equal(allowed.body.HostConfig.NetworkMode, 'gantry-ns1-acct');
    assert.deepEqual(allowed.body.NetworkingConfig, {
      EndpointsConfig: { 'gantry-ns1-acct': { Aliases: ['pod1.gantry'], IPAMConfig: { IPv4Address: '10.200.0.9' } } },
    });
    const refused = planContainer(spec({ network }), ctx({ network: { name: 'gantry-ns1-acct', fixedIp: false } }));
    assert.deepEqual(refused.body.NetworkingConfig, {
      EndpointsConfig: { 'gantry-ns1-acct': { Aliases: ['pod1.gantry'] } },
    });
  });

  test('CPUs become NanoCpus (capped at the engine), memory GiB without swap, disk a size only where the driver takes one', () => {
    const plan = planContainer(spec({ vcpus: 2.5, memoryGb: 3, diskGb: 20 }), ctx());
    assert.equal(plan.body.HostConfig.NanoCpus, 2_500_000_000);
    assert.equal(plan.body.HostConfig.Memory, 3 * 1024 ** 3);
    assert.equal(plan.body.HostConfig.MemorySwap, 3 * 1024 ** 3, 'no swap on top of the limit');
    assert.deepEqual(plan.body.HostConfig.StorageOpt, { size: String(20 * 1024 ** 3) });
    assert.equal(planContainer(spec({ diskGb: 20 }), ctx({ diskLimit: false })).body.HostConfig.StorageOpt, undefined);
    assert.equal(planContainer(spec({ diskGb: 0 }), ctx()).body.HostConfig.StorageOpt, undefined);
    assert.equal(planContainer(spec({ vcpus: 32 }), ctx({ engineCpus: 2 })).body.HostConfig.NanoCpus, 2_000_000_000);
  });

  test('a container can open no raw or packet socket, make no device node and gain no privilege, and says so in a label', () => {
    const plan = planContainer(spec(), ctx());
    assert.deepEqual(plan.body.HostConfig.CapDrop, ['NET_RAW', 'MKNOD']);
    assert.deepEqual(plan.body.HostConfig.SecurityOpt, ['no-new-privileges:true']);
    assert.equal(plan.body.Labels['gantry.hardened'], '1');
    const onHost = planContainer(spec({ networkMode: 'host' }), ctx());
    assert.deepEqual(onHost.body.HostConfig.CapDrop, ['NET_RAW', 'MKNOD'], "on the host's network most of all");
    const bare = planContainer(spec(), ctx({ hardening: false }));
    assert.equal(bare.body.HostConfig.CapDrop, undefined);
    assert.equal(bare.body.HostConfig.SecurityOpt, undefined);
    assert.equal(bare.body.Labels['gantry.hardened'], undefined);
    assert.notEqual(bare.specHash, plan.specHash, 'a kept container without the hardening is never reused for a start');
  });

  test("an instance that names no network joins the one it is given (its account's), under no alias", () => {
    const plan = planContainer(
      spec({ network: null }),
      ctx({ network: { name: 'gantry-ns1-acct-acc1', fixedIp: false } }),
    );
    assert.equal(plan.body.HostConfig.NetworkMode, 'gantry-ns1-acct-acc1');
    assert.deepEqual(plan.body.NetworkingConfig, { EndpointsConfig: { 'gantry-ns1-acct-acc1': { Aliases: [] } } });
  });

  test('a disk the driver cannot cap is labelled in bytes for the sampler to watch; one it caps, or no disk, is not', () => {
    const uncapped = planContainer(spec({ diskGb: 20 }), ctx({ diskLimit: false }));
    assert.equal(uncapped.body.Labels['gantry.disk'], String(20 * 1024 ** 3));
    assert.equal(planContainer(spec({ diskGb: 20 }), ctx()).body.Labels['gantry.disk'], undefined);
    assert.equal(planContainer(spec({ diskGb: 0 }), ctx({ diskLimit: false })).body.Labels['gantry.disk'], undefined);
  });

  test('/dev/shm is half the memory limit (1 GiB without one) and open files are bounded unless the engine refused the bound', () => {
    const host = planContainer(spec({ memoryGb: 48 }), ctx()).body.HostConfig;
    assert.equal(SHM_SHARE_OF_MEMORY, 0.5);
    assert.equal(host.ShmSize, 24 * 1024 ** 3, 'ML data loaders get room, inside the memory limit');
    assert.deepEqual(host.Ulimits, [{ Name: 'nofile', Soft: CONTAINER_NOFILE_LIMIT, Hard: CONTAINER_NOFILE_LIMIT }]);
    assert.equal(CONTAINER_NOFILE_LIMIT, 65_536);
    assert.equal(planContainer(spec({ memoryGb: 0 }), ctx()).body.HostConfig.ShmSize, SHM_WITHOUT_MEMORY_LIMIT);
    assert.equal(SHM_WITHOUT_MEMORY_LIMIT, 1024 ** 3);
    assert.equal(planContainer(spec(), ctx({ openFiles: null })).body.HostConfig.Ulimits, undefined);
    assert.deepEqual(planContainer(spec(), ctx({ openFiles: 4096 })).body.HostConfig.Ulimits, [
      { Name: 'nofile', Soft: 4096, Hard: 4096 },
    ]);
  });

  test('volumes are named volumes: the pod its own, a network volume shared by id, each labelled', () => {
    const plan = planContainer(
      spec({
        volumes: [
          { kind: 'persistent', path: '/workspace' },
          { kind: 'network', volumeId: 'nv9', path: '/data' },
        ],
      }),
      ctx(),
    );
    assert.deepEqual(plan.body.HostConfig.Mounts, [
      { Type: 'volume', Source: 'gantry-ns1-pod-pod1', Target: '/workspace' },
      { Type: 'volume', Source: 'gantry-ns1-nv-nv9', Target: '/data' },
    ]);
    assert.deepEqual(plan.volumes, [
      {
        name: 'gantry-ns1-pod-pod1',
        labels: {
          'gantry.namespace': 'ns1',
          'gantry.volume': 'persistent',
          'gantry.instance': 'pod1',
          'gantry.account': 'acc1',
        },
      },
      {
        name: 'gantry-ns1-nv-nv9',
        labels: { 'gantry.namespace': 'ns1', 'gantry.volume': 'network', 'gantry.volume-id': 'nv9' },
      },
    ]);
    assert.throws(
      () => planContainer(spec({ volumes: [{ kind: 'persistent', path: 'relative' }] }), ctx()),
      /not absolute/,
    );
  });

  test('GPUs are device requests by UUID in nvidia mode, and env only in env-only mode', () => {
    const nvidia = planContainer(
      spec({ gpuIndices: [0, 2] }),
      ctx({ host: { publicIp: '1.2.3.4', gpuUuids: ['GPU-aaa', 'GPU-bbb', 'GPU-ccc'], gpuMode: 'nvidia' } }),
    );
    assert.deepEqual(nvidia.body.HostConfig.DeviceRequests, [
      { Driver: 'nvidia', DeviceIDs: ['GPU-aaa', 'GPU-ccc'], Capabilities: [['gpu']] },
    ]);
    const envOnly = planContainer(spec({ gpuIndices: [0, 2] }), ctx());
    assert.equal(envOnly.body.HostConfig.DeviceRequests, undefined);
    assert.equal(envOf(envOnly.body).NVIDIA_VISIBLE_DEVICES, 'GPU-aaa,GPU-ccc');
    assert.equal(
      planContainer(spec(), ctx({ host: { publicIp: '1.2.3.4', gpuMode: 'nvidia' } })).body.HostConfig.DeviceRequests,
      undefined,
      'a CPU instance asks for no device',
    );
  });

  test('the json-file log is capped when the engine logs there, and left alone otherwise', () => {
    assert.deepEqual(planContainer(spec(), ctx()).body.HostConfig.LogConfig, {
      Type: 'json-file',
      Config: { 'max-size': '1024', 'max-file': '2' },
    });
    assert.equal(planContainer(spec(), ctx({ logMaxBytes: null })).body.HostConfig.LogConfig, undefined);
  });

  test('an id the engine could not name is refused', () => {
    assert.throws(
      () => planContainer(spec({ id: 'a/b' }), ctx()),
      /instance id "a\/b" cannot be part of a Docker name/,
    );
  });
});

describe('containerEnv', () => {
  test('the tenant env, then platformEnv, then the runtime variables: a tenant cannot override the platform', () => {
    const env = containerEnv(
      spec({
        id: 'pod1',
        vcpus: 4,
        gpuIndices: [1],
        env: {
          MINE: 'tenant',
          SHARED: 'tenant',
          GANTRY_INSTANCE_ID: 'spoof',
          RUNPOD_PUBLIC_IP: 'spoof',
          CUDA_VISIBLE_DEVICES: 'all',
          GANTRY_PORT_22: '1',
        },
        platformEnv: { SHARED: 'platform', RUNPOD_POD_ID: 'spoof-too' },
        ports: [
          { private: 22, public: 30022, protocol: 'tcp' },
          { private: 8888, public: 30888, protocol: 'http' },
        ],
      }),
      { publicIp: '203.0.113.7', gpuUuids: ['GPU-aaa', 'GPU-bbb'] },
    );
    assert.equal(env.MINE, 'tenant');
    assert.equal(env.SHARED, 'platform');
    assert.equal(env.GANTRY_INSTANCE_ID, 'pod1');
    assert.equal(env.RUNPOD_POD_ID, 'pod1');
    assert.equal(env.RUNPOD_PUBLIC_IP, '203.0.113.7');
    assert.equal(env.CUDA_VISIBLE_DEVICES, 'GPU-bbb');
    assert.equal(env.NVIDIA_VISIBLE_DEVICES, 'GPU-bbb');
    assert.equal(env.RUNPOD_GPU_COUNT, '1');
    assert.equal(env.RUNPOD_CPU_COUNT, '4');
    assert.equal(env.GANTRY_PORT_22, '30022');
    assert.equal(env.RUNPOD_TCP_PORT_22, '30022');
    assert.equal(env.GANTRY_PORT_8888, '30888');
    assert.equal(env.RUNPOD_TCP_PORT_8888, undefined, 'only tcp bindings get RUNPOD_TCP_PORT_*');
  });

  test('GPUs without a known UUID are named by index; a CPU instance sees none', () => {
    assert.equal(
      containerEnv(spec({ gpuIndices: [0, 3] }), { publicIp: 'x', gpuUuids: ['GPU-aaa'] }).CUDA_VISIBLE_DEVICES,
      'GPU-aaa,3',
    );
    const cpu = containerEnv(spec({ gpuIndices: [] }), { publicIp: 'x' });
    assert.equal(cpu.CUDA_VISIBLE_DEVICES, '');
    assert.equal(cpu.NVIDIA_VISIBLE_DEVICES, 'none');
    assert.equal(cpu.RUNPOD_GPU_COUNT, '0');
  });
});
