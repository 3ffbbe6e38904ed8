import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { defaultCatalog, defaultFleet, type Cloud, type Host } from '../domain/catalog.js';
import { FakeClock } from '../domain/clock.js';
import { place } from '../domain/placement.js';
import type { PlacementRequest } from '../domain/placement-request.js';
import { Inventory } from './inventory.js';
import { gpuPlacementRequest } from '../../test/support/placement.js';

const catalog = defaultCatalog();
const RTX4090 = 'NVIDIA GeForce RTX 4090';
const A5000 = 'NVIDIA RTX A5000';

const request = (fields: Partial<PlacementRequest> = {}): PlacementRequest =>
  gpuPlacementRequest({ portCount: 1, ...fields });

const demo = () => new Inventory({ hosts: defaultFleet(), catalog });

function placeOk(inventory: Inventory, holder: string, req: PlacementRequest) {
  const result = inventory.placeAndReserve(holder, req);
  assert.ok(result.ok, result.ok ? '' : result.reason);
  return result.placement;
}

test('a reservation holds its GPUs, ports and resources until released', () => {
  const inventory = demo();
  const first = placeOk(inventory, 'pod-1', request({ gpuCount: 2, portCount: 2 }));
  assert.equal(first.hostId, 'demo-tx-4090-a');
  assert.deepEqual(first.gpuIndices, [0, 1]);
  assert.deepEqual(first.publicPorts, [20000, 20001]);
  // the vCPUs and memory of 2 RTX 4090s (6 and 48 each), more than the request's minimum (4 and 16)
  assert.deepEqual(inventory.allocationOf('pod-1'), {
    hostId: 'demo-tx-4090-a',
    gpuIndices: [0, 1],
    vcpus: 12,
    memoryGb: 96,
    diskGb: 20,
    publicPorts: [20000, 20001],
  });
  const second = placeOk(inventory, 'pod-2', request({ gpuCount: 1 }));
  assert.deepEqual(second.gpuIndices, [2]);
  assert.deepEqual(second.publicPorts, [20002]);
  inventory.release('pod-1');
  assert.equal(inventory.allocationOf('pod-1'), undefined);
  const third = placeOk(inventory, 'pod-3', request({ gpuCount: 3 }));
  assert.deepEqual(third.gpuIndices, [0, 1, 3]);
  assert.deepEqual(third.publicPorts, [20000]);
});

test('releasing a holder that holds nothing is a no-op', () => {
  const inventory = demo();
  inventory.release('nobody');
  assert.equal(inventory.gpuStock(RTX4090).available, 8);
});

test('once every GPU of the type is reserved the next request is refused naming the data center', () => {
  const inventory = demo();
  placeOk(inventory, 'a', request({ gpuCount: 8 }));
  const result = inventory.placeAndReserve('b', request({ gpuCount: 2 }));
  assert.deepEqual(result, { ok: false, reason: `All 8 "${RTX4090}" GPUs in US-TX-3 are in use (requested 2)` });
  assert.equal(inventory.allocationOf('b'), undefined);
});

test('a refused re-placement keeps the holder’s previous reservation', () => {
  const inventory = demo();
  placeOk(inventory, 'a', request({ gpuCount: 2 }));
  const result = inventory.placeAndReserve('a', request({ allowedCudaVersions: ['13.0'] }));
  assert.equal(result.ok, false);
  assert.deepEqual(inventory.allocationOf('a')?.gpuIndices, [0, 1]);
  assert.equal(inventory.gpuStock(RTX4090).available, 6);
});

test('a stopped pod restarts on its host with the same GPUs and ports', () => {
  const inventory = demo();
  const allocation = Inventory.allocationFrom(
    placeOk(inventory, 'pod', request({ gpuCount: 2, portCount: 1 })),
    request({ gpuCount: 2 }),
  );
  inventory.release('pod');
  assert.deepEqual(inventory.reserveExact('pod', allocation), { ok: true });
  assert.deepEqual(inventory.allocationOf('pod'), allocation);
  assert.equal(inventory.gpuStock(RTX4090).available, 6);
});

