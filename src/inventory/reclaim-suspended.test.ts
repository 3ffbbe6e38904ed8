import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultCatalog, type Host } from '../domain/catalog.js';
import type { PlacementRequest, ReclaimableHold, ReclaimRight } from '../domain/placement-request.js';
import {
  compareReclaimables,
  mayReclaim,
  planReclaim,
  suspendedHold,
  type Reclaimable,
} from '../domain/reclaim-ladder.js';
import { gpuHostTerms } from '../domain/gpu-allotment.js';
import { Inventory } from './inventory.js';
import { gpuPlacementRequest } from '../../test/support/placement.js';

// FlashBoot's suspended workers on the reclaim ladder's first rung (docs/pods.md, docs/serverless.md).

const catalog = defaultCatalog();
const RTX4090 = 'NVIDIA GeForce RTX 4090';

const host = (id: string, gpus: number): Host => ({
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
});

const gives = (holderId: string, hold: ReclaimableHold): Reclaimable => ({
  holderId,
  hold,
  gpus: 1,
  vcpus: 6,
  memoryGb: 48,
  diskGb: 0,
  ports: 0,
});

const podOf = (accountId: string, gpuCount = 1): PlacementRequest =>
  gpuPlacementRequest({ gpuCount, reclaim: { kind: 'on-demand', accountId } });

/** A worker of `endpointId` (account `accountId`) placed on the fleet, then suspended at `since`. */
function suspendedWorker(inventory: Inventory, id: string, endpointId: string, accountId: string, since: number): void {
  const placed = inventory.placeAndReserve(id, gpuPlacementRequest({ gpuCount: 1 }));
  assert.ok(placed.ok, placed.ok ? '' : placed.reason);
  assert.equal(inventory.setReclaimable(id, suspendedHold(endpointId, accountId, since)), true);
}

const reclaimedIds = (result: ReturnType<Inventory['placeAndReserve']>): string[] =>
  result.ok ? (result.reclaimed ?? []).map((r) => r.holderId) : [];

test("the requester's own account's suspended workers go first, then the one suspended longest", () => {
  const holds = [
    gives('w-other-old', suspendedHold('ep-x', 'other', 1_000)),
    gives('w-mine-new', suspendedHold('ep-a', 'me', 9_000)),
    gives('w-mine-old', suspendedHold('ep-b', 'me', 5_000)),
    gives('w-other-new', suspendedHold('ep-y', 'other', 8_000)),
    gives('spot', { rung: 'interruptible', bidPerGpu: 0.1 }),
  ];
  const order = (accountId?: string) =>
    [...holds].sort((a, b) => compareReclaimables(a, b, accountId)).map((h) => h.holderId);
  assert.deepEqual(order('me'), ['w-mine-old', 'w-mine-new', 'w-other-old', 'w-other-new', 'spot']);
  assert.deepEqual(order('other'), ['w-other-old', 'w-other-new', 'w-mine-old', 'w-mine-new', 'spot']);
  assert.deepEqual(order(), ['w-other-old', 'w-mine-old', 'w-other-new', 'w-mine-new', 'spot']);
});

test("a worker's launch takes suspended workers of other endpoints only; pods of any kind take every suspended worker", () => {
  const own = suspendedHold('ep-a', 'me', 1);
  const other = suspendedHold('ep-b', 'me', 1);
  const launch: ReclaimRight = { kind: 'worker', endpointId: 'ep-a', accountId: 'me' };
  assert.equal(mayReclaim(launch, own), false);
  assert.equal(mayReclaim(launch, other), true);
  assert.equal(mayReclaim(launch, { rung: 'interruptible', bidPerGpu: 0.01 }), false);
  assert.equal(mayReclaim({ kind: 'on-demand' }, own), true);
  assert.equal(mayReclaim({ kind: 'bid', bidPerGpu: 0.01 }, own), true);
});

test('on one host the plan takes only what it needs, in ladder order for the requester', () => {
  const free = {
    hostId: 'h',
    freeGpus: 0,
    freeVcpus: 0,
    freeMemoryGb: 0,
    freeDiskGb: 1000,
    freePorts: 100,
    terms: gpuHostTerms(host('h', 2), catalog.gpuTypes),
  };
  const holds = [gives('w-other', suspendedHold('ep-x', 'other', 1)), gives('w-mine', suspendedHold('ep-a', 'me', 2))];
  const plan = planReclaim(podOf('me'), { kind: 'on-demand', accountId: 'me' }, free, holds);
  assert.deepEqual(
    plan?.map((r) => r.holderId),
    ['w-mine'],
  );
});

