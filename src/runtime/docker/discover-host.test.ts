import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { totalmem } from 'node:os';
import { loadConfig } from '../../config.js';
import { defaultCatalog, type Host } from '../../domain/catalog.js';
import {
  catalogGpuType,
  describeHost,
  discoverEngineHost,
  discoverHost,
  type DiscoveryInput,
  type HostSettings,
} from './discover-host.js';
import { EngineUnreachable, fetchEngineInfo, type EngineInfo } from './engine-info.js';
import type { NvidiaGpu, NvidiaSmiResult } from './nvidia-smi.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi, TWO_4090 } from '../../../test/support/nvidia-smi.js';

after(removeStandIns);

const catalog = defaultCatalog();
const GiB = 1024 ** 3;
const dockerHost = process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock';

// Awaited before any test is declared: a test declared earlier would let the file's root after hooks run before the later ones.
const engine = await fetchEngineInfo(dockerHost, { timeoutMs: 3000 }).catch((err: Error) => err);

/** The config's defaults for runtime.docker, with `file` over them. */
function settings(file: Partial<HostSettings> = {}): HostSettings & { nvidiaSmi: string } {
  const config = loadConfig({
    env: { GANTRY_DATA_DIR: '/tmp/gantry-discovery-test', GANTRY_RUNTIME: 'docker', DOCKER_HOST: dockerHost },
  });
  return { ...config.runtime.docker, ...file };
}

/** What a 20.10 engine without the NVIDIA toolkit answers (trimmed to what discovery reads). */
const plainEngine: EngineInfo = {
  Name: 'box-1',
  NCPU: 16,
  MemTotal: 64 * GiB + 123_456,
  ServerVersion: '20.10.24',
  Driver: 'overlay2',
  DriverStatus: [
    ['Backing Filesystem', 'extfs'],
    ['Supports d_type', 'true'],
  ],
  DockerRootDir: '/var/lib/docker',
  Runtimes: { runc: { path: 'runc' }, 'io.containerd.runc.v2': { path: 'runc' } },
};
const nvidiaEngine: EngineInfo = {
  ...plainEngine,
  DriverStatus: [['Backing Filesystem', 'xfs']],
  Runtimes: { ...plainEngine.Runtimes, nvidia: { path: 'nvidia-container-runtime' } },
};

const gpu = (index: number, name: string): NvidiaGpu => ({
  index,
  uuid: `GPU-0000000${index}-aaaa-bbbb-cccc-dddddddddddd`,
  name,
  memoryMiB: 24564,
});
const ok = (gpus: NvidiaGpu[], cudaVersion: string | null = '12.4'): NvidiaSmiResult => ({
  kind: 'ok',
  command: 'nvidia-smi',
  gpus,
  cudaVersion,
});
const absent: NvidiaSmiResult = { kind: 'absent', command: 'nvidia-smi' };

function discover(input: Partial<DiscoveryInput>): Host {
  return discoverHost({
    info: plainEngine,
    nvidia: absent,
    catalog,
    settings: settings(),
    dataRootFree: { bytes: 500 * GiB + 1 },
    ...input,
  });
}

test('a host without GPUs offers every CPU flavor, with the engine’s vCPUs, memory and name, and the data root’s free disk', () => {
  const host = discover({});
  assert.deepEqual(
    { ...host, notes: undefined },
    {
      id: 'box-1',
      dataCenterId: catalog.dataCenters[0]!.id,
      cloud: 'SECURE',
      cudaVersion: null,
      gpuTypeId: null,
      gpuCount: 0,
      cpuFlavors: catalog.cpuFlavors.map((f) => f.id),
      vcpus: 16,
      memoryGb: 64,
      diskGb: 500,
      portRange: [20000, 29999],
      publicIp: '127.0.0.1',
      gpuUuids: [],
      gpuMode: 'env-only',
      notes: undefined,
    },
  );
  assert.deepEqual(host.notes, [
    "the storage driver (overlay2 on extfs) cannot cap a container's disk: containerDiskInGb is reserved on the host, and a container past it is stopped when the runtime samples its size",
  ]);
});

test('two GPUs of a catalog model are offered with their UUIDs by index and the CUDA version, through the engine’s nvidia runtime', () => {
  const host = discover({
    info: nvidiaEngine,
    nvidia: ok([gpu(0, 'NVIDIA GeForce RTX 4090'), gpu(1, 'NVIDIA GeForce RTX 4090')]),
  });
  assert.equal(host.gpuTypeId, 'NVIDIA GeForce RTX 4090');
  assert.equal(host.gpuCount, 2);
  assert.equal(host.cudaVersion, '12.4');
  assert.deepEqual(host.gpuUuids, [gpu(0, '').uuid, gpu(1, '').uuid]);
  assert.equal(host.gpuMode, 'nvidia');
  assert.deepEqual(host.cpuFlavors, [], 'a GPU host serves no CPU pods unless runtime.docker.cpuFlavors says so');
  assert.deepEqual(host.notes, []);
});