test('restarting on a host whose GPUs were taken meanwhile is refused naming the GPUs', () => {
  const inventory = demo();
  const allocation = Inventory.allocationFrom(
    placeOk(inventory, 'pod', request({ gpuCount: 2, portCount: 0 })),
    request({ gpuCount: 2 }),
  );
  inventory.release('pod');
  placeOk(inventory, 'other', request({ gpuCount: 2, portCount: 0 }));
  assert.deepEqual(inventory.reserveExact('pod', allocation), {
    ok: false,
    reason: 'Host demo-tx-4090-a no longer has GPUs [0,1] free',
  });
  assert.equal(inventory.allocationOf('pod'), undefined);
});

test('restarting is refused naming a taken port, missing vCPUs or a host gone from the fleet', () => {
  const inventory = demo();
  const held = { hostId: 'demo-tx-4090-a', gpuIndices: [4], vcpus: 60, memoryGb: 8, diskGb: 1, publicPorts: [20000] };
  assert.deepEqual(inventory.reserveExact('other', held), { ok: true });
  const base = { hostId: 'demo-tx-4090-a', gpuIndices: [5], vcpus: 4, memoryGb: 1, diskGb: 1, publicPorts: [20000] };
  assert.deepEqual(inventory.reserveExact('p', base), {
    ok: false,
    reason: 'Host demo-tx-4090-a no longer has public ports [20000] free',
  });
  assert.deepEqual(inventory.reserveExact('p', { ...base, publicPorts: [20001], vcpus: 8 }), {
    ok: false,
    reason: 'Host demo-tx-4090-a no longer has 8 vCPUs free (4 free)',
  });
  assert.deepEqual(inventory.reserveExact('p', { ...base, hostId: 'gone' }), {
    ok: false,
    reason: 'Host gone is no longer in the fleet',
  });
  assert.equal(inventory.gpuStock(RTX4090).available, 0, '7 GPUs are free, but not the 6 vCPUs one comes with');
});

test('restoring allocations on server start reproduces the usage place() sees', () => {
  const first = demo();
  placeOk(first, 'a', request({ gpuCount: 3 }));
  placeOk(first, 'b', request({ gpuTypeIds: [A5000], cloud: 'SECURE', gpuCount: 1 }));
  const restored = demo();
  for (const holder of ['a', 'b'])
    assert.deepEqual(restored.reserveExact(holder, first.allocationOf(holder)!), { ok: true });
  assert.deepEqual(
    place(request({ gpuCount: 2 }), restored.snapshot()),
    place(request({ gpuCount: 2 }), first.snapshot()),
  );
});

test('stock counts free GPUs per type, data center and CUDA version, and the largest count placeable on one host', () => {
  const hosts: Host[] = [
    ...defaultFleet(),
    {
      ...defaultFleet()[0]!,
      id: 'extra-ro-4090',
      dataCenterId: 'EU-RO-1',
      cudaVersion: '12.8',
      gpuCount: 4,
      portRange: [40000, 40099],
    },
  ];
  const inventory = new Inventory({ hosts, catalog });
  placeOk(inventory, 'a', request({ gpuCount: 6 }));
  const stock = inventory.gpuStock(RTX4090);
  assert.equal(stock.total, 12);
  assert.equal(stock.available, 6);
  assert.equal(stock.maxGpuCount, 4);
  assert.deepEqual(stock.clouds, ['SECURE']);
  assert.deepEqual(stock.dataCenters, [
    { id: 'EU-RO-1', available: 4, total: 4 },
    { id: 'US-TX-3', available: 2, total: 8 },
  ]);
  assert.deepEqual(stock.cudaVersions, [
    { version: '12.4', available: 2, total: 8 },
    { version: '12.8', available: 4, total: 4 },
  ]);
});

