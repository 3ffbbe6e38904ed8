import { test } from 'node:test';
import assert from 'node:assert/strict';
import { instanceSpec } from './instance-spec.js';

test("every instance is told where it runs — data center, GPU count, vCPUs — over its kind's platform env, apart from the tenant's", () => {
  const spec = instanceSpec({
    id: 'i1',
    owner: { kind: 'pod', accountId: 'a' },
    image: 'img',
    args: '',
    env: { RUNPOD_DC_ID: 'the tenant says' },
    platformEnv: { RUNPOD_POD_ID: 'i1', RUNPOD_GPU_COUNT: 'not this' },
    machine: { hostId: 'h1', dataCenterId: 'EU-RO-1', gpuIndices: [2, 3], vcpus: 16, memoryGb: 64, diskGb: 20 },
    ports: [],
    volumes: [],
  });
  assert.deepEqual(spec.platformEnv, {
    RUNPOD_POD_ID: 'i1',
    RUNPOD_DC_ID: 'EU-RO-1',
    RUNPOD_GPU_COUNT: '2',
    RUNPOD_CPU_COUNT: '16',
  });
  assert.deepEqual(spec.env, { RUNPOD_DC_ID: 'the tenant says' });
  assert.deepEqual([spec.hostId, spec.gpuIndices, spec.vcpus, spec.memoryGb, spec.diskGb], ['h1', [2, 3], 16, 64, 20]);
  assert.equal('machine' in spec, false);
});
