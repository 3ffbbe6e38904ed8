import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultCatalog, type Host } from '../domain/catalog.js';
import type { PlacementRequest, ReclaimRight } from '../domain/placement-request.js';
import { compareReclaimables, mayReclaim, planReclaim, type Reclaimable } from '../domain/reclaim-ladder.js';
import { gpuHostTerms } from '../domain/gpu-allotment.js';
import { Inventory } from './inventory.js';
import { gpuPlacementRequest } from '../../test/support/placement.js';

const catalog = defaultCatalog();
const RTX4090 = 'NVIDIA GeForce RTX 4090';
const ON_DEMAND: ReclaimRight = { kind: 'on-demand' };

const host = (id: string, gpus: number, fields: Partial<Host> = {}): Host => ({
  id,
  dataCenterId: 'US-TX-3',
  cloud: 'SECURE',
  cudaVersion: '12.4',
  gpuTypeId: RTX4090,
  gpuCount: gpus,
  cpuFlavors: [],
  vcpus: 6 * gpus,
  memoryGb: 48 * gpus,
  diskGb: 1000,
  portRange: [20000, 20099],
  publicIp: '127.0.0.1',
  ...fields,
});

/** An on-demand request for `gpuCount` RTX 4090s that may take back what the ladder allows. */
const onDemand = (gpuCount = 1, fields: Partial<PlacementRequest> = {}): PlacementRequest =>
  gpuPlacementRequest({ gpuCount, portCount: 1, reclaim: ON_DEMAND, ...fields });

/** An interruptible request bidding `bid` per GPU: it takes back lower bids, and can itself be taken back. */
const spot = (bid: number, gpuCount = 1): PlacementRequest =>
  gpuPlacementRequest({
    gpuCount,
    portCount: 1,
    reclaim: { kind: 'bid', bidPerGpu: bid },
    reclaimable: { rung: 'interruptible', bidPerGpu: bid },
  });

function placed(inventory: Inventory, holder: string, request: PlacementRequest) {
  const result = inventory.placeAndReserve(holder, request);
  assert.ok(result.ok, result.ok ? '' : result.reason);
  return result;
}

const reclaimedIds = (result: ReturnType<Inventory['placeAndReserve']>): string[] =>
  result.ok ? (result.reclaimed ?? []).map((r) => r.holderId) : [];

test('an on-demand request on a full fleet takes back the lowest-bid interruptible pod', () => {
  const inventory = new Inventory({ hosts: [host('a', 1), host('b', 1), host('c', 1)], catalog });
  placed(inventory, 'spot-high', spot(0.3));
  placed(inventory, 'spot-low', spot(0.2));
  placed(inventory, 'spot-mid', spot(0.25));
  const result = placed(inventory, 'od', onDemand());
  assert.deepEqual(reclaimedIds(result), ['spot-low']);
  assert.ok(result.ok);
  assert.equal(result.placement.hostId, inventory.allocationOf('od')!.hostId);
  assert.equal(inventory.allocationOf('spot-low'), undefined, 'the taken-back hold is released');
  assert.ok(inventory.allocationOf('spot-high') && inventory.allocationOf('spot-mid'));
  assert.deepEqual(result.reclaimed![0]!.hold, { rung: 'interruptible', bidPerGpu: 0.2 });
});

test('of equal bids the newest hold is taken back first', () => {
  const inventory = new Inventory({ hosts: [host('a', 1), host('b', 1)], catalog });
  placed(inventory, 'pod-0001', spot(0.2));
  placed(inventory, 'pod-0002', spot(0.2));
  assert.deepEqual(reclaimedIds(placed(inventory, 'od', onDemand())), ['pod-0002']);
});

test('a running on-demand pod is never taken back, whatever asks', () => {
  const inventory = new Inventory({ hosts: [host('a', 2)], catalog });
  placed(inventory, 'od-1', onDemand());
  placed(inventory, 'spot', spot(0.2));
  const result = inventory.placeAndReserve('od-2', onDemand(2));
  assert.equal(result.ok, false, 'two GPUs would need the on-demand pod’s');
  assert.ok(inventory.allocationOf('od-1') && inventory.allocationOf('spot'), 'nothing was taken back for nothing');
  assert.deepEqual(reclaimedIds(placed(inventory, 'od-3', onDemand(1))), ['spot']);
});

test('a higher bid takes back a lower one; an equal or lower bid does not', () => {
  const inventory = new Inventory({ hosts: [host('a', 1)], catalog });
  placed(inventory, 'low', spot(0.2));
  assert.equal(inventory.placeAndReserve('equal', spot(0.2)).ok, false);
  assert.equal(inventory.placeAndReserve('lower', spot(0.1)).ok, false);
  const higher = placed(inventory, 'higher', spot(0.3));
  assert.deepEqual(reclaimedIds(higher), ['low']);
  // and the new hold is itself interruptible at its own bid
  assert.deepEqual(reclaimedIds(placed(inventory, 'od', onDemand())), ['higher']);
});