test('CPU pods reserve vCPUs and memory on a host listing the flavor', () => {
  const inventory = demo();
  const cpu = request({ kind: 'cpu', gpuTypeIds: [], gpuCount: 0, cpuFlavorId: 'cpu3m', vcpuCount: 16, memoryGb: 128 });
  const p = placeOk(inventory, 'c1', cpu);
  assert.equal(p.hostId, 'demo-tx-cpu-a');
  for (let i = 2; i <= 4; i++) placeOk(inventory, `c${i}`, cpu);
  const refused = inventory.placeAndReserve('c5', cpu);
  assert.deepEqual(refused, { ok: false, reason: 'No host with CPU flavor "cpu3m" has 16 free vCPUs (the most is 0)' });
});

// --- the indexed Inventory obeys the same rules as place() ----------------------------------

const TYPES = [RTX4090, A5000, 'NVIDIA L40S'];
const DCS = ['US-TX-3', 'US-CA-2', 'EU-RO-1'];
const CUDAS = [null, '11.8', '12.2', '12.4', '12.10'];

const hostArb = fc.record({
  dataCenterId: fc.constantFrom(...DCS),
  cloud: fc.constantFrom<Cloud>('SECURE', 'COMMUNITY'),
  cudaVersion: fc.constantFrom(...CUDAS),
  gpuTypeId: fc.option(fc.constantFrom(...TYPES), { freq: 5 }),
  gpuCount: fc.integer({ min: 1, max: 8 }),
  cpu: fc.boolean(),
  vcpus: fc.constantFrom(8, 16, 32, 48),
  memoryGb: fc.integer({ min: 16, max: 256 }),
  diskGb: fc.integer({ min: 50, max: 500 }),
  ports: fc.integer({ min: 0, max: 6 }),
});

const requestArb = fc.record({
  kind: fc.constantFrom<'gpu' | 'cpu'>('gpu', 'gpu', 'gpu', 'cpu'),
  gpuTypeIds: fc.uniqueArray(fc.constantFrom(...TYPES, 'NVIDIA H100 PCIe'), { minLength: 1, maxLength: 3 }),
  gpuCount: fc.integer({ min: 0, max: 9 }),
  cpuFlavorId: fc.constantFrom('cpu3c', 'cpu3g'),
  vcpuCount: fc.integer({ min: 1, max: 24 }),
  memoryGb: fc.integer({ min: 1, max: 96 }),
  diskGb: fc.integer({ min: 1, max: 200 }),
  cloud: fc.constantFrom<Cloud | 'ALL'>('SECURE', 'COMMUNITY', 'ALL'),
  dataCenterIds: fc.uniqueArray(fc.constantFrom(...DCS), { maxLength: 2 }),
  volumeDataCenterId: fc.option(fc.constantFrom(...DCS), { freq: 4 }),
  cuda: fc.oneof(
    fc.constant({ allowedCudaVersions: [] as string[], minCudaVersion: null as string | null }),
    fc.record({
      allowedCudaVersions: fc.uniqueArray(fc.constantFrom('12.2', '12.4', '12.10', '13.0'), {
        minLength: 1,
        maxLength: 2,
      }),
      minCudaVersion: fc.constant(null),
    }),
    fc.record({
      allowedCudaVersions: fc.constant([] as string[]),
      minCudaVersion: fc.constantFrom('11', '12', '12.3', '12.9', '13'),
    }),
  ),
  portCount: fc.integer({ min: 0, max: 3 }),
  globalNetworking: fc.boolean(),
});

type Step = { op: 'place'; req: PlacementRequest } | { op: 'release'; which: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: requestArb.map((r): Step => {
      const { cuda, ...rest } = r;
      const req: PlacementRequest =
        r.kind === 'gpu'
          ? { ...rest, ...cuda, cpuFlavorId: null }
          : { ...rest, gpuTypeIds: [], gpuCount: 0, allowedCudaVersions: [], minCudaVersion: null };
      return { op: 'place', req };
    }),
  },
  { weight: 1, arbitrary: fc.nat().map((which): Step => ({ op: 'release', which })) },
);

