import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';
import type { PlacementRequest } from '../src/domain/placement-request.js';
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

const AVAIL = 'include=AVAILABILITY&product=POD';

test('the GPU list is wrapped and shows every catalog type with the v2 fields: name, memory, price (with the spot bid floors), maxCount and which clouds have it', async () => {
  const { status, body } = await get('/v2/catalog/gpus');
  assert.equal(status, 200);
  assert.equal(body.gpus.length, t.config.catalog.gpuTypes.length);
  const rtx = body.gpus.find((g: { id: string }) => g.id === RTX4090);
  assert.deepEqual(rtx, {
    id: RTX4090,
    name: 'RTX 4090',
    pool: 'ADA_24',
    manufacturer: 'NVIDIA',
    memory: 24,
    secure: true,
    community: false,
    price: { secure: 0.69, community: 0.34, serverless: 0.69, secureSpot: 0.276, communitySpot: 0.136 },
    maxCount: { secure: 8, community: 0 },
  });
  const a4000 = body.gpus.find((g: { id: string }) => g.id === 'NVIDIA RTX A4000');
  assert.deepEqual([a4000.secure, a4000.community, a4000.maxCount], [false, true, { secure: 0, community: 4 }]);
  const h100pcie = body.gpus.find((g: { id: string }) => g.id === 'NVIDIA H100 PCIe');
  assert.equal(h100pcie.secure || h100pcie.community, false);
});

test('include=AVAILABILITY with a product adds the level, the data centers and the CUDA versions read from the inventory', async () => {
  const { body } = await get(`/v2/catalog/gpus?${AVAIL}`);
  const rtx = body.gpus.find((g: { id: string }) => g.id === RTX4090);
  assert.equal(rtx.availability, 'HIGH');
  assert.deepEqual(rtx.dataCenters, [{ id: 'US-TX-3', name: 'US-TX-3', availability: 'HIGH' }]);
  assert.deepEqual(rtx.cudaVersions, [{ version: '12.4', available: true }]);
  const h100pcie = body.gpus.find((g: { id: string }) => g.id === 'NVIDIA H100 PCIe');
  assert.equal(h100pcie.availability, 'NONE');
  assert.equal(h100pcie.dataCenters, undefined);
  assert.equal(h100pcie.cudaVersions, undefined);
});

test('availability is read for the SECURE cloud unless cloud says otherwise', async () => {
  const a4000 = `/v2/catalog/gpus/${enc('NVIDIA RTX A4000')}?${AVAIL}`;
  assert.equal((await get(a4000)).body.availability, 'NONE');
  const community = await get(`${a4000}&cloud=COMMUNITY`);
  assert.equal(community.body.availability, 'HIGH');
  assert.deepEqual(community.body.dataCenters, [{ id: 'US-CA-2', name: 'US-CA-2', availability: 'HIGH' }]);
});

test('availability falls as GPUs are reserved in the inventory and recovers when they are released', async () => {
  const inventory = t.services.inventory;
  assert.ok(inventory.placeAndReserve('catalog-test-a', gpuRequest(4)).ok);
  assert.ok(inventory.placeAndReserve('catalog-test-b', gpuRequest(2)).ok);
  try {
    const { body } = await get(`/v2/catalog/gpus/${enc(RTX4090)}?${AVAIL}`);
    assert.equal(body.availability, 'LOW');
    assert.deepEqual(body.dataCenters, [{ id: 'US-TX-3', name: 'US-TX-3', availability: 'LOW' }]);
    assert.deepEqual(body.cudaVersions, [{ version: '12.4', available: true }]);
    // two GPUs are free on one host: a pod of 4 fits nowhere, though the version is still offered
    const four = await get(`/v2/catalog/gpus/${enc(RTX4090)}?${AVAIL}&count=4`);
    assert.equal(four.body.availability, 'NONE');
    assert.equal(four.body.dataCenters, undefined);
    assert.deepEqual(four.body.cudaVersions, [{ version: '12.4', available: false }]);
  } finally {
    inventory.release('catalog-test-a');
    inventory.release('catalog-test-b');
  }
  const { body } = await get(`/v2/catalog/gpus/${enc(RTX4090)}?${AVAIL}`);
  assert.equal(body.availability, 'HIGH');
});

