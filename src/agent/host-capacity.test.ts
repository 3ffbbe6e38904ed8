import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultCatalog } from '../domain/catalog.js';
import type { EngineInfo } from '../runtime/docker/engine-info.js';
import { agentHostOf, type AgentHostSettings } from './host-capacity.js';

const GiB = 1024 ** 3;
const info: EngineInfo = {
  Name: 'gpu-07',
  NCPU: 64,
  MemTotal: 503 * GiB + 123,
  DockerRootDir: '/var/lib/docker',
  Driver: 'overlay2',
  DriverStatus: [['Backing Filesystem', 'xfs']],
  Runtimes: { runc: {}, nvidia: {} },
};
const settings: AgentHostSettings = {
  dockerHost: 'unix:///var/run/docker.sock',
  publicIp: '203.0.113.7',
  portRange: [40000, 40999],
  diskGb: null,
  gpuMode: 'auto',
  nvidiaSmi: 'nvidia-smi',
};
const gpu = (index: number, name: string, memoryMiB: number | null = 24564) => ({
  index,
  uuid: `GPU-6f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b0${index}`,
  name,
  memoryMiB,
});

test("the capacity offers the host's most numerous GPU model under nvidia-smi's name, each GPU by UUID in index order, and notes the others", () => {
  const nvidia = {
    kind: 'ok' as const,
    command: 'nvidia-smi',
    cudaVersion: '12.4',
    gpus: [
      gpu(0, 'NVIDIA A100 80GB PCIe', 81920),
      gpu(1, 'NVIDIA GeForce RTX 4090'),
      gpu(2, 'NVIDIA GeForce RTX 4090'),
    ],
  };
  const { capacity, host } = agentHostOf({ info, nvidia, dataRootFree: { bytes: 3600 * GiB } }, settings);
  assert.deepEqual(capacity, {
    vcpus: 64,
    memoryGb: 503,
    diskGb: 3600,
    gpus: [
      { uuid: gpu(1, '').uuid, name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
      { uuid: gpu(2, '').uuid, name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
    ],
    cudaVersion: '12.4',
    gpuMode: 'nvidia',
    cpuFlavors: [],
    notes: [
      '1 GPU NVIDIA A100 80GB PCIe (index 0) not offered: a host offers one GPU model, its most numerous (2 × NVIDIA GeForce RTX 4090)',
    ],
  });
  assert.deepEqual(
    host.gpuUuids,
    capacity.gpus.map((g) => g.uuid),
    "the runtime maps placement's indices onto the same list",
  );
  assert.equal(host.publicIp, '203.0.113.7');
});

test("a host without GPUs offers the built-in CPU flavors, no CUDA version, and notes in terms of the agent's flags", () => {
  const { capacity } = agentHostOf(
    {
      info: { ...info, Runtimes: { runc: {} } },
      nvidia: { kind: 'absent', command: 'nvidia-smi' },
      dataRootFree: { error: 'EACCES' },
    },
    { ...settings, gpuMode: 'env-only' },
  );
  assert.deepEqual(capacity.gpus, []);
  assert.equal(capacity.cudaVersion, null);
  assert.deepEqual(
    capacity.cpuFlavors,
    defaultCatalog().cpuFlavors.map((f) => f.id),
  );
  assert.equal(capacity.diskGb, 0);
  assert.deepEqual(capacity.notes, ["the free disk of the engine's data root is unknown (EACCES): set --disk-gb"]);
});