test('the indexed inventory makes the same decision as place() over the same snapshot, placement or refusal', () => {
  fc.assert(
    fc.property(
      fc.array(hostArb, { minLength: 1, maxLength: 12 }),
      fc.array(stepArb, { minLength: 1, maxLength: 40 }),
      (specs, steps) => {
        const hosts: Host[] = specs.map((s, i) => ({
          // ids out of insertion order exercise the id tie-break
          id: `h${(i * 7) % 13}-${i}`,
          dataCenterId: s.dataCenterId,
          cloud: s.cloud,
          cudaVersion: s.gpuTypeId ? s.cudaVersion : null,
          gpuTypeId: s.gpuTypeId,
          gpuCount: s.gpuTypeId ? s.gpuCount : 0,
          cpuFlavors: s.cpu || !s.gpuTypeId ? ['cpu3c'] : [],
          vcpus: s.vcpus,
          memoryGb: s.memoryGb,
          diskGb: s.diskGb,
          portRange: [30000 + i * 10, 30000 + i * 10 + s.ports - 1],
          publicIp: '127.0.0.1',
        }));
        const inventory = new Inventory({ hosts, catalog });
        const holders: string[] = [];
        steps.forEach((step, n) => {
          if (step.op === 'release') {
            if (holders.length === 0) return;
            const [holder] = holders.splice(step.which % holders.length, 1);
            inventory.release(holder!);
            return;
          }
          const expected = place(step.req, inventory.snapshot());
          const actual = inventory.placeAndReserve(`holder-${n}`, step.req);
          assert.deepEqual(actual, expected);
          if (actual.ok) holders.push(`holder-${n}`);
        });
      },
    ),
    { numRuns: 300 },
  );
});

// --- hosts that come and go (the fleet's agents) -------------------------------------------

const joined = (fields: Partial<Host> = {}): Host => ({
  id: 'agent-ro-4090',
  dataCenterId: 'EU-RO-1',
  cloud: 'SECURE',
  cudaVersion: '12.8',
  gpuTypeId: RTX4090,
  gpuCount: 2,
  cpuFlavors: [],
  vcpus: 16,
  memoryGb: 64,
  diskGb: 500,
  portRange: [41000, 41009],
  publicIp: '203.0.113.7',
  ...fields,
});

test('a host that joins is placed on and counted in the stock at once', () => {
  const inventory = demo();
  const before = inventory.version;
  inventory.upsertHost(joined());
  assert.ok(inventory.version > before);
  assert.equal(inventory.gpuStock(RTX4090).total, 10);
  assert.deepEqual(
    inventory.gpuStock(RTX4090).dataCenters.map((d) => d.id),
    ['EU-RO-1', 'US-TX-3'],
  );
  const p = placeOk(inventory, 'pod', request({ dataCenterIds: ['EU-RO-1'], portCount: 1 }));
  assert.deepEqual([p.hostId, p.gpuIndices, p.publicPorts, p.cudaVersion], ['agent-ro-4090', [0], [41000], '12.8']);
  assert.ok(inventory.hosts().some((h) => h.id === 'agent-ro-4090'));
});

