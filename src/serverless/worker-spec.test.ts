import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Placement, PlacementRequest } from '../domain/placement.js';
import type { Template } from '../templates/template.js';
import type { Endpoint } from './endpoint.js';
import { workerInstanceSpec } from './worker-spec.js';

test("a launched worker's env carries the informational variables of wire-protocol §1, and the platform's values win over the template's and endpoint's", () => {
  const spec = workerInstanceSpec({
    workerId: 'w123',
    endpoint: { id: 'ep1', env: { RUNPOD_DC_ID: 'from-endpoint', LEVEL: 'debug' } } as unknown as Endpoint,
    template: { imageName: 'my-worker:dev', args: '', env: { RUNPOD_POD_ID: 'from-template', MODEL: 'x' } } as unknown as Template,
    placement: { hostId: 'host-a', dataCenterId: 'US-TX-3', gpuTypeId: 'NVIDIA GeForce RTX 4090', gpuIndices: [0, 1] } as unknown as Placement,
    request: { vcpuCount: 0, memoryGb: 0 } as unknown as PlacementRequest,
    apiKey: 'worker-key',
    volumeHostPath: null,
    publicUrl: 'http://127.0.0.1:8080',
    pingIntervalMs: 10_000,
  });
  assert.equal(spec.env.RUNPOD_ENDPOINT_ID, 'ep1');
  assert.equal(spec.env.RUNPOD_POD_ID, 'w123');
  assert.equal(spec.env.RUNPOD_POD_HOSTNAME, 'w123-host-a');
  assert.equal(spec.env.RUNPOD_DC_ID, 'US-TX-3');
  assert.equal(spec.env.RUNPOD_GPU_COUNT, '2');
  assert.equal(spec.env.MODEL, 'x');
  assert.equal(spec.env.LEVEL, 'debug');
  assert.equal(spec.env.RUNPOD_AI_API_KEY, 'worker-key');
});
