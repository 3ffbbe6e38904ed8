import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareCudaVersions, cudaAccepts, cudaCode, cudaRule, describeCudaRule } from './cuda.js';

const rule = (allowedCudaVersions: string[], minCudaVersion: string | null = null) =>
  cudaRule({ allowedCudaVersions, minCudaVersion });
const accepts = (host: string | null, allowed: string[], min: string | null = null) =>
  cudaAccepts(rule(allowed, min), cudaCode(host));

test('versions compare numerically, so 12.10 is newer than 12.9', () => {
  assert.ok(cudaCode('12.10') > cudaCode('12.9'));
  assert.deepEqual(['12.10', '11.8', '12.9', '12.4'].sort(compareCudaVersions), ['11.8', '12.4', '12.9', '12.10']);
});

test('allowed versions match exactly on major.minor', () => {
  assert.equal(accepts('12.4', ['12.4']), true);
  assert.equal(accepts('12.4', ['12.2', '12.8']), false);
  assert.equal(accepts('12.40', ['12.4']), false);
});

test('a minimum version is a numeric lower bound', () => {
  assert.equal(accepts('12.4', [], '12.4'), true);
  assert.equal(accepts('12.8', [], '12.4'), true);
  assert.equal(accepts('12.2', [], '12.4'), false);
  assert.equal(accepts('13.0', [], '12.9'), true);
});

test('a bare major minimum accepts every release of that major and newer', () => {
  assert.equal(accepts('12.0', [], '12'), true);
  assert.equal(accepts('12.8', [], '12'), true);
  assert.equal(accepts('13.1', [], '12'), true);
  assert.equal(accepts('11.8', [], '12'), false);
});

test('a host that reports no CUDA version satisfies only an unconstrained request', () => {
  assert.equal(accepts(null, []), true);
  assert.equal(accepts(null, ['12.4']), false);
  assert.equal(accepts(null, [], '11'), false);
});

test('the constraint is described the way a user wrote it', () => {
  assert.equal(describeCudaRule({ allowedCudaVersions: ['13.0'], minCudaVersion: null }), 'CUDA 13.0');
  assert.equal(
    describeCudaRule({ allowedCudaVersions: ['12.2', '12.8', '13.0'], minCudaVersion: null }),
    'CUDA 12.2, 12.8 or 13.0',
  );
  assert.equal(describeCudaRule({ allowedCudaVersions: [], minCudaVersion: '13' }), 'CUDA 13.0 or newer');
  assert.equal(describeCudaRule({ allowedCudaVersions: [], minCudaVersion: '12.4' }), 'CUDA 12.4 or newer');
});