test('an unavailable host is skipped by placement and left out of the stock, keeps its allocations, and counts again once available', () => {
  const inventory = new Inventory({ hosts: [joined(), joined({ id: 'agent-ro-4090-b' })], catalog });
  placeOk(inventory, 'pod', request({ gpuCount: 1 }));
  assert.equal(inventory.allocationOf('pod')?.hostId, 'agent-ro-4090');
  assert.equal(inventory.setAvailable('agent-ro-4090', false), true);
  assert.equal(inventory.isAvailable('agent-ro-4090'), false);
  assert.equal(inventory.gpuStock(RTX4090).total, 2, 'only the available host counts');
  assert.deepEqual(
    inventory.availableHosts().map((h) => h.id),
    ['agent-ro-4090-b'],
  );
  assert.equal(placeOk(inventory, 'second', request({ gpuCount: 1 })).hostId, 'agent-ro-4090-b');
  const refused = inventory.placeAndReserve('third', request({ gpuCount: 2 }));
  assert.deepEqual(refused, {
    ok: false,
    reason: `No host with "${RTX4090}" has 2 free GPUs (the most free on one host is 1)`,
  });
  assert.deepEqual(inventory.allocationOf('pod')?.gpuIndices, [0], 'the allocation on the unavailable host is kept');
  assert.ok(inventory.host('agent-ro-4090'), 'the host is still known');
  inventory.setAvailable('agent-ro-4090', true);
  assert.deepEqual(inventory.gpuStock(RTX4090), {
    gpuTypeId: RTX4090,
    total: 4,
    available: 2,
    maxGpuCount: 1,
    clouds: ['SECURE'],
    dataCenters: [{ id: 'EU-RO-1', available: 2, total: 4 }],
    cudaVersions: [{ version: '12.8', available: 2, total: 4 }],
  });
  assert.deepEqual(placeOk(inventory, 'third', request({ gpuCount: 1 })), {
    hostId: 'agent-ro-4090',
    dataCenterId: 'EU-RO-1',
    cloud: 'SECURE',
    gpuTypeId: RTX4090,
    gpuIndices: [1],
    cudaVersion: '12.8',
    publicPorts: [41001],
    // an RTX 4090's 6 vCPUs, and 32 GB: the host's share of its memory per GPU, less than the 48 the type comes with
    vcpus: 6,
    memoryGb: 32,
  });
  assert.equal(inventory.setAvailable('no-such-host', false), false);
});

test('a host past its deadline is out of placement and the stock from the next decision on, without waiting for anyone to look, and its listeners hear of it', async () => {
  const clock = new FakeClock();
  const inventory = new Inventory({ hosts: [joined(), joined({ id: 'agent-ro-4090-b' })], catalog, clock });
  const lapsed: string[][] = [];
  inventory.onLapse((ids) => lapsed.push(ids));
  inventory.reachableUntil('agent-ro-4090', clock.now() + 1_000);
  inventory.reachableUntil('agent-ro-4090-b', clock.now() + 60_000);
  clock.advance(1_000);
  assert.equal(inventory.gpuStock(RTX4090).total, 4, 'at its deadline a host is still in');
  assert.equal(placeOk(inventory, 'first', request({ gpuCount: 1 })).hostId, 'agent-ro-4090');
  const version = inventory.version;
  clock.advance(1);
  assert.equal(
    placeOk(inventory, 'second', request({ gpuCount: 1 })).hostId,
    'agent-ro-4090-b',
    'the first decision past the deadline skips the host',
  );
  assert.ok(inventory.version > version, 'views built from the hosts read them again');
  assert.equal(inventory.gpuStock(RTX4090).total, 2);
  assert.equal(inventory.isAvailable('agent-ro-4090'), false);
  assert.deepEqual(
    inventory.availableHosts().map((h) => h.id),
    ['agent-ro-4090-b'],
  );
  assert.deepEqual(inventory.allocationOf('first')?.hostId, 'agent-ro-4090', 'what it holds is kept');
  await Promise.resolve();
  assert.deepEqual(lapsed, [['agent-ro-4090']], 'told once');
  inventory.reachableUntil('agent-ro-4090', clock.now() + 1_000);
  assert.equal(inventory.isAvailable('agent-ro-4090'), false, 'a later deadline alone does not bring it back');
  inventory.setAvailable('agent-ro-4090', true);
  assert.equal(inventory.gpuStock(RTX4090).total, 4);
  clock.advance(1_001);
  assert.equal(inventory.gpuStock(RTX4090).total, 2, 'back in, its new deadline counts');
  await Promise.resolve();
  assert.deepEqual(lapsed, [['agent-ro-4090'], ['agent-ro-4090']]);
  inventory.removeHost('agent-ro-4090-b');
  clock.advance(3_600_000);
  assert.equal(inventory.gpuStock(RTX4090).total, 0);
  await Promise.resolve();
  assert.equal(lapsed.length, 2, 'a removed host has no deadline left');
});

