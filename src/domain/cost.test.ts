import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultCatalog } from './catalog.js';
import { costPerHour } from './cost.js';

const catalog = defaultCatalog();

test('a GPU pod costs the per-GPU price of its cloud times its GPU count', () => {
  assert.equal(
    costPerHour({ kind: 'gpu', gpuTypeId: 'NVIDIA GeForce RTX 4090', gpuCount: 2, cloud: 'SECURE' }, catalog),
    1.38,
  );
  assert.equal(
    costPerHour({ kind: 'gpu', gpuTypeId: 'NVIDIA GeForce RTX 4090', gpuCount: 2, cloud: 'COMMUNITY' }, catalog),
    0.68,
  );
  assert.equal(
    costPerHour({ kind: 'gpu', gpuTypeId: 'NVIDIA H100 80GB HBM3', gpuCount: 8, cloud: 'SECURE' }, catalog),
    21.52,
  );
});

test('a CPU pod costs the per-vCPU price of its flavor and cloud times its vCPUs', () => {
  assert.equal(costPerHour({ kind: 'cpu', cpuFlavorId: 'cpu3c', vcpuCount: 4, cloud: 'SECURE' }, catalog), 0.12);
  assert.equal(costPerHour({ kind: 'cpu', cpuFlavorId: 'cpu3m', vcpuCount: 16, cloud: 'COMMUNITY' }, catalog), 0.8);
});

test('sums of float prices come out as the cents people expect', () => {
  // 0.1 + 0.2 style drift: 0.43 × 3 is 1.2899999999999998 in floating point
  assert.equal(costPerHour({ kind: 'gpu', gpuTypeId: 'NVIDIA L4', gpuCount: 3, cloud: 'SECURE' }, catalog), 1.29);
});

test('compute whose type is no longer in the catalog costs nothing', () => {
  assert.equal(costPerHour({ kind: 'gpu', gpuTypeId: 'NVIDIA B200', gpuCount: 1, cloud: 'SECURE' }, catalog), 0);
  assert.equal(costPerHour({ kind: 'cpu', cpuFlavorId: 'cpu9z', vcpuCount: 2, cloud: 'SECURE' }, catalog), 0);
});
