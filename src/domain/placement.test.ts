import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultCatalog, type Host } from './catalog.js';
import { place, type FleetSnapshot, type HostUsage } from './placement.js';
import type { PlacementRequest, PlacementResult } from './placement-request.js';
import { gpuPlacementRequest } from '../../test/support/placement.js';

const catalog = defaultCatalog();
const RTX4090 = 'NVIDIA GeForce RTX 4090';
const A5000 = 'NVIDIA RTX A5000';
const A4000 = 'NVIDIA RTX A4000';

function testHost(id: string, fields: Partial<Host> = {}): Host {
  return {
    id,
    dataCenterId: 'US-TX-3',
    cloud: 'SECURE',
    cudaVersion: '12.4',
    gpuTypeId: RTX4090,
    gpuCount: 8,
    cpuFlavors: [],
    vcpus: 64,
    memoryGb: 512,
    diskGb: 2000,
    portRange: [20000, 20009],
    publicIp: '127.0.0.1',
    ...fields,
  };
}

const gpuRequest = gpuPlacementRequest;

const cpuRequest = (fields: Partial<PlacementRequest> = {}): PlacementRequest =>
  gpuRequest({ kind: 'cpu', gpuTypeIds: [], gpuCount: 0, cpuFlavorId: 'cpu3c', vcpuCount: 4, memoryGb: 8, ...fields });

const usage = (fields: Partial<HostUsage> = {}): HostUsage => ({
  gpuIndices: new Set(),
  vcpus: 0,
  memoryGb: 0,
  diskGb: 0,
  ports: new Set(),
  ...fields,
});

const fleet = (hosts: Host[], used: Record<string, Partial<HostUsage>> = {}): FleetSnapshot => ({
  hosts,
  usage: new Map(Object.entries(used).map(([id, u]) => [id, usage(u)])),
  catalog,
});

function placed(result: PlacementResult) {
  assert.ok(result.ok, result.ok ? '' : result.reason);
  return result.placement;
}

function refused(result: PlacementResult): string {
  assert.equal(result.ok, false, 'expected a refusal');
  return result.ok ? '' : result.reason;
}

test('a GPU pod gets the lowest free GPU indices and the lowest free public ports of its host', () => {
  const snapshot = fleet([testHost('h1')], { h1: { gpuIndices: new Set([0, 2]), ports: new Set([20000, 20002]) } });
  const p = placed(place(gpuRequest({ gpuCount: 2, portCount: 3 }), snapshot));
  assert.equal(p.hostId, 'h1');
  assert.deepEqual(p.gpuIndices, [1, 3]);
  assert.deepEqual(p.publicPorts, [20001, 20003, 20004]);
  assert.equal(p.gpuTypeId, RTX4090);
  assert.equal(p.cudaVersion, '12.4');
  assert.equal(p.dataCenterId, 'US-TX-3');
});

test('a request for a GPU type no host offers is refused naming the type', () => {
  const reason = refused(place(gpuRequest({ gpuTypeIds: ['NVIDIA H100 PCIe'] }), fleet([testHost('h1')])));
  assert.equal(reason, 'No host offers GPU type "NVIDIA H100 PCIe"');
});

test('a SECURE request for a GPU type only community hosts offer is refused naming the cloud, and ALL accepts it', () => {
  const snapshot = fleet([testHost('h1', { gpuTypeId: A4000, cloud: 'COMMUNITY' })]);
  const reason = refused(place(gpuRequest({ gpuTypeIds: [A4000] }), snapshot));
  assert.equal(reason, `No SECURE cloud host offers "${A4000}" (it is offered in COMMUNITY cloud)`);
  assert.equal(placed(place(gpuRequest({ gpuTypeIds: [A4000], cloud: 'ALL' }), snapshot)).cloud, 'COMMUNITY');
});

test('preferred data centers exclude hosts elsewhere, and a list without the type is refused naming the list', () => {
  const snapshot = fleet([testHost('tx'), testHost('ca', { dataCenterId: 'US-CA-2' })]);
  assert.equal(placed(place(gpuRequest({ dataCenterIds: ['US-CA-2'] }), snapshot)).hostId, 'ca');
  const reason = refused(place(gpuRequest({ dataCenterIds: ['EU-RO-1'] }), snapshot));
  assert.equal(reason, `No data center among [EU-RO-1] has "${RTX4090}" (available in US-CA-2, US-TX-3)`);
});