test('hosts without a deadline, or an inventory without a clock, never lapse', () => {
  const clock = new FakeClock();
  const withClock = new Inventory({ hosts: [joined()], catalog, clock });
  const withoutClock = new Inventory({ hosts: [joined()], catalog });
  withoutClock.reachableUntil('agent-ro-4090', 0);
  clock.advance(365 * 86_400_000);
  assert.equal(withClock.isAvailable('agent-ro-4090'), true);
  assert.equal(withoutClock.isAvailable('agent-ro-4090'), true);
});

test('an exact reservation on an unavailable host succeeds (a restarted server re-reserves what its pods hold) and release gives it back', () => {
  const inventory = new Inventory({ hosts: [joined()], catalog });
  inventory.setAvailable('agent-ro-4090', false);
  const allocation = {
    hostId: 'agent-ro-4090',
    gpuIndices: [1],
    vcpus: 4,
    memoryGb: 8,
    diskGb: 10,
    publicPorts: [41003],
  };
  assert.deepEqual(inventory.reserveExact('pod', allocation), { ok: true });
  inventory.setAvailable('agent-ro-4090', true);
  assert.equal(inventory.gpuStock(RTX4090).available, 1);
  assert.deepEqual(
    placeOk(inventory, 'next', request({ gpuCount: 1, portCount: 4 })).publicPorts,
    [41000, 41001, 41002, 41004],
  );
  inventory.release('pod');
  assert.equal(inventory.gpuStock(RTX4090).available, 1);
  inventory.release('next');
  assert.equal(inventory.gpuStock(RTX4090).available, 2);
});

test('a capacity change keeps the allocations held on the host, counted against its new capacity', () => {
  const inventory = new Inventory({ hosts: [joined({ gpuCount: 4 })], catalog });
  placeOk(inventory, 'a', request({ gpuCount: 2, vcpuCount: 8, portCount: 2 }));
  placeOk(inventory, 'b', request({ gpuCount: 1, vcpuCount: 4 }));
  inventory.upsertHost(joined({ gpuCount: 2, vcpus: 12 }));
  assert.equal(inventory.host('agent-ro-4090')?.gpuCount, 2);
  assert.deepEqual(inventory.allocationOf('b')?.gpuIndices, [2], 'an allocation past the new GPU count is kept');
  assert.equal(inventory.gpuStock(RTX4090).available, 0, 'GPUs 0 and 1 are held; GPU 2 is gone');
  assert.deepEqual(inventory.placeAndReserve('c', request({ kind: 'gpu', gpuCount: 1 })).ok, false);
  inventory.release('a');
  assert.equal(
    inventory.gpuStock(RTX4090).available,
    1,
    "GPUs 0 and 1 are free, but b still holds its 4 vCPUs (its GPU 2 is gone): 8 free, room for one GPU's 6",
  );
  const placed = inventory.placeAndReserve('c', request({ gpuCount: 1, vcpuCount: 1 }));
  assert.deepEqual(placed, {
    ok: true,
    placement: {
      hostId: 'agent-ro-4090',
      dataCenterId: 'EU-RO-1',
      cloud: 'SECURE',
      gpuTypeId: RTX4090,
      gpuIndices: [0],
      cudaVersion: '12.8',
      publicPorts: [41000],
      vcpus: 6,
      memoryGb: 32,
    },
  });
  inventory.release('b');
  inventory.release('c');
  assert.equal(inventory.gpuStock(RTX4090).available, 2);
  assert.deepEqual(
    place(request({ gpuCount: 2, vcpuCount: 12 }), inventory.snapshot()),
    inventory.placeAndReserve('d', request({ gpuCount: 2, vcpuCount: 12 })),
  );
});