test('countryCodes scope availability: the list drops GPU types with no data center there, the single read answers NONE', async () => {
  const ro = await get(`/v2/catalog/gpus?${AVAIL}&countryCodes=RO,CZ&cloud=COMMUNITY`);
  assert.deepEqual(
    ro.body.gpus.map((g: { id: string }) => g.id),
    ['NVIDIA GeForce RTX 3090', 'NVIDIA RTX A6000', 'NVIDIA L40S'],
  );
  const rtx = await get(`/v2/catalog/gpus/${enc(RTX4090)}?${AVAIL}&countryCodes=FR`);
  assert.equal(rtx.status, 200);
  assert.equal(rtx.body.availability, 'NONE');
  assert.equal(rtx.body.dataCenters, undefined);
});

test('cudaVersions match exactly and minCudaVersion is a numeric floor that accepts a bare major', async () => {
  const rtx = (q: string) => get(`/v2/catalog/gpus/${enc(RTX4090)}?${AVAIL}&${q}`);
  assert.equal((await rtx('cudaVersions=12.4')).body.availability, 'HIGH');
  assert.equal((await rtx('cudaVersions=12.8,13.0')).body.availability, 'NONE');
  assert.equal((await rtx('minCudaVersion=12')).body.availability, 'HIGH');
  assert.equal((await rtx('minCudaVersion=12.10')).body.availability, 'NONE');
});

test("include=AVAILABILITY without product (the seed's own call) answers every product's availability; product stays a filter", async () => {
  // spec 2.2 rule 3: "Valid versions per GPU type are discoverable via GET /v2/catalog/gpus?include=AVAILABILITY"
  const all = await get('/v2/catalog/gpus?include=AVAILABILITY');
  assert.equal(all.status, 200, JSON.stringify(all.body));
  const rtx = all.body.gpus.find((g: { id: string }) => g.id === RTX4090);
  assert.equal(rtx.availability, 'HIGH');
  assert.deepEqual(rtx.cudaVersions, [{ version: '12.4', available: true }]);
  for (const product of ['POD', 'CLUSTER', 'SERVERLESS', 'POD,SERVERLESS'])
    assert.deepEqual((await get(`/v2/catalog/gpus?include=AVAILABILITY&product=${product}`)).body, all.body, product);
  const one = await get(`/v2/catalog/gpus/${enc(RTX4090)}?include=AVAILABILITY`);
  assert.deepEqual(one.body, rtx);
  const cpus = await get('/v2/catalog/cpus/cpu3c?include=AVAILABILITY');
  assert.equal(cpus.status, 200, JSON.stringify(cpus.body));
  assert.deepEqual(cpus.body, (await get('/v2/catalog/cpus/cpu3c?include=AVAILABILITY&product=POD')).body);
  assert.equal((await get('/v2/catalog/gpus?include=AVAILABILITY&product=PODS')).status, 400, 'an unknown product');
});

test('availability filters without include=AVAILABILITY and both CUDA filters at once answer 400 naming the parameter', async () => {
  for (const [url, name] of [
    ['/v2/catalog/gpus?count=2', 'count'],
    ['/v2/catalog/gpus?product=POD', 'product'],
    ['/v2/catalog/gpus?countryCodes=FR', 'countryCodes'],
    [`/v2/catalog/gpus?${AVAIL}&cudaVersions=12.4&minCudaVersion=12`, 'cudaVersions'],
    ['/v2/catalog/cpus?vcpuCount=4', 'vcpuCount'],
    ['/v2/catalog/cpus?include=AVAILABILITY&product=POD&vcpuCount=6', 'vcpuCount'],
  ] as const) {
    const { status, body, type } = await get(url);
    assert.equal(status, 400, url);
    assert.match(type, /application\/problem\+json/);
    assert.match(body.detail, new RegExp(name), url);
  }
});