test('an earlier preferred data center wins over a tighter fit in a later one', () => {
  const snapshot = fleet([testHost('tx'), testHost('ca', { dataCenterId: 'US-CA-2' })], {
    ca: { gpuIndices: new Set([0, 1, 2, 3, 4, 5, 6]) },
  });
  assert.equal(placed(place(gpuRequest({ dataCenterIds: ['US-TX-3', 'US-CA-2'] }), snapshot)).hostId, 'tx');
  assert.equal(placed(place(gpuRequest({ dataCenterIds: ['US-CA-2', 'US-TX-3'] }), snapshot)).hostId, 'ca');
});

test('a network volume pins the pod to its data center, and one where the type is missing is refused naming it', () => {
  const snapshot = fleet([testHost('tx'), testHost('cz', { dataCenterId: 'EU-CZ-1', gpuTypeId: A5000 })]);
  assert.equal(
    placed(place(gpuRequest({ gpuTypeIds: [RTX4090, A5000], volumeDataCenterId: 'EU-CZ-1' }), snapshot)).hostId,
    'cz',
  );
  const reason = refused(place(gpuRequest({ volumeDataCenterId: 'EU-CZ-1' }), snapshot));
  assert.equal(reason, `Network volume is in EU-CZ-1, where no host offers "${RTX4090}"`);
});

test('a network volume outside the preferred data centers is refused saying so', () => {
  const snapshot = fleet([testHost('tx'), testHost('cz', { dataCenterId: 'EU-CZ-1' })]);
  const reason = refused(place(gpuRequest({ dataCenterIds: ['US-TX-3'], volumeDataCenterId: 'EU-CZ-1' }), snapshot));
  assert.equal(reason, 'Network volume is in EU-CZ-1, which is not among the requested data centers [US-TX-3]');
});

test('a request for CUDA 13.0 on a fleet without it is refused naming the CUDA constraint and the versions on offer', () => {
  const snapshot = fleet([
    testHost('h1'),
    testHost('h2', { cudaVersion: '12.2' }),
    testHost('h3', { gpuTypeId: A5000, cudaVersion: '13.0' }),
  ]);
  const reason = refused(place(gpuRequest({ allowedCudaVersions: ['13.0'] }), snapshot));
  assert.equal(reason, `No host with "${RTX4090}" reports CUDA 13.0 (available: 12.2, 12.4)`);
});

test('allowed CUDA versions match exactly', () => {
  const snapshot = fleet([testHost('a', { cudaVersion: '12.8' }), testHost('b', { cudaVersion: '12.4' })]);
  assert.equal(placed(place(gpuRequest({ allowedCudaVersions: ['12.4'] }), snapshot)).hostId, 'b');
  assert.equal(placed(place(gpuRequest({ allowedCudaVersions: ['12.2', '12.8'] }), snapshot)).hostId, 'a');
});

test('a minimum CUDA version is a numeric bound and a bare major accepts any release of it', () => {
  const snapshot = fleet([
    testHost('a', { cudaVersion: '11.8' }),
    testHost('b', { cudaVersion: '12.0' }),
    testHost('c', { cudaVersion: '12.10' }),
  ]);
  assert.equal(placed(place(gpuRequest({ minCudaVersion: '12' }), snapshot)).hostId, 'b');
  assert.equal(placed(place(gpuRequest({ minCudaVersion: '12.9' }), snapshot)).hostId, 'c');
  assert.equal(
    refused(place(gpuRequest({ minCudaVersion: '13' }), snapshot)),
    `No host with "${RTX4090}" reports CUDA 13.0 or newer (available: 11.8, 12.0, 12.10)`,
  );
});

test('a host that reports no CUDA version never satisfies a CUDA constraint', () => {
  const snapshot = fleet([testHost('a', { cudaVersion: null })]);
  assert.equal(placed(place(gpuRequest(), snapshot)).cudaVersion, null);
  assert.equal(
    refused(place(gpuRequest({ minCudaVersion: '11' }), snapshot)),
    `No host with "${RTX4090}" reports CUDA 11.0 or newer (available: none reported)`,
  );
});

