import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Placement, PlacementRequest } from '../domain/placement-request.js';
import type { Template } from '../domain/template.js';
import type { Endpoint } from '../domain/endpoint.js';
import { workerInstanceSpec, workerPlacementRequests } from './worker-spec.js';
import { defaultCatalog } from '../domain/catalog.js';

test("a launched worker's platform env carries the informational variables of wire-protocol §1 apart from the tenant's template and endpoint env", () => {
  const spec = workerInstanceSpec({
    workerId: 'w123',
    endpoint: { id: 'ep1', env: { RUNPOD_DC_ID: 'from-endpoint', LEVEL: 'debug', MODEL: 'y' } } as unknown as Endpoint,
    template: {
      imageName: 'my-worker:dev',
      args: '',
      env: { RUNPOD_POD_ID: 'from-template', MODEL: 'x', SIZE: 's' },
    } as unknown as Template,
    placement: {
      hostId: 'host-a',
      dataCenterId: 'US-TX-3',
      gpuTypeId: 'NVIDIA GeForce RTX 4090',
      gpuIndices: [0, 1],
    } as unknown as Placement,
    request: { vcpuCount: 0, memoryGb: 0 } as unknown as PlacementRequest,
    apiKey: 'worker-key',
    publicUrl: 'http://127.0.0.1:8080',
    pingIntervalMs: 10_000,
  });
  // the tenant's: the template's env, the endpoint's over it, nothing of the platform's
  assert.deepEqual(spec.env, {
    RUNPOD_DC_ID: 'from-endpoint',
    LEVEL: 'debug',
    MODEL: 'y',
    RUNPOD_POD_ID: 'from-template',
    SIZE: 's',
  });
  const p = spec.platformEnv;
  assert.equal(p.RUNPOD_ENDPOINT_ID, 'ep1');
  assert.equal(p.RUNPOD_POD_ID, 'w123');
  assert.equal(p.RUNPOD_POD_HOSTNAME, 'w123-host-a');
  assert.equal(p.RUNPOD_DC_ID, 'US-TX-3');
  assert.equal(p.RUNPOD_GPU_COUNT, '2');
  assert.equal(p.RUNPOD_AI_API_KEY, 'worker-key');
  assert.equal(p.RUNPOD_SKIP_GPU_CHECK, 'true');
  assert.equal(p.RUNPOD_SKIP_AUTO_SYSTEM_CHECKS, 'true');
  assert.match(p.RUNPOD_WEBHOOK_GET_JOB ?? '', /\/v2\/ep1\/job-take\//);
});

test('a worker given a loopback job URL shares the host network; one given any other URL has its own', () => {
  const spec = (publicUrl: string) =>
    workerInstanceSpec({
      workerId: 'w1',
      endpoint: { id: 'ep1', env: {} } as unknown as Endpoint,
      template: { imageName: 'my-worker:dev', args: '', env: {} } as unknown as Template,
      placement: { hostId: 'host-a', dataCenterId: 'US-TX-3', gpuTypeId: null, gpuIndices: [] } as unknown as Placement,
      request: { vcpuCount: 0, memoryGb: 0 } as unknown as PlacementRequest,
      apiKey: 'k',
      publicUrl,
      pingIntervalMs: 10_000,
    }).networkMode;
  for (const url of [
    'http://127.0.0.1:8080',
    'http://127.10.0.1',
    'http://localhost:8080',
    'http://LOCALHOST',
    'http://api.localhost',
    'http://[::1]:8080',
    'http://[::ffff:127.0.0.1]',
  ])
    assert.equal(spec(url), 'host', url);
  for (const url of [
    'http://10.0.0.5:8080',
    'https://api.example.test',
    'http://[::2]',
    'http://localhost.example.test',
    'not a url',
  ])
    assert.equal(spec(url), 'default', url);
});

test("a worker's placement carries its endpoint's CUDA floor and exact versions", () => {
  const endpoint = {
    gpuIds: ['ADA_24'],
    gpuCount: 1,
    instanceIds: [],
    locations: [],
    allowedCudaVersions: ['12.4', '12.8'],
    minCudaVersion: '12.6',
  } as unknown as Endpoint;
  const template = { containerDiskInGb: 10 } as unknown as Template;
  const [request] = workerPlacementRequests(endpoint, template, null, {
    gpuTypes: [{ id: 'NVIDIA GeForce RTX 4090', pool: 'ADA_24' }] as never,
    cpuFlavors: [],
    dataCenters: [],
  });
  assert.ok(request);
  assert.equal(request.minCudaVersion, '12.6');
  assert.deepEqual(request.allowedCudaVersions, ['12.4', '12.8']);
  assert.deepEqual(request.gpuTypeIds, ['NVIDIA GeForce RTX 4090']);
});

test("a CPU endpoint's worker asks, in its instances' order, for each flavor's vCPUs and memory, in the data centers and countries of its locations", () => {
  const catalog = defaultCatalog();
  const endpoint = {
    gpuIds: [],
    gpuCount: 1,
    instanceIds: ['cpu3g-4-16', 'cpu3c-2-4'],
    locations: ['US-TX-3', 'RO'],
    allowedCudaVersions: [],
    minCudaVersion: null,
  } as unknown as Endpoint;
  const requests = workerPlacementRequests(endpoint, { containerDiskInGb: 5 } as unknown as Template, null, catalog);
  assert.deepEqual(
    requests.map((r) => [r.kind, r.cpuFlavorId, r.vcpuCount, r.memoryGb, r.gpuCount, r.diskGb, r.cloud]),
    [
      ['cpu', 'cpu3g', 4, 16, 0, 5, 'ALL'],
      ['cpu', 'cpu3c', 2, 4, 0, 5, 'ALL'],
    ],
  );
  const romania = catalog.dataCenters.filter((d) => d.country === 'RO').map((d) => d.id);
  assert.deepEqual(requests[0]!.dataCenterIds, ['US-TX-3', ...romania]);
});
