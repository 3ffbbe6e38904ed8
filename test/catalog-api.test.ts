import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';
import type { PlacementRequest } from '../src/domain/placement.js';
import { gpuPlacementRequest } from './support/placement.js';

const RTX4090 = 'NVIDIA GeForce RTX 4090';
const enc = encodeURIComponent;

let t: TestApp;
let key: string;
before(async () => {
  t = await createTestApp();
  key = (await t.newAccount()).readKey;
});
after(() => t.close());

const get = async (url: string) => {
  const res = await t.request(key, 'GET', url);
  return { status: res.statusCode, body: json(res), type: String(res.headers['content-type']) };
};

const gpuRequest = (gpuCount: number): PlacementRequest => gpuPlacementRequest({ gpuCount });

test('the GPU list is wrapped and shows every catalog type with prices and which clouds have it', async () => {
  const { status, body } = await get('/v2/catalog/gpus');
  assert.equal(status, 200);
  assert.equal(body.gpus.length, t.config.catalog.gpuTypes.length);
  const rtx = body.gpus.find((g: { id: string }) => g.id === RTX4090);
  assert.deepEqual(rtx, {
    id: RTX4090,
    displayName: 'RTX 4090',
    manufacturer: 'Nvidia',
    memoryInGb: 24,
    pool: 'ADA_24',
    securePrice: 0.69,
    communityPrice: 0.34,
    secureCloud: true,
    communityCloud: false,
    globalNetworking: true,
  });
  const a4000 = body.gpus.find((g: { id: string }) => g.id === 'NVIDIA RTX A4000');
  assert.equal(a4000.secureCloud, false);
  assert.equal(a4000.communityCloud, true);
  const h100pcie = body.gpus.find((g: { id: string }) => g.id === 'NVIDIA H100 PCIe');
  assert.equal(h100pcie.secureCloud || h100pcie.communityCloud, false);
});

test('include=AVAILABILITY adds stock and the CUDA versions each type is offered with', async () => {
  const { body } = await get('/v2/catalog/gpus?include=AVAILABILITY');
  const rtx = body.gpus.find((g: { id: string }) => g.id === RTX4090);
  assert.deepEqual(rtx.availability, {
    stockStatus: 'High',
    available: 8,
    total: 8,
    maxGpuCount: 8,
    dataCenters: [{ id: 'US-TX-3', available: 8 }],
  });
  assert.deepEqual(rtx.cudaVersions, [{ version: '12.4', available: 8, total: 8 }]);
  const h100pcie = body.gpus.find((g: { id: string }) => g.id === 'NVIDIA H100 PCIe');
  assert.deepEqual(h100pcie.availability, {
    stockStatus: 'None',
    available: 0,
    total: 0,
    maxGpuCount: 0,
    dataCenters: [],
  });
  assert.deepEqual(h100pcie.cudaVersions, []);
});

test('availability falls as GPUs are reserved in the inventory and recovers when they are released', async () => {
  const inventory = t.services.inventory;
  assert.ok(inventory.placeAndReserve('catalog-test-a', gpuRequest(4)).ok);
  assert.ok(inventory.placeAndReserve('catalog-test-b', gpuRequest(2)).ok);
  try {
    const { body } = await get(`/v2/catalog/gpus/${enc(RTX4090)}?include=AVAILABILITY`);
    assert.deepEqual(body.availability, {
      stockStatus: 'Low',
      available: 2,
      total: 8,
      maxGpuCount: 2,
      dataCenters: [{ id: 'US-TX-3', available: 2 }],
    });
    assert.deepEqual(body.cudaVersions, [{ version: '12.4', available: 2, total: 8 }]);
  } finally {
    inventory.release('catalog-test-a');
    inventory.release('catalog-test-b');
  }
  const { body } = await get(`/v2/catalog/gpus/${enc(RTX4090)}?include=AVAILABILITY`);
  assert.equal(body.availability.available, 8);
  assert.equal(body.availability.stockStatus, 'High');
});

test('one GPU type is read by its URL-encoded id, without availability unless asked', async () => {
  const { status, body } = await get(`/v2/catalog/gpus/${enc('NVIDIA H100 80GB HBM3')}`);
  assert.equal(status, 200);
  assert.equal(body.id, 'NVIDIA H100 80GB HBM3');
  assert.equal(body.availability, undefined);
  assert.equal(body.cudaVersions, undefined);
});

test('an unknown catalog id answers 404 problem+json naming it', async () => {
  for (const url of [
    '/v2/catalog/gpus/NVIDIA%20B300',
    '/v2/catalog/cpus/cpu9z',
    '/v2/catalog/datacenters/MARS-1',
    '/v2/catalog/pools/HOPPER_200',
    '/v2/catalog/templates/no-such-template',
  ]) {
    const { status, body, type } = await get(url);
    assert.equal(status, 404, url);
    assert.match(type, /application\/problem\+json/);
    assert.equal(body.code, 'NOT_FOUND');
  }
  assert.match((await get('/v2/catalog/gpus/NVIDIA%20B300')).body.detail, /"NVIDIA B300"/);
});

test('an unknown include value answers 400 naming the parameter', async () => {
  const { status, body, type } = await get('/v2/catalog/gpus?include=PRICES');
  assert.equal(status, 400);
  assert.match(type, /application\/problem\+json/);
  assert.equal(body.code, 'INVALID_PARAMETER');
  assert.match(body.detail, /include/);
});

