import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../domain/errors.js';
import { cudaRequestOf, gpuMinimumsOf } from './pod-gpu-request.js';

const GPU = 'NVIDIA GeForce RTX 4090';

const conflict = (fn: () => unknown, detail: RegExp): void =>
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, 'CUDA_CONSTRAINT_CONFLICT');
    assert.equal(err.status, 400);
    assert.match(err.detail, detail);
    return true;
  });

test("upstream's gpu.allowedCudaVersions and gpu.minCudaVersion are the seed's top-level constraint, in either place", () => {
  assert.deepEqual(cudaRequestOf({ gpu: { id: GPU, allowedCudaVersions: ['12.8', '12.6'] } }), {
    given: true,
    allowedCudaVersions: ['12.8', '12.6'],
    minCudaVersion: null,
  });
  assert.deepEqual(cudaRequestOf({ gpu: { id: GPU, minCudaVersion: '12.1' } }), {
    given: true,
    allowedCudaVersions: [],
    minCudaVersion: '12.1',
  });
  assert.deepEqual(cudaRequestOf({ gpu: { id: GPU } }), {
    given: false,
    allowedCudaVersions: [],
    minCudaVersion: null,
  });
  // the same value in both places is one constraint
  assert.deepEqual(
    cudaRequestOf({ gpu: { id: GPU, allowedCudaVersions: ['12.4', '12.8'] }, allowedCudaVersions: ['12.8', '12.4'] })
      .allowedCudaVersions,
    ['12.8', '12.4'],
  );
  assert.equal(
    cudaRequestOf({ gpu: { id: GPU, minCudaVersion: '12.4' }, minCudaVersion: '12.4' }).minCudaVersion,
    '12.4',
  );
});

test('inside gpu an empty allowedCudaVersions states no constraint and may go with a minimum; a non-empty one may not', () => {
  assert.deepEqual(cudaRequestOf({ gpu: { id: GPU, allowedCudaVersions: [], minCudaVersion: '12.4' } }), {
    given: true,
    allowedCudaVersions: [],
    minCudaVersion: '12.4',
  });
  conflict(
    () => cudaRequestOf({ gpu: { id: GPU, allowedCudaVersions: ['12.4'], minCudaVersion: '12.4' } }),
    /one of them/,
  );
  // at the top level the seed makes the two fields exclusive, empty list or not
  conflict(() => cudaRequestOf({ gpu: { id: GPU }, allowedCudaVersions: [], minCudaVersion: '12.4' }), /not both/);
});

test('a constraint that differs between the top level and gpu is refused naming both places', () => {
  conflict(
    () => cudaRequestOf({ gpu: { id: GPU, allowedCudaVersions: ['12.8'] }, allowedCudaVersions: ['12.4'] }),
    /"allowedCudaVersions" \[12\.4\] and "gpu\.allowedCudaVersions" \[12\.8\] differ/,
  );
  conflict(
    () => cudaRequestOf({ gpu: { id: GPU, minCudaVersion: '12.8' }, minCudaVersion: '12.4' }),
    /"minCudaVersion" 12\.4 and "gpu\.minCudaVersion" 12\.8 differ/,
  );
  conflict(
    () => cudaRequestOf({ gpu: { id: GPU, minCudaVersion: '12.8' }, allowedCudaVersions: ['12.4'] }),
    /one of them/,
  );
});

test('per-GPU minimums count once per GPU and never lower a total asked for elsewhere', () => {
  assert.deepEqual(
    gpuMinimumsOf({ id: GPU, count: 2, minVcpuCountPerGpu: 4, minRamPerGpu: 24 }, { vcpus: 0, memoryGb: 0 }),
    {
      vcpus: 8,
      memoryGb: 48,
    },
  );
  assert.deepEqual(gpuMinimumsOf({ id: GPU, minVcpuCountPerGpu: 4 }, { vcpus: 10, memoryGb: 0 }), {
    vcpus: 10,
    memoryGb: 0,
  });
});