test('GPUs on an engine without the nvidia runtime are offered env-only, and the host says so', () => {
  const host = discover({ nvidia: ok([gpu(0, 'NVIDIA L4')]) });
  assert.equal(host.gpuTypeId, 'NVIDIA L4');
  assert.equal(host.gpuMode, 'env-only');
  assert.match(
    host.notes![0]!,
    /^the engine has no nvidia runtime \(its runtimes: runc, io\.containerd\.runc\.v2\) and no CDI GPU devices: containers get only NVIDIA_VISIBLE_DEVICES \/ CUDA_VISIBLE_DEVICES/,
  );
});

test('an engine with CDI GPU devices hands GPUs over as devices', () => {
  const info: EngineInfo = {
    ...plainEngine,
    CDISpecDirs: ['/etc/cdi'],
    DiscoveredDevices: [{ Source: 'cdi', ID: 'nvidia.com/gpu=0' }],
  };
  assert.equal(discover({ info, nvidia: ok([gpu(0, 'NVIDIA L4')]) }).gpuMode, 'nvidia');
});

test('nvidia-smi names match catalog GPU types by id or display name, with or without the NVIDIA prefix', () => {
  const types = catalog.gpuTypes;
  assert.equal(catalogGpuType('NVIDIA A100-SXM4-80GB', types)?.id, 'NVIDIA A100-SXM4-80GB');
  assert.equal(catalogGpuType('GeForce RTX 3090', types)?.id, 'NVIDIA GeForce RTX 3090');
  assert.equal(catalogGpuType('NVIDIA RTX 6000 Ada', types)?.id, 'NVIDIA RTX 6000 Ada Generation');
  assert.equal(catalogGpuType('nvidia  l40s', types)?.id, 'NVIDIA L40S');
  assert.equal(catalogGpuType('Tesla T4', types), null);
});

test('GPUs the catalog does not know are not offered, are noted, and leave a CPU host', () => {
  const host = discover({ nvidia: ok([gpu(0, 'Tesla T4'), gpu(1, 'Tesla T4')]) });
  assert.equal(host.gpuTypeId, null);
  assert.equal(host.gpuCount, 0);
  assert.equal(host.cudaVersion, null);
  assert.deepEqual(
    host.cpuFlavors,
    catalog.cpuFlavors.map((f) => f.id),
  );
  assert.equal(
    host.notes![0],
    '2 GPUs "Tesla T4" (indices 0, 1) are no GPU type of the catalog and not offered (add a catalog.gpuTypes entry with id "Tesla T4")',
  );
});

test('mixed GPU models offer the most numerous one, its UUIDs in index order, and note the others', () => {
  const host = discover({
    info: nvidiaEngine,
    nvidia: ok([
      gpu(0, 'NVIDIA GeForce RTX 4090'),
      gpu(1, 'NVIDIA RTX A5000'),
      gpu(2, 'NVIDIA RTX A5000'),
      gpu(3, 'Tesla T4'),
    ]),
  });
  assert.equal(host.gpuTypeId, 'NVIDIA RTX A5000');
  assert.equal(host.gpuCount, 2);
  assert.deepEqual(
    host.gpuUuids,
    [gpu(1, '').uuid, gpu(2, '').uuid],
    "placement's gpuIndices 0 and 1 name nvidia-smi's GPUs 1 and 2",
  );
  assert.deepEqual(host.notes, [
    '1 GPU "Tesla T4" (index 3) is no GPU type of the catalog and not offered (add a catalog.gpuTypes entry with id "Tesla T4")',
    '1 GPU NVIDIA GeForce RTX 4090 (index 0) not offered: a host offers one GPU model, its most numerous (2 × NVIDIA RTX A5000)',
  ]);
  const tie = discover({ info: nvidiaEngine, nvidia: ok([gpu(0, 'NVIDIA L4'), gpu(1, 'NVIDIA RTX A5000')]) });
  assert.equal(tie.gpuTypeId, 'NVIDIA L4', 'a tie goes to the model at the lowest index');
});

test('a failing nvidia-smi offers no GPUs and says what it printed; an absent default one says nothing', () => {
  const failed = discover({
    nvidia: { kind: 'failed', command: 'nvidia-smi', message: 'nvidia-smi failed (9): NVIDIA-SMI has failed' },
  });
  assert.equal(failed.gpuCount, 0);
  assert.equal(failed.notes![0], 'nvidia-smi failed (9): NVIDIA-SMI has failed; no GPUs are offered');
  assert.equal(discover({ nvidia: absent }).notes!.length, 1, 'only the disk note');
  assert.match(
    discover({ nvidia: { kind: 'absent', command: '/opt/nv/nvidia-smi' } }).notes![0]!,
    /"\/opt\/nv\/nvidia-smi" was not found/,
  );
});