test('CPU flavors list their vCPU options and per-vCPU prices', async () => {
  const { status, body } = await get('/v2/catalog/cpus');
  assert.equal(status, 200);
  assert.deepEqual(
    body.cpus.map((c: { id: string }) => c.id),
    t.config.catalog.cpuFlavors.map((c) => c.id),
  );
  const one = await get('/v2/catalog/cpus/cpu3c');
  assert.deepEqual(one.body, {
    id: 'cpu3c',
    displayName: 'Compute-Optimized',
    ramMultiplier: 2,
    vcpuOptions: [2, 4, 8, 16, 32],
    securePricePerVcpu: 0.03,
    communityPricePerVcpu: 0.02,
  });
});

test('data centers list the GPU types and CPU flavors their hosts offer', async () => {
  const { status, body } = await get('/v2/catalog/datacenters');
  assert.equal(status, 200);
  assert.equal(body.dataCenters.length, t.config.catalog.dataCenters.length);
  const tx = body.dataCenters.find((d: { id: string }) => d.id === 'US-TX-3');
  assert.deepEqual(tx, {
    id: 'US-TX-3',
    name: 'US-TX-3',
    location: 'United States, Texas',
    country: 'US',
    globalNetworking: true,
    gpuTypes: [RTX4090, 'NVIDIA A100 80GB PCIe', 'NVIDIA H100 80GB HBM3'],
    cpuFlavors: ['cpu3c', 'cpu3g', 'cpu3m'],
  });
  const cz = await get('/v2/catalog/datacenters/EU-CZ-1');
  assert.deepEqual(cz.body.gpuTypes, ['NVIDIA GeForce RTX 3090']);
  assert.deepEqual(cz.body.cpuFlavors, []);
});

test('pools list their GPU types', async () => {
  const { status, body } = await get('/v2/catalog/pools');
  assert.equal(status, 200);
  const ada24 = body.pools.find((p: { id: string }) => p.id === 'ADA_24');
  assert.deepEqual(ada24, { id: 'ADA_24', displayName: '24 GB Ada', memoryInGb: 24, gpuTypes: [RTX4090] });
  assert.deepEqual((await get('/v2/catalog/pools/AMPERE_80')).body.gpuTypes, [
    'NVIDIA A100 80GB PCIe',
    'NVIDIA A100-SXM4-80GB',
  ]);
});

test('public templates are listed wrapped and read one by one', async () => {
  const { status, body } = await get('/v2/catalog/templates');
  assert.equal(status, 200);
  assert.ok(Array.isArray(body.templates));
  for (const template of body.templates) assert.equal(template.public, true);
  const first = body.templates[0];
  if (first) {
    const one = await get(`/v2/catalog/templates/${enc(first.id)}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body, first);
  }
});

test('the catalog needs a key but any scope can read it', async () => {
  assert.equal((await t.request(null, 'GET', '/v2/catalog/gpus')).statusCode, 401);
  assert.equal((await t.request(key, 'GET', '/v2/catalog/datacenters')).statusCode, 200);
});

test('the catalog routes are in the OpenAPI document with the include parameter', async () => {
  const doc = json(await t.request(null, 'GET', '/v2/openapi.json'));
  for (const path of [
    '/v2/catalog/gpus',
    '/v2/catalog/gpus/{id}',
    '/v2/catalog/cpus',
    '/v2/catalog/datacenters',
    '/v2/catalog/pools',
    '/v2/catalog/templates',
    '/v2/catalog/templates/{id}',
  ]) {
    assert.ok(doc.paths[path]?.get, `${path} is missing`);
  }
  const include = doc.paths['/v2/catalog/gpus'].get.parameters.find((p: { name: string }) => p.name === 'include');
  assert.deepEqual(include.schema.enum, ['AVAILABILITY']);
});

test('a host that joins shows in the catalog at once; while unavailable it counts nowhere; once revoked it is gone', async () => {
  const H100 = 'NVIDIA H100 PCIe';
  const inventory = t.services.inventory;
  const h100 = async () => (await get(`/v2/catalog/gpus/${enc(H100)}?include=AVAILABILITY`)).body;
  const cz = async () => (await get('/v2/catalog/datacenters/EU-CZ-1')).body;
  inventory.upsertHost({
    id: 'agent-cz-h100',
    dataCenterId: 'EU-CZ-1',
    cloud: 'COMMUNITY',
    cudaVersion: '12.4',
    gpuTypeId: H100,
    gpuCount: 2,
    cpuFlavors: ['cpu3c'],
    vcpus: 32,
    memoryGb: 256,
    diskGb: 1000,
    portRange: [43000, 43099],
    publicIp: '203.0.113.9',
  });
  try {
    const joined = await h100();
    assert.equal(joined.communityCloud, true);
    assert.deepEqual(joined.availability, {
      stockStatus: 'Low',
      available: 2,
      total: 2,
      maxGpuCount: 2,
      dataCenters: [{ id: 'EU-CZ-1', available: 2 }],
    });
    assert.deepEqual((await cz()).gpuTypes, ['NVIDIA GeForce RTX 3090', H100]);
    assert.deepEqual((await cz()).cpuFlavors, ['cpu3c']);

    inventory.setAvailable('agent-cz-h100', false);
    const away = await h100();
    assert.equal(away.communityCloud, false);
    assert.deepEqual(away.availability, {
      stockStatus: 'None',
      available: 0,
      total: 0,
      maxGpuCount: 0,
      dataCenters: [],
    });
    assert.deepEqual((await cz()).gpuTypes, ['NVIDIA GeForce RTX 3090']);

    inventory.setAvailable('agent-cz-h100', true);
    assert.equal((await h100()).availability.available, 2);
  } finally {
    inventory.removeHost('agent-cz-h100');
  }
  assert.equal((await h100()).communityCloud, false);
  assert.deepEqual((await cz()).gpuTypes, ['NVIDIA GeForce RTX 3090']);
});
