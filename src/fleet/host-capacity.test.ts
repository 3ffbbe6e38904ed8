import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultCatalog } from '../domain/catalog.js';
import { isApiError } from '../domain/errors.js';
import { inventoryHost, validateCapacity, validateReachability } from './host-capacity.js';
import type { HostCapacity } from './protocol.js';

const catalog = defaultCatalog();
const good = (): HostCapacity => ({
  vcpus: 64,
  memoryGb: 503.4,
  diskGb: 3600,
  gpus: [
    { uuid: 'GPU-6f1c0a2b-1111-2222-3333-444455556666', name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
    { uuid: 'GPU-6f1c0a2b-1111-2222-3333-444455557777', name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
  ],
  cudaVersion: '12.4',
  gpuMode: 'nvidia',
  cpuFlavors: [],
  notes: [],
});

/** The fields a refusal names. */
function refusedFields(raw: unknown): string[] {
  try {
    validateCapacity(raw, catalog);
  } catch (err) {
    assert.ok(isApiError(err));
    assert.equal(err.code, 'CAPACITY_INVALID');
    assert.equal(err.status, 400);
    return (err.errors ?? []).map((e) => e.split(' ')[0]!);
  }
  assert.fail('the capacity was accepted');
}

test('a believable capacity is accepted as it is, and unknown fields are dropped', () => {
  assert.deepEqual(validateCapacity(good(), catalog), good());
  assert.deepEqual(validateCapacity({ ...good(), futureField: 1 }, catalog), good());
  const cpu = validateCapacity(
    {
      vcpus: 8,
      memoryGb: 16,
      diskGb: 0,
      gpus: [],
      cudaVersion: null,
      gpuMode: 'env-only',
      cpuFlavors: ['cpu3c', 'cpu3g'],
    },
    catalog,
  );
  assert.deepEqual(cpu.notes, []);
});

test('figures no machine has are refused, each naming its field', () => {
  assert.deepEqual(refusedFields({ ...good(), vcpus: 0 }), ['capacity.vcpus']);
  assert.deepEqual(refusedFields({ ...good(), vcpus: 4097 }), ['capacity.vcpus']);
  assert.deepEqual(refusedFields({ ...good(), vcpus: 2.5 }), ['capacity.vcpus']);
  assert.deepEqual(refusedFields({ ...good(), memoryGb: 0.1, diskGb: -1 }), ['capacity.memoryGb', 'capacity.diskGb']);
  assert.deepEqual(refusedFields({ ...good(), memoryGb: Number.MAX_VALUE }), ['capacity.memoryGb']);
  assert.deepEqual(refusedFields({ ...good(), diskGb: '100' }), ['capacity.diskGb']);
  assert.deepEqual(refusedFields('lots'), ['capacity']);
});

test('GPUs must be of one model the catalog knows, with real UUIDs, each once, at most 64', () => {
  const gpu = (uuid: string, name = 'NVIDIA GeForce RTX 4090', memoryMb = 24564) => ({ uuid, name, memoryMb });
  assert.deepEqual(refusedFields({ ...good(), gpus: [gpu('GPU-aaa1', 'NVIDIA Imaginary 9000')] }), [
    'capacity.gpus[0].name',
  ]);
  assert.deepEqual(refusedFields({ ...good(), gpus: [gpu('GPU-aaa1'), gpu('GPU-aaa2', 'NVIDIA L4')] }), [
    'capacity.gpus[1].name',
  ]);
  assert.deepEqual(refusedFields({ ...good(), gpus: [gpu('nvidia0')] }), ['capacity.gpus[0].uuid']);
  assert.deepEqual(refusedFields({ ...good(), gpus: [gpu('GPU-aaa1'), gpu('GPU-AAA1')] }), ['capacity.gpus[1].uuid']);
  assert.deepEqual(refusedFields({ ...good(), gpus: [gpu('GPU-aaa1', undefined, 0)] }), ['capacity.gpus[0].memoryMb']);
  assert.deepEqual(
    refusedFields({ ...good(), gpus: Array.from({ length: 65 }, (_, i) => gpu(`GPU-${i.toString(16)}`)) }),
    ['capacity.gpus'],
  );
  assert.deepEqual(refusedFields({ ...good(), gpus: ['GPU-aaa1'] }), ['capacity.gpus[0]']);
  // catalog names are matched as discovery matches them: with or without the NVIDIA prefix, by id or display name
  assert.equal(validateCapacity({ ...good(), gpus: [gpu('GPU-aaa1', 'RTX 4090')] }, catalog).gpus.length, 1);
});

test('the CUDA version, GPU mode, CPU flavors and notes are checked', () => {
  assert.deepEqual(refusedFields({ ...good(), cudaVersion: '12' }), ['capacity.cudaVersion']);
  assert.deepEqual(refusedFields({ ...good(), cudaVersion: undefined }), ['capacity.cudaVersion']);
  assert.deepEqual(refusedFields({ ...good(), gpuMode: 'magic' }), ['capacity.gpuMode']);
  assert.deepEqual(refusedFields({ ...good(), cpuFlavors: ['cpu9z'] }), ['capacity.cpuFlavors[0]']);
  assert.deepEqual(refusedFields({ ...good(), notes: ['x'.repeat(1001)] }), ['capacity.notes[0]']);
});

test('a refusal quotes what was sent briefly, never at length', () => {
  try {
    validateCapacity({ ...good(), gpus: [{ uuid: 'GPU-1', name: 'x'.repeat(5000), memoryMb: 1 }] }, catalog);
    assert.fail('accepted');
  } catch (err) {
    assert.ok(isApiError(err));
    assert.ok(err.detail.length < 400, err.detail);
    assert.match(err.detail, /capacity\.gpus\[0\]\.name must be a GPU model the catalog knows/);
  }
});

test('the public address must be one clients can reach, and the port range real', () => {
  assert.doesNotThrow(() => validateReachability('203.0.113.7', [40000, 40999]));
  assert.doesNotThrow(() => validateReachability('2001:db8::7', [1024, 21023]));
  const fields = (ip: string, range: number[]): string[] => {
    try {
      validateReachability(ip, range);
      return [];
    } catch (err) {
      assert.ok(isApiError(err) && err.code === 'CAPACITY_INVALID');
      return (err.errors ?? []).map((e) => e.split(' ')[0]!);
    }
  };
  assert.deepEqual(fields('gpu-07.local', [40000, 40999]), ['publicIp']);
  assert.deepEqual(fields('0.0.0.0', [40000, 40999]), ['publicIp']);
  assert.deepEqual(fields('239.1.1.1', [40000, 40999]), ['publicIp']);
  assert.deepEqual(fields('203.0.113.7', [41000, 40000]), ['portRange']);
  assert.deepEqual(fields('203.0.113.7', [80, 90]), ['portRange']);
  assert.deepEqual(fields('203.0.113.7', [40000]), ['portRange']);
  assert.deepEqual(fields('203.0.113.7', [20000, 40000]), ['portRange']);
});

test('a joined host maps onto the inventory with its GPUs as the catalog type, by index', () => {
  const host = inventoryHost(
    {
      id: 'host-a',
      dataCenterId: 'EU-RO-1',
      cloud: 'COMMUNITY',
      publicIp: '203.0.113.7',
      portRange: [40000, 40999],
      capacity: good(),
    },
    catalog,
  );
  assert.deepEqual(host, {
    id: 'host-a',
    dataCenterId: 'EU-RO-1',
    cloud: 'COMMUNITY',
    cudaVersion: '12.4',
    gpuTypeId: 'NVIDIA GeForce RTX 4090',
    gpuCount: 2,
    cpuFlavors: [],
    vcpus: 64,
    memoryGb: 503.4,
    diskGb: 3600,
    portRange: [40000, 40999],
    publicIp: '203.0.113.7',
    gpuUuids: good().gpus.map((g) => g.uuid),
    gpuMode: 'nvidia',
    notes: [],
  });
});