test('GPUs without a CUDA version in the banner are offered, noted as not placeable by CUDA version', () => {
  const host = discover({ info: nvidiaEngine, nvidia: ok([gpu(0, 'NVIDIA L4')], null) });
  assert.equal(host.gpuCount, 1);
  assert.equal(host.cudaVersion, null);
  assert.match(host.notes![0]!, /names no CUDA version/);
});

test('the config places the host and overrides what it may: id, data center, cloud, public IP, ports, disk, CPU flavors, GPU mode', () => {
  const s = settings({
    hostId: 'rack-7',
    dataCenterId: 'EU-RO-1',
    cloud: 'COMMUNITY',
    publicIp: '203.0.113.7',
    portRange: [41000, 41099],
    diskGb: 250,
    cpuFlavors: ['cpu3c'],
    gpuMode: 'nvidia',
  });
  const host = discover({ settings: s, nvidia: ok([gpu(0, 'NVIDIA L4')]), dataRootFree: { error: 'nope' } });
  assert.deepEqual(
    [host.id, host.dataCenterId, host.cloud, host.publicIp, host.portRange, host.diskGb, host.cpuFlavors, host.gpuMode],
    ['rack-7', 'EU-RO-1', 'COMMUNITY', '203.0.113.7', [41000, 41099], 250, ['cpu3c'], 'nvidia'],
  );
  assert.ok(!host.notes!.some((n) => /env|disk of the engine/.test(n)), host.notes!.join('\n'));
});

test('the public IP defaults to a single bind address, else a remote engine’s TCP host, else loopback', () => {
  assert.equal(discover({ settings: settings({ bindIp: '10.1.2.3' }) }).publicIp, '10.1.2.3');
  assert.equal(discover({ settings: settings({ host: 'tcp://198.51.100.4:2375' }) }).publicIp, '198.51.100.4');
  assert.equal(discover({ settings: settings({ host: 'tcp://127.0.0.1:2375' }) }).publicIp, '127.0.0.1');
});

test('a data root whose free space cannot be read offers no disk and says which setting to use', () => {
  const host = discover({ dataRootFree: { error: 'the engine at tcp://198.51.100.4:2375 is on another machine' } });
  assert.equal(host.diskGb, 0);
  assert.match(
    host.notes![0]!,
    /free disk of the engine's data root is unknown \(the engine at tcp:\/\/198\.51\.100\.4:2375 is on another machine\): set runtime\.docker\.diskGb/,
  );
});

test('the start-up description names the host, its capacity and its GPUs', () => {
  assert.equal(
    describeHost(discover({})),
    `box-1 (${catalog.dataCenters[0]!.id}): 16 vCPUs, 64 GB, no GPUs, disk 500 GB`,
  );
  assert.match(
    describeHost(discover({ nvidia: ok([gpu(0, 'NVIDIA L4')]) })),
    /: 16 vCPUs, 64 GB, 1 × NVIDIA L4 \(CUDA 12\.4\) env-only, disk 500 GB$/,
  );
});

test('an engine that does not answer is reported naming its socket', async () => {
  await assert.rejects(fetchEngineInfo('unix:///tmp/gantry-no-such-engine.sock', { timeoutMs: 2000 }), (err: Error) => {
    assert.ok(err instanceof EngineUnreachable);
    assert.match(
      err.message,
      /^cannot reach the Docker Engine at unix:\/\/\/tmp\/gantry-no-such-engine\.sock: connect ENOENT/,
    );
    return true;
  });
});

const noEngine =
  engine instanceof Error ? `no Docker Engine at ${dockerHost} (${engine.message}); set DOCKER_HOST` : false;

test(
  'the real engine’s GET /info gives this machine’s vCPUs and memory, and a stand-in nvidia-smi its GPUs',
  { skip: noEngine },
  async () => {
    const { env } = standInNvidiaSmi({ csv: TWO_4090, banner: BANNER_12_4 });
    const { host, info } = await discoverEngineHost(settings(), catalog, { env });
    assert.equal(host.id, info.Name);
    assert.equal(host.vcpus, info.NCPU);
    assert.equal(host.memoryGb, Math.floor(totalmem() / GiB), 'the engine runs on this machine');
    assert.equal(host.gpuTypeId, 'NVIDIA GeForce RTX 4090');
    assert.equal(host.gpuCount, 2);
    assert.equal(host.gpuMode, Object.keys(info.Runtimes ?? {}).includes('nvidia') ? 'nvidia' : 'env-only');
    assert.ok(host.diskGb > 0, `the data root ${info.DockerRootDir} has free space here`);
  },
);
