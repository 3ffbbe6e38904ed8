/**
 * Upstream's REST v2 names for a pod's CUDA constraint, inside `gpu` (runpod/docs a900806e,
 * `api-reference-v2/openapi.json`, CreateGpuConfig: `gpu.allowedCudaVersions`, `gpu.minCudaVersion`),
 * beside the seed's top-level ones (spec 2.2), over HTTP on both stores.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { createTestApp, dialects, json, type DialectName } from './support/harness.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const fleet = [
  { id: 'tx', dataCenterId: 'US-TX-3', gpuTypeId: GPU, gpuCount: 4, cudaVersion: '12.4', portRange: [20000, 20999] },
  { id: 'ro', dataCenterId: 'EU-RO-1', gpuTypeId: GPU, gpuCount: 4, cudaVersion: '12.8', portRange: [21000, 21999] },
];

for (const { name, skip } of dialects())
  describe(`the CUDA constraint inside gpu (${name})`, { skip }, () => suite(name));

function suite(dialect: DialectName): void {
  test('gpu.minCudaVersion and gpu.allowedCudaVersions choose the host as the top-level fields do; differing values in both places answer 400', async () => {
    const t = await createTestApp({ dialect, runtime: new FakeRuntime(), file: { fleet } });
    try {
      const { key } = await t.newAccount();
      const create = (extra: Record<string, unknown>, gpu: Record<string, unknown> = {}) =>
        t.request(key, 'POST', '/v2/pods', {
          name: 'pytorch-training',
          image: 'runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404',
          gpu: { id: GPU, count: 1, ...gpu },
          disk: 50,
          ...extra,
        });
      const placedIn = async (extra: Record<string, unknown>, gpu: Record<string, unknown>) => {
        const res = await create(extra, gpu);
        assert.equal(res.statusCode, 201, res.body);
        return [json(res).dataCenterId, json(res).cudaVersion];
      };
      assert.deepEqual(await placedIn({}, { minCudaVersion: '12.8' }), ['EU-RO-1', '12.8']);
      assert.deepEqual(await placedIn({}, { allowedCudaVersions: ['12.4'] }), ['US-TX-3', '12.4']);
      assert.deepEqual(await placedIn({}, { allowedCudaVersions: [], minCudaVersion: '12.6' }), ['EU-RO-1', '12.8']);
      assert.deepEqual(await placedIn({ minCudaVersion: '12.8' }, { minCudaVersion: '12.8' }), ['EU-RO-1', '12.8']);
      const none = await create({}, { allowedCudaVersions: ['13.0'] });
      assert.equal(none.statusCode, 400, none.body);
      assert.equal(json(none).code, 'NO_CAPACITY');

      for (const [extra, gpu, detail] of [
        [{ minCudaVersion: '12.4' }, { minCudaVersion: '12.8' }, /"gpu\.minCudaVersion" 12\.8 differ/],
        [
          { allowedCudaVersions: ['12.4'] },
          { allowedCudaVersions: ['12.8'] },
          /"gpu\.allowedCudaVersions" \[12\.8\] differ/,
        ],
        [{}, { allowedCudaVersions: ['12.4'], minCudaVersion: '12.4' }, /cannot go together/],
      ] as const) {
        const res = await create(extra, gpu);
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(json(res).code, 'CUDA_CONSTRAINT_CONFLICT');
        assert.match(json(res).detail, detail);
      }
    } finally {
      await t.close();
    }
  });
}