test('a request for more GPUs than any host has is refused naming the largest host', () => {
  const reason = refused(place(gpuRequest({ gpuCount: 10 }), fleet([testHost('a'), testHost('b', { gpuCount: 4 })])));
  assert.equal(reason, `No host with "${RTX4090}" has 10 GPUs (the most on one host is 8)`);
});

test('when every GPU of the type is taken the refusal says so, naming the data center and the count requested', () => {
  const all = new Set([0, 1, 2, 3, 4, 5, 6, 7]);
  const reason = refused(
    place(gpuRequest({ gpuCount: 2 }), fleet([testHost('demo-tx-4090-a')], { 'demo-tx-4090-a': { gpuIndices: all } })),
  );
  assert.equal(reason, `All 8 "${RTX4090}" GPUs in US-TX-3 are in use (requested 2)`);
});

test('when GPUs are free but scattered the refusal names the most free on one host', () => {
  const snapshot = fleet([testHost('a', { gpuCount: 4 }), testHost('b', { gpuCount: 4 })], {
    a: { gpuIndices: new Set([0, 1]) },
    b: { gpuIndices: new Set([0, 1, 2]) },
  });
  assert.equal(
    refused(place(gpuRequest({ gpuCount: 3 }), snapshot)),
    `No host with "${RTX4090}" has 3 free GPUs (the most free on one host is 2)`,
  );
});

test('GPU pods also need the vCPUs and memory their GPUs come with, disk and ports, and each shortage is named as the constraint', () => {
  // 2 GPUs, 16 vCPUs, 64 GB: a GPU's share is 8 vCPUs and 32 GB; an RTX 4090 comes with 6 and 48
  const host = (fields: Partial<Host> = {}) =>
    testHost('a', { gpuCount: 2, vcpus: 16, memoryGb: 64, diskGb: 100, portRange: [30000, 30001], ...fields });
  const where = `1 free "${RTX4090}" GPUs`;
  const empty = fleet([host()]);
  assert.equal(
    refused(place(gpuRequest({ vcpuCount: 12, memoryGb: 0 }), empty)),
    `No host with ${where} can give 1 GPU the 12 vCPUs asked for: CPUs are the constraint (a host gives each GPU its share of its vCPUs; the largest share of 1 GPU is 8 vCPUs)`,
  );
  assert.equal(
    refused(place(gpuRequest({ vcpuCount: 0, memoryGb: 40 }), empty)),
    `No host with ${where} can give 1 GPU the 40 GB of memory asked for: memory is the constraint (a host gives each GPU its share of its memory; the largest share of 1 GPU is 32 GB)`,
  );
  const busy = (u: Partial<HostUsage>) => fleet([host()], { a: u });
  assert.equal(
    refused(place(gpuRequest({ vcpuCount: 0, memoryGb: 0 }), busy({ vcpus: 12 }))),
    `No host with ${where} has the vCPUs its GPUs come with free: CPUs are the constraint, the host ran out of CPUs before GPUs (1 GPU comes with at least 6 vCPUs; the most free is 4)`,
  );
  assert.equal(
    refused(place(gpuRequest({ vcpuCount: 0, memoryGb: 0 }), busy({ memoryGb: 40 }))),
    `No host with ${where} has the memory its GPUs come with free: memory is the constraint, the host ran out of memory before GPUs (1 GPU comes with at least 32 GB; the most free is 24 GB)`,
  );
  assert.equal(
    refused(place(gpuRequest({ diskGb: 60 }), busy({ diskGb: 50 }))),
    `No host with ${where} has 60 GB of free disk (the most is 50 GB)`,
  );
  assert.equal(
    refused(place(gpuRequest({ portCount: 2 }), busy({ ports: new Set([30000]) }))),
    `No host with ${where} has 2 free public ports (the most is 1)`,
  );
  const fits = placed(
    place(
      gpuRequest({ vcpuCount: 0, memoryGb: 0, diskGb: 50, portCount: 1 }),
      busy({ vcpus: 10, memoryGb: 32, diskGb: 50, ports: new Set([30000]) }),
    ),
  );
  assert.deepEqual([fits.publicPorts, fits.vcpus, fits.memoryGb], [[30001], 6, 32]);
});