test('a malformed country code or CUDA version answers 422 naming the parameter', async () => {
  for (const [q, name] of [
    ['countryCodes=fr', 'countryCodes'],
    ['cudaVersions=12', 'cudaVersions'],
    ['minCudaVersion=twelve', 'minCudaVersion'],
  ] as const) {
    const { status, body } = await get(`/v2/catalog/gpus?${AVAIL}&${q}`);
    assert.equal(status, 422, q);
    assert.equal(body.code, 'VALIDATION_FAILED');
    assert.match(body.errors[0], new RegExp(`^${name}:`));
  }
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

test('CPU types show their vCPU range, memory per vCPU and prices, and availability for a vCPU count on request', async () => {
  const { status, body } = await get('/v2/catalog/cpus');
  assert.equal(status, 200);
  assert.deepEqual(
    body.cpus.map((c: { id: string }) => c.id),
    t.config.catalog.cpuFlavors.map((c) => c.id),
  );
  const one = await get('/v2/catalog/cpus/cpu3c');
  assert.deepEqual(one.body, {
    id: 'cpu3c',
    name: 'Compute-Optimized',
    group: 'Gen 3',
    vcpu: { min: 2, max: 32 },
    ramGbPerVcpu: 2,
    price: { securePerVcpu: 0.03, serverlessPerVcpu: 0.03, communityPerVcpu: 0.02 },
  });
  const m = await get('/v2/catalog/cpus/cpu3m?include=AVAILABILITY&product=POD,SERVERLESS&vcpuCount=4');
  assert.equal(m.body.availability, 'HIGH');
  assert.deepEqual(m.body.dataCenters, [{ id: 'US-TX-3', name: 'US-TX-3', availability: 'HIGH' }]);
  // cpu3m offers no 32-vCPU size: nothing can take one
  const big = await get('/v2/catalog/cpus/cpu3m?include=AVAILABILITY&product=POD&vcpuCount=32');
  assert.equal(big.body.availability, 'NONE');
  assert.equal(big.body.dataCenters, undefined);
});

test('CPU availability falls as vCPUs are reserved on the hosts that serve the flavor', async () => {
  const inventory = t.services.inventory;
  const cpuRequest = (vcpuCount: number): PlacementRequest => ({
    ...gpuPlacementRequest({ gpuCount: 0 }),
    kind: 'cpu',
    gpuTypeIds: [],
    cpuFlavorId: 'cpu3m',
    vcpuCount,
    memoryGb: vcpuCount * 8,
  });
  const level = async () =>
    (await get('/v2/catalog/cpus/cpu3m?include=AVAILABILITY&product=POD&vcpuCount=16')).body.availability;
  assert.equal(await level(), 'HIGH');
  assert.ok(inventory.placeAndReserve('catalog-cpu-a', cpuRequest(32)).ok);
  assert.ok(inventory.placeAndReserve('catalog-cpu-b', cpuRequest(16)).ok);
  try {
    assert.equal(await level(), 'LOW');
  } finally {
    inventory.release('catalog-cpu-a');
    inventory.release('catalog-cpu-b');
  }
  assert.equal(await level(), 'HIGH');
});

test('data centers show region, global networking, volume types and compliance, and the stock of what their hosts offer on request', async () => {
  const { status, body } = await get('/v2/catalog/datacenters');
  assert.equal(status, 200);
  assert.equal(body.dataCenters.length, t.config.catalog.dataCenters.length);
  const tx = body.dataCenters.find((d: { id: string }) => d.id === 'US-TX-3');
  assert.deepEqual(tx, {
    id: 'US-TX-3',
    name: 'US-TX-3',
    region: 'NORTH_AMERICA',
    globalNetwork: true,
    networkVolumeTypes: ['STANDARD'],
    compliance: [],
  });
  const cz = await get('/v2/catalog/datacenters/EU-CZ-1?include=GPU_AVAILABILITY,CPU_AVAILABILITY');
  assert.deepEqual(cz.body.gpuAvailability, [
    { id: 'NVIDIA GeForce RTX 3090', name: 'RTX 3090', availability: 'HIGH' },
  ]);
  assert.equal(cz.body.cpuAvailability, undefined, 'EU-CZ-1 serves no CPU flavor');
  const txCpu = await get('/v2/catalog/datacenters/US-TX-3?include=CPU_AVAILABILITY');
  assert.deepEqual(
    txCpu.body.cpuAvailability.map((c: { id: string }) => c.id),
    ['cpu3c', 'cpu3g', 'cpu3m'],
  );
  assert.equal(txCpu.body.gpuAvailability, undefined);
});

test('data center filters: regions is any of, networkVolumeTypes and compliance all of, globalNetwork exact', async () => {
  const ids = async (q: string) =>
    (await get(`/v2/catalog/datacenters?${q}`)).body.dataCenters.map((d: { id: string }) => d.id);
  assert.deepEqual(await ids('regions=EUROPE'), ['EU-RO-1', 'EU-CZ-1']);
  assert.deepEqual(await ids('regions=ASIA,NORTH_AMERICA'), ['US-TX-3', 'US-CA-2']);
  assert.deepEqual(await ids('globalNetwork=true'), ['US-TX-3', 'EU-RO-1']);
  assert.deepEqual(await ids('regions=EUROPE&globalNetwork=false'), ['EU-CZ-1']);
  assert.deepEqual(await ids('networkVolumeTypes=STANDARD'), ['US-TX-3', 'US-CA-2', 'EU-RO-1', 'EU-CZ-1']);
  assert.deepEqual(await ids('networkVolumeTypes=STANDARD,HIGH_PERFORMANCE'), []);
  assert.deepEqual(await ids('compliance=GDPR'), []);
  assert.equal((await get('/v2/catalog/datacenters?regions=MARS')).status, 400);
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

test('public templates are listed by source: official (the default) is what Gantry ships, verified is empty', async () => {
  const { status, body } = await get('/v2/catalog/templates');
  assert.equal(status, 200);
  assert.ok(body.templates.length > 0);
  for (const template of body.templates) assert.equal(template.public, true);
  assert.deepEqual((await get('/v2/catalog/templates?source=official')).body, body);
  assert.deepEqual((await get('/v2/catalog/templates?source=verified')).body.templates, []);
  assert.deepEqual((await get('/v2/catalog/templates?source=community')).body.templates, []);
  assert.equal((await get('/v2/catalog/templates?source=mine')).status, 400);
  const first = body.templates[0];
  const one = await get(`/v2/catalog/templates/${enc(first.id)}`);
  assert.equal(one.status, 200);
  assert.deepEqual(one.body, first);
});

test('the catalog needs a key but any scope can read it', async () => {
  assert.equal((await t.request(null, 'GET', '/v2/catalog/gpus')).statusCode, 401);
  assert.equal((await t.request(key, 'GET', '/v2/catalog/datacenters')).statusCode, 200);
});

test('the catalog routes are in the OpenAPI document with their query parameters', async () => {
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
  assert.deepEqual(include.schema.items.enum, ['AVAILABILITY']);
  const names = doc.paths['/v2/catalog/gpus'].get.parameters.map((p: { name: string }) => p.name);
  for (const name of ['product', 'count', 'cloud', 'countryCodes', 'cudaVersions', 'minCudaVersion'])
    assert.ok(names.includes(name), name);
});

test('a host that joins shows in the catalog at once; while unavailable it counts nowhere; once revoked it is gone', async () => {
  const H100 = 'NVIDIA H100 PCIe';
  const inventory = t.services.inventory;
  const h100 = async () => (await get(`/v2/catalog/gpus/${enc(H100)}?${AVAIL}&cloud=COMMUNITY`)).body;
  const cz = async () => (await get('/v2/catalog/datacenters/EU-CZ-1?include=GPU_AVAILABILITY,CPU_AVAILABILITY')).body;
  const ids = (list: Array<{ id: string }> | undefined) => (list ?? []).map((x) => x.id);
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
    assert.equal(joined.community, true);
    assert.deepEqual(joined.maxCount, { secure: 0, community: 2 });
    assert.equal(joined.availability, 'LOW');
    assert.deepEqual(joined.dataCenters, [{ id: 'EU-CZ-1', name: 'EU-CZ-1', availability: 'LOW' }]);
    assert.deepEqual(ids((await cz()).gpuAvailability), ['NVIDIA GeForce RTX 3090', H100]);
    assert.deepEqual(ids((await cz()).cpuAvailability), ['cpu3c']);

    inventory.setAvailable('agent-cz-h100', false);
    const away = await h100();
    assert.equal(away.community, false);
    assert.equal(away.availability, 'NONE');
    assert.equal(away.dataCenters, undefined);
    assert.deepEqual(ids((await cz()).gpuAvailability), ['NVIDIA GeForce RTX 3090']);

    inventory.setAvailable('agent-cz-h100', true);
    assert.equal((await h100()).availability, 'LOW');
  } finally {
    inventory.removeHost('agent-cz-h100');
  }
  assert.equal((await h100()).community, false);
  assert.deepEqual(ids((await cz()).gpuAvailability), ['NVIDIA GeForce RTX 3090']);
});