test('a request without a reclaim right takes free capacity only (an autoscaler launch)', () => {
  const inventory = new Inventory({ hosts: [host('a', 1)], catalog });
  placed(inventory, 'spot', spot(0.2));
  const result = inventory.placeAndReserve('worker', gpuPlacementRequest({ portCount: 0 }));
  assert.equal(result.ok, false);
  assert.ok(inventory.allocationOf('spot'));
});

test('free capacity is used before anything is taken back', () => {
  const inventory = new Inventory({ hosts: [host('a', 1), host('b', 1)], catalog });
  placed(inventory, 'spot', spot(0.2));
  const result = placed(inventory, 'od', onDemand());
  assert.deepEqual(reclaimedIds(result), []);
  assert.equal(result.ok && result.reclaimed, undefined);
});

test('a request for several GPUs takes back as few holds as make room, lowest bids first', () => {
  const inventory = new Inventory({ hosts: [host('a', 4)], catalog });
  placed(inventory, 's1', spot(0.5));
  placed(inventory, 's2', spot(0.2));
  placed(inventory, 's3', spot(0.3, 2));
  // two GPUs: the 0.2 one frees one; the next lowest (0.3, two GPUs) alone is enough, so 0.2 is given back
  assert.deepEqual(reclaimedIds(placed(inventory, 'od', onDemand(2))), ['s3']);
  assert.ok(inventory.allocationOf('s2'));
});

test('the ladder respects the request’s static filters: another cloud’s interruptible pod is not taken', () => {
  const inventory = new Inventory({ hosts: [host('a', 1, { cloud: 'COMMUNITY' }), host('b', 1)], catalog });
  placed(inventory, 'community', { ...spot(0.1), cloud: 'COMMUNITY' });
  placed(inventory, 'secure', spot(0.4));
  assert.deepEqual(reclaimedIds(placed(inventory, 'od', onDemand())), ['secure']);
});

test('restore gives the taken-back holds back exactly, once the placement is rolled back', () => {
  const inventory = new Inventory({ hosts: [host('a', 1)], catalog });
  placed(inventory, 'spot', spot(0.2));
  const before = inventory.allocationOf('spot');
  const result = placed(inventory, 'od', onDemand());
  inventory.release('od');
  inventory.restore(result.ok ? result.reclaimed! : []);
  assert.deepEqual(inventory.allocationOf('spot'), before);
  // and it can be taken back again
  assert.deepEqual(reclaimedIds(placed(inventory, 'od', onDemand())), ['spot']);
});

test('availability counts GPUs held by interruptible pods as available (an on-demand create takes them)', () => {
  const inventory = new Inventory({ hosts: [host('a', 2)], catalog });
  placed(inventory, 'spot', spot(0.2, 2));
  const stock = inventory.gpuStock(RTX4090);
  assert.equal(stock.available, 2);
  assert.equal(stock.maxGpuCount, 2);
  placed(inventory, 'od', onDemand(1));
  assert.equal(inventory.gpuStock(RTX4090).available, 1);
  const usage = inventory.snapshot({ reclaimableFree: true }).usage.get('a')!;
  assert.equal(usage.gpuIndices.size, 1);
  assert.equal(inventory.snapshot().usage.get('a')!.gpuIndices.size, 1);
});

test('the ladder’s order: suspended workers, then interruptible pods by bid, newest first on ties', () => {
  const hold = (holderId: string, rung: 'suspended-worker' | 'interruptible', bid: number): Reclaimable => ({
    holderId,
    hold: { rung, bidPerGpu: bid },
    gpus: 1,
    vcpus: 6,
    memoryGb: 48,
    diskGb: 20,
    ports: 1,
  });
  const sorted = [
    hold('p1', 'interruptible', 0.3),
    hold('p2', 'interruptible', 0.2),
    hold('p3', 'interruptible', 0.2),
    hold('w1', 'suspended-worker', 0),
  ].sort(compareReclaimables);
  assert.deepEqual(
    sorted.map((h) => h.holderId),
    ['w1', 'p3', 'p2', 'p1'],
  );
  assert.equal(mayReclaim({ kind: 'bid', bidPerGpu: 0.1 }, { rung: 'suspended-worker', bidPerGpu: 0 }), true);
  assert.equal(mayReclaim({ kind: 'bid', bidPerGpu: 0.2 }, { rung: 'interruptible', bidPerGpu: 0.2 }), false);
  const free = {
    hostId: 'a',
    freeGpus: 0,
    freeVcpus: 0,
    freeMemoryGb: 0,
    freeDiskGb: 100,
    freePorts: 10,
    terms: gpuHostTerms(host('a', 4), catalog.gpuTypes),
  };
  const plan = planReclaim(onDemand(1), ON_DEMAND, free, sorted);
  assert.deepEqual(
    plan?.map((h) => h.holderId),
    ['w1'],
    'a suspended worker’s capacity is taken before any pod’s',
  );
});