test("a GPU pod is given its type's per-GPU default or the minimum it asks, whichever is larger, capped by its host's share", () => {
  // 8 GPUs, 64 vCPUs, 512 GB: a GPU's share is 8 vCPUs and 64 GB; an RTX 4090 comes with 6 and 48
  const snapshot = fleet([testHost('a')]);
  const allot = (fields: Partial<PlacementRequest>) => {
    const p = placed(place(gpuRequest({ vcpuCount: 0, memoryGb: 0, ...fields }), snapshot));
    return [p.vcpus, p.memoryGb];
  };
  assert.deepEqual(allot({}), [6, 48], 'the default of one GPU');
  assert.deepEqual(allot({ gpuCount: 2 }), [12, 96], 'the default per GPU, times the GPUs');
  assert.deepEqual(allot({ vcpuCount: 7, memoryGb: 60 }), [7, 60], 'a larger minimum is given');
  assert.deepEqual(allot({ vcpuCount: 2, memoryGb: 8 }), [6, 48], 'a smaller minimum gets the default');
  assert.deepEqual(allot({ vcpuCount: 8, memoryGb: 64 }), [8, 64], 'a minimum of exactly the share fits');
  // A type whose default is more than a host's share gets the share: an H100 SXM comes with 20 and 192.
  const h100 = fleet([testHost('h', { gpuTypeId: 'NVIDIA H100 80GB HBM3', vcpus: 128, memoryGb: 1024 })]);
  const capped = placed(place(gpuRequest({ gpuTypeIds: ['NVIDIA H100 80GB HBM3'], vcpuCount: 0, memoryGb: 0 }), h100));
  assert.deepEqual([capped.vcpus, capped.memoryGb], [16, 128]);
  // A CPU pod keeps its own figures.
  const cpu = placed(
    place(cpuRequest(), fleet([testHost('c', { gpuTypeId: null, gpuCount: 0, cpuFlavors: ['cpu3c'] })])),
  );
  assert.deepEqual([cpu.vcpus, cpu.memoryGb], [4, 8]);
});

test("hosts of one GPU type differ: each gives a GPU its own share, and a minimum above a host's share skips that host", () => {
  // Same type, data center and GPU count. 'a-small': 16 vCPUs and 64 GB (4 and 16 per GPU);
  // 'b-large': 64 and 512 (16 and 128 per GPU). An RTX 4090 comes with 6 vCPUs and 48 GB.
  const snapshot = fleet([
    testHost('a-small', { gpuCount: 4, vcpus: 16, memoryGb: 64 }),
    testHost('b-large', { gpuCount: 4, vcpus: 64, memoryGb: 512 }),
  ]);
  const get = (fields: Partial<PlacementRequest>) => {
    const p = placed(place(gpuRequest({ vcpuCount: 0, memoryGb: 0, ...fields }), snapshot));
    return [p.hostId, p.vcpus, p.memoryGb];
  };
  assert.deepEqual(get({}), ['a-small', 4, 16], "the first host by id, its share capping the type's default");
  assert.deepEqual(get({ gpuCount: 2 }), ['a-small', 8, 32], 'the share of 2 GPUs is twice one');
  assert.deepEqual(get({ vcpuCount: 10 }), ['b-large', 10, 48], 'a minimum above the small share skips that host');
  assert.deepEqual(get({ memoryGb: 100 }), ['b-large', 6, 100]);
});

test('GPU types are tried in the order requested, even when a later one would fit tighter', () => {
  const snapshot = fleet([testHost('a5000', { gpuTypeId: A5000, gpuCount: 1 }), testHost('rtx', { gpuCount: 8 })]);
  assert.equal(placed(place(gpuRequest({ gpuTypeIds: [RTX4090, A5000] }), snapshot)).hostId, 'rtx');
  assert.equal(placed(place(gpuRequest({ gpuTypeIds: [A5000, RTX4090] }), snapshot)).hostId, 'a5000');
});