test("a pod on a full fleet takes its own account's suspended worker, on whichever host it is, before an older one of another account", () => {
  const inventory = new Inventory({ hosts: [host('a', 1), host('b', 1), host('c', 1)], catalog });
  suspendedWorker(inventory, 'w-other-oldest', 'ep-x', 'other', 1_000);
  suspendedWorker(inventory, 'w-mine-new', 'ep-a', 'me', 9_000);
  suspendedWorker(inventory, 'w-mine-old', 'ep-b', 'me', 5_000);
  const mine = inventory.placeAndReserve('pod-1', podOf('me'));
  assert.deepEqual(reclaimedIds(mine), ['w-mine-old']);
  assert.equal(inventory.allocationOf('w-mine-old'), undefined, 'the taken-back hold is released');
  const theirs = inventory.placeAndReserve('pod-2', podOf('someone-else'));
  assert.deepEqual(reclaimedIds(theirs), ['w-other-oldest'], 'another account: the one suspended longest');
  assert.ok(theirs.ok);
  assert.deepEqual(theirs.reclaimed![0]!.hold, suspendedHold('ep-x', 'other', 1_000));
});

test('a suspended worker is taken before an interruptible pod, and a worker that is not suspended never is', () => {
  const inventory = new Inventory({ hosts: [host('a', 1), host('b', 1), host('c', 1)], catalog });
  const running = inventory.placeAndReserve('w-running', gpuPlacementRequest({ gpuCount: 1 }));
  assert.ok(running.ok);
  const spot = inventory.placeAndReserve(
    'spot',
    gpuPlacementRequest({
      gpuCount: 1,
      reclaim: { kind: 'bid', bidPerGpu: 0.2 },
      reclaimable: { rung: 'interruptible', bidPerGpu: 0.2 },
    }),
  );
  assert.ok(spot.ok);
  suspendedWorker(inventory, 'w-suspended', 'ep-a', 'acct', 1);
  assert.deepEqual(reclaimedIds(inventory.placeAndReserve('pod-1', podOf('x'))), ['w-suspended']);
  assert.deepEqual(reclaimedIds(inventory.placeAndReserve('pod-2', podOf('x'))), ['spot']);
  const refused = inventory.placeAndReserve('pod-3', podOf('x'));
  assert.equal(refused.ok, false, 'only the running worker is left: nothing is taken');
  assert.ok(inventory.allocationOf('w-running'));
});

test('a resumed worker is off the ladder, and a resume after a reclaim finds its hold gone (one of them wins)', () => {
  const inventory = new Inventory({ hosts: [host('a', 1)], catalog });
  suspendedWorker(inventory, 'w1', 'ep-a', 'acct', 1);
  assert.equal(inventory.setReclaimable('w1', null), true, 'resumed: it still holds its GPU');
  assert.equal(inventory.placeAndReserve('pod-1', podOf('x')).ok, false, 'a resumed worker is never taken');
  assert.equal(inventory.setReclaimable('w1', suspendedHold('ep-a', 'acct', 2)), true);
  assert.deepEqual(reclaimedIds(inventory.placeAndReserve('pod-2', podOf('x'))), ['w1']);
  assert.equal(inventory.setReclaimable('w1', null), false, 'the resume loses: the GPU is the pod’s');
  assert.equal(inventory.allocationOf('pod-2')?.gpuIndices[0], 0);
  assert.equal(inventory.allocationOf('w1'), undefined);
});

test("a worker's launch on a full fleet takes another endpoint's suspended worker, never its own endpoint's", () => {
  const inventory = new Inventory({ hosts: [host('a', 1), host('b', 1)], catalog });
  suspendedWorker(inventory, 'w-own', 'ep-a', 'me', 1);
  suspendedWorker(inventory, 'w-other', 'ep-b', 'me', 2);
  const launch = gpuPlacementRequest({ gpuCount: 1, reclaim: { kind: 'worker', endpointId: 'ep-a', accountId: 'me' } });
  assert.deepEqual(reclaimedIds(inventory.placeAndReserve('w-new', launch)), ['w-other']);
  assert.equal(inventory.placeAndReserve('w-new-2', launch).ok, false, 'its own endpoint’s is resumed, not taken');
  assert.ok(inventory.allocationOf('w-own'));
});