test('a removed host is neither placed on nor reserved on again, and releasing what was held there is a no-op', () => {
  const inventory = demo();
  inventory.upsertHost(joined());
  placeOk(inventory, 'pod', request({ dataCenterIds: ['EU-RO-1'] }));
  inventory.removeHost('agent-ro-4090');
  assert.equal(inventory.host('agent-ro-4090'), undefined);
  assert.equal(
    inventory.hosts().some((h) => h.id === 'agent-ro-4090'),
    false,
  );
  assert.equal(inventory.gpuStock(RTX4090).total, 8);
  assert.deepEqual(inventory.placeAndReserve('next', request({ dataCenterIds: ['EU-RO-1'] })), {
    ok: false,
    reason: `No data center among [EU-RO-1] has "${RTX4090}" (available in US-TX-3)`,
  });
  const held = inventory.allocationOf('pod')!;
  inventory.release('pod');
  assert.deepEqual(inventory.reserveExact('pod', held), {
    ok: false,
    reason: 'Host agent-ro-4090 is no longer in the fleet',
  });
  inventory.removeHost('agent-ro-4090');
});

type FleetStep =
  Step | { op: 'toggle'; which: number } | { op: 'resize'; which: number; gpuCount: number; vcpus: number };

test('with hosts joining, resized and going away and back, the indexed inventory still decides as place() over the same snapshot', () => {
  const fleetStepArb: fc.Arbitrary<FleetStep> = fc.oneof(
    { weight: 4, arbitrary: stepArb },
    { weight: 1, arbitrary: fc.nat().map((which): FleetStep => ({ op: 'toggle', which })) },
    {
      weight: 1,
      arbitrary: fc
        .record({ which: fc.nat(), gpuCount: fc.integer({ min: 1, max: 8 }), vcpus: fc.constantFrom(8, 16, 32) })
        .map((r): FleetStep => ({ op: 'resize', ...r })),
    },
  );
  fc.assert(
    fc.property(
      fc.array(hostArb, { minLength: 1, maxLength: 10 }),
      fc.array(fleetStepArb, { minLength: 1, maxLength: 50 }),
      (specs, steps) => {
        const hosts: Host[] = specs.map((s, i) => ({
          id: `h${(i * 7) % 13}-${i}`,
          dataCenterId: s.dataCenterId,
          cloud: s.cloud,
          cudaVersion: s.gpuTypeId ? s.cudaVersion : null,
          gpuTypeId: s.gpuTypeId,
          gpuCount: s.gpuTypeId ? s.gpuCount : 0,
          cpuFlavors: s.cpu || !s.gpuTypeId ? ['cpu3c'] : [],
          vcpus: s.vcpus,
          memoryGb: s.memoryGb,
          diskGb: s.diskGb,
          portRange: [30000 + i * 10, 30000 + i * 10 + s.ports - 1],
          publicIp: '127.0.0.1',
        }));
        // Half the hosts are there from the start; the others join on their first toggle.
        const inventory = new Inventory({ hosts: hosts.filter((_, i) => i % 2 === 0), catalog });
        const holders: string[] = [];
        steps.forEach((step, n) => {
          if (step.op === 'toggle') {
            const host = hosts[step.which % hosts.length]!;
            if (!inventory.host(host.id)) inventory.upsertHost(host);
            else inventory.setAvailable(host.id, !inventory.isAvailable(host.id));
            return;
          }
          if (step.op === 'resize') {
            const host = hosts[step.which % hosts.length]!;
            const current = inventory.host(host.id);
            if (current)
              inventory.upsertHost({ ...current, gpuCount: current.gpuTypeId ? step.gpuCount : 0, vcpus: step.vcpus });
            return;
          }
          if (step.op === 'release') {
            if (holders.length === 0) return;
            const [holder] = holders.splice(step.which % holders.length, 1);
            inventory.release(holder!);
            return;
          }
          const expected = place(step.req, inventory.snapshot());
          const actual = inventory.placeAndReserve(`holder-${n}`, step.req);
          assert.deepEqual(actual, expected);
          if (actual.ok) {
            holders.push(`holder-${n}`);
            assert.ok(inventory.isAvailable(actual.placement.hostId), 'placed on an available host');
          }
        });
      },
    ),
    { numRuns: 300 },
  );
});