test('a later GPU type is used when the preferred one is full', () => {
  const snapshot = fleet([testHost('a5000', { gpuTypeId: A5000 }), testHost('rtx', { gpuCount: 1 })], {
    rtx: { gpuIndices: new Set([0]) },
  });
  assert.equal(placed(place(gpuRequest({ gpuTypeIds: [RTX4090, A5000] }), snapshot)).gpuTypeId, A5000);
});

test('among hosts that fit, the one left with the fewest free GPUs is chosen to keep whole hosts free', () => {
  const snapshot = fleet([testHost('a'), testHost('b'), testHost('c')], {
    a: { gpuIndices: new Set([0]) },
    b: { gpuIndices: new Set([0, 1, 2, 3, 4]) },
    c: { gpuIndices: new Set([0, 1, 2, 3, 4, 5, 6]) },
  });
  assert.equal(placed(place(gpuRequest({ gpuCount: 2 }), snapshot)).hostId, 'b');
  assert.equal(placed(place(gpuRequest({ gpuCount: 1 }), snapshot)).hostId, 'c');
  assert.equal(placed(place(gpuRequest({ gpuCount: 7 }), snapshot)).hostId, 'a');
});

test('equal candidates are broken by host id so the answer is deterministic', () => {
  const snapshot = fleet([testHost('m'), testHost('b'), testHost('x')]);
  assert.equal(placed(place(gpuRequest(), snapshot)).hostId, 'b');
});

test('global networking needs a GPU type and a data center that support it', () => {
  const snapshot = fleet([testHost('ca', { dataCenterId: 'US-CA-2' }), testHost('a5000', { gpuTypeId: A5000 })]);
  assert.equal(
    refused(place(gpuRequest({ gpuTypeIds: [A5000], globalNetworking: true }), snapshot)),
    `"${A5000}" does not support global networking`,
  );
  assert.equal(
    refused(place(gpuRequest({ globalNetworking: true }), snapshot)),
    `No data center with global networking has "${RTX4090}" (it is offered in US-CA-2)`,
  );
  const withTx = fleet([...snapshot.hosts, testHost('tx')]);
  assert.equal(placed(place(gpuRequest({ globalNetworking: true }), withTx)).hostId, 'tx');
});

test('CPU pods go to hosts listing the flavor, tightest on vCPUs, without GPUs or CUDA', () => {
  const snapshot = fleet([
    testHost('big', { gpuTypeId: null, gpuCount: 0, cudaVersion: null, cpuFlavors: ['cpu3c'], vcpus: 64 }),
    testHost('small', { gpuTypeId: null, gpuCount: 0, cudaVersion: null, cpuFlavors: ['cpu3c', 'cpu3g'], vcpus: 8 }),
    testHost('gpu-only'),
  ]);
  const p = placed(place(cpuRequest({ vcpuCount: 8, portCount: 1 }), snapshot));
  assert.equal(p.hostId, 'small');
  assert.deepEqual(p.gpuIndices, []);
  assert.equal(p.gpuTypeId, null);
  assert.equal(p.cudaVersion, null);
  assert.deepEqual(p.publicPorts, [20000]);
  assert.equal(placed(place(cpuRequest({ vcpuCount: 16 }), snapshot)).hostId, 'big');
  assert.equal(refused(place(cpuRequest({ cpuFlavorId: 'cpu3m' }), snapshot)), 'No host offers CPU flavor "cpu3m"');
  assert.equal(
    refused(place(cpuRequest({ vcpuCount: 128 }), snapshot)),
    'No host with CPU flavor "cpu3c" has 128 free vCPUs (the most is 64)',
  );
});

test('the first filter that empties the candidates is the one reported', () => {
  // CUDA excludes every host before the (also exhausted) GPUs are counted
  const snapshot = fleet([testHost('a')], { a: { gpuIndices: new Set([0, 1, 2, 3, 4, 5, 6, 7]) } });
  assert.match(refused(place(gpuRequest({ allowedCudaVersions: ['13.0'] }), snapshot)), /CUDA 13\.0/);
  assert.match(refused(place(gpuRequest(), snapshot)), /are in use/);
});
