import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultCatalog } from '../domain/catalog.js';
import { hostFromCapacity, type JoinFacts } from './host-from-capacity.js';
import type { HostCapacity } from './protocol.js';

const catalog = defaultCatalog();
const facts: JoinFacts = { hostId: 'host-abc123def456', dataCenterId: 'EU-RO-1', cloud: 'COMMUNITY', publicIp: '203.0.113.7', portRange: [40000, 40999] };
const capacity = (fields: Partial<HostCapacity> = {}): HostCapacity => ({
  vcpus: 64,
  memoryGb: 503,
  diskGb: 3600,
  gpus: [
    { uuid: 'GPU-6f1c0a2b-0000-0000-0000-000000000001', name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
    { uuid: 'GPU-6f1c0a2b-0000-0000-0000-000000000002', name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
  ],
  cudaVersion: '12.4',
  gpuMode: 'nvidia',
  cpuFlavors: [],
  notes: [],
  ...fields,
});

test('a GPU host is its catalog GPU type, its GPUs by UUID in the order reported, and where its join token put it', () => {
  const mapped = hostFromCapacity(capacity(), facts, catalog);
  assert.deepEqual(mapped, {
    ok: true,
    host: {
      id: 'host-abc123def456',
      dataCenterId: 'EU-RO-1',
      cloud: 'COMMUNITY',
      cudaVersion: '12.4',
      gpuTypeId: 'NVIDIA GeForce RTX 4090',
      gpuCount: 2,
      cpuFlavors: [],
      vcpus: 64,
      memoryGb: 503,
      diskGb: 3600,
      portRange: [40000, 40999],
      publicIp: '203.0.113.7',
      gpuUuids: ['GPU-6f1c0a2b-0000-0000-0000-000000000001', 'GPU-6f1c0a2b-0000-0000-0000-000000000002'],
      gpuMode: 'nvidia',
      notes: [],
    },
  });
});

test('GPU names match catalog types by display name too, with or without the NVIDIA prefix, as discovery matches them', () => {
  const mapped = hostFromCapacity(capacity({ gpus: [{ uuid: 'GPU-aa', name: 'RTX A6000', memoryMb: 49140 }] }), facts, catalog);
  assert.ok(mapped.ok);
  assert.equal(mapped.host.gpuTypeId, 'NVIDIA RTX A6000');
});

test('a CPU host offers the catalog flavors it reports, notes the others, and has no CUDA version', () => {
  const mapped = hostFromCapacity(capacity({ gpus: [], cudaVersion: '12.4', gpuMode: 'env-only', cpuFlavors: ['cpu3c', 'cpu9x', 'cpu3g'], notes: ['no disk limit'] }), facts, catalog);
  assert.ok(mapped.ok);
  assert.equal(mapped.host.gpuTypeId, null);
  assert.equal(mapped.host.gpuCount, 0);
  assert.equal(mapped.host.cudaVersion, null);
  assert.deepEqual(mapped.host.cpuFlavors, ['cpu3c', 'cpu3g']);
  assert.deepEqual(mapped.host.notes, ['no disk limit', 'CPU flavors "cpu9x" are not in the catalog and not offered']);
});

test('GPUs without a CUDA version are offered, with a note that pods asking for one are not placed there', () => {
  const mapped = hostFromCapacity(capacity({ cudaVersion: null }), facts, catalog);
  assert.ok(mapped.ok);
  assert.equal(mapped.host.cudaVersion, null);
  assert.match(mapped.host.notes!.join(), /no CUDA version/);
});

test('capacity that cannot be real is refused naming the field', () => {
  const gpu = (name: string, uuid = 'GPU-ab') => ({ uuid, name, memoryMb: 1 });
  const cases: Array<[Partial<HostCapacity>, Partial<JoinFacts>, string, RegExp]> = [
    [{ vcpus: 0 }, {}, 'capacity.vcpus', /1 to 4096/],
    [{ vcpus: 2.5 }, {}, 'capacity.vcpus', /whole number/],
    [{ vcpus: Number.NaN }, {}, 'capacity.vcpus', /whole number/],
    [{ memoryGb: 1e9 }, {}, 'capacity.memoryGb', /65536/],
    [{ diskGb: -1 }, {}, 'capacity.diskGb', /0 to/],
    [{ gpus: Array.from({ length: 65 }, (_, i) => gpu('NVIDIA L4', `GPU-${i.toString(16)}`)) }, {}, 'capacity.gpus', /at most 64/],
    [{ gpus: [gpu('NVIDIA B300')] }, {}, 'capacity.gpus[0].name', /"NVIDIA B300" is no GPU type/],
    [{ gpus: [gpu('NVIDIA L4', 'GPU-1'), gpu('NVIDIA L40S', 'GPU-2')] }, {}, 'capacity.gpus[1].name', /one GPU model/],
    [{ gpus: [gpu('NVIDIA L4', 'GPU-1'), gpu('NVIDIA L4', 'GPU-1')] }, {}, 'capacity.gpus[1].uuid', /twice/],
    [{ gpus: [gpu('NVIDIA L4', '../../etc')] }, {}, 'capacity.gpus[0].uuid', /GPU-/],
    [{ cudaVersion: '12; rm -rf /' }, {}, 'capacity.cudaVersion', /major\.minor/],
    [{ gpuMode: 'cdi' as 'nvidia' }, {}, 'capacity.gpuMode', /nvidia/],
    [{}, { dataCenterId: 'MARS-1' }, 'dataCenterId', /"MARS-1"/],
    [{}, { portRange: [80, 90] }, 'portRange', /1024 to 65535/],
    [{}, { portRange: [41000, 40000] }, 'portRange', /not above/],
    [{}, { portRange: [30000, 60000] }, 'portRange', /at most 20000 ports/],
  ];
  for (const [fields, factFields, field, reason] of cases) {
    const mapped = hostFromCapacity(capacity(fields), { ...facts, ...factFields }, catalog);
    assert.equal(mapped.ok, false, field);
    if (mapped.ok) continue;
    assert.equal(mapped.field, field);
    assert.match(mapped.reason, reason);
  }
});

test('notes the agent sends are bounded in number and length', () => {
  const mapped = hostFromCapacity(capacity({ notes: Array.from({ length: 100 }, () => 'x'.repeat(10_000)) }), facts, catalog);
  assert.ok(mapped.ok);
  assert.equal(mapped.host.notes!.length, 20);
  assert.equal(mapped.host.notes![0]!.length, 500);
});
