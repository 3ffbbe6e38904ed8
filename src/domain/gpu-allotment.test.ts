import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { defaultCatalog, defaultFleet } from './catalog.js';
import {
  FALLBACK_MIN_MEMORY_GB,
  FALLBACK_VCPUS_PER_GPU,
  allotmentOn,
  gpuHostTerms,
  hostShare,
  largestPlaceable,
  memoryCapacity,
  perGpuDefault,
  placeableUnits,
  vcpuCapacity,
  type GpuHostTerms,
} from './gpu-allotment.js';

const catalog = defaultCatalog();
const RTX4090 = catalog.gpuTypes.find((t) => t.id === 'NVIDIA GeForce RTX 4090')!;

/** 8 RTX 4090s on 64 vCPUs and 512 GB: a GPU's share is 8 and 64; the type comes with 6 and 48. */
const terms = (fields: Partial<GpuHostTerms> = {}): GpuHostTerms => ({
  vcpus: 64,
  memoryGb: 512,
  gpuCount: 8,
  perGpu: { vcpus: 6, memoryGb: 48 },
  ...fields,
});

test("every built-in GPU type names the vCPUs and memory one GPU comes with, more memory than the GPU's own", () => {
  for (const type of catalog.gpuTypes) {
    assert.ok(Number.isInteger(type.vcpusPerGpu) && type.vcpusPerGpu! >= 4, type.id);
    assert.ok(Number.isInteger(type.memoryGbPerGpu) && type.memoryGbPerGpu! > type.memoryInGb, type.id);
    assert.deepEqual(perGpuDefault(type), { vcpus: type.vcpusPerGpu, memoryGb: type.memoryGbPerGpu });
  }
});

test('a GPU type declared without per-GPU figures gets 4 vCPUs and 1.5 times its memory, at least 16 GB', () => {
  const declared = { ...RTX4090, vcpusPerGpu: undefined, memoryGbPerGpu: undefined };
  assert.deepEqual(perGpuDefault(declared), { vcpus: FALLBACK_VCPUS_PER_GPU, memoryGb: 36 });
  assert.deepEqual(perGpuDefault({ ...declared, memoryInGb: 8 }), { vcpus: 4, memoryGb: FALLBACK_MIN_MEMORY_GB });
  assert.deepEqual(perGpuDefault({ ...declared, memoryGbPerGpu: 20 }), { vcpus: 4, memoryGb: 20 });
  assert.deepEqual(perGpuDefault(undefined), { vcpus: 4, memoryGb: 16 }, 'a type the catalog lacks');
});

test("a host's share of n GPUs is its vCPUs and memory × n / its GPUs, rounded down, at least 1 each", () => {
  assert.deepEqual(hostShare({ vcpus: 64, memoryGb: 512, gpuCount: 8 }, 1), { vcpus: 8, memoryGb: 64 });
  assert.deepEqual(hostShare({ vcpus: 64, memoryGb: 512, gpuCount: 8 }, 3), { vcpus: 24, memoryGb: 192 });
  assert.deepEqual(hostShare({ vcpus: 12, memoryGb: 50, gpuCount: 8 }, 3), { vcpus: 4, memoryGb: 18 });
  assert.deepEqual(hostShare({ vcpus: 4, memoryGb: 3.5, gpuCount: 8 }, 1), { vcpus: 1, memoryGb: 1 });
});

test('a host with fewer vCPUs or GB than GPUs counts one per GPU: all its GPUs can be placed, each with one', () => {
  const tiny = { vcpus: 2, memoryGb: 4, gpuCount: 8, gpuTypeId: RTX4090.id };
  assert.deepEqual([vcpuCapacity(tiny), memoryCapacity(tiny)], [8, 8]);
  assert.deepEqual([vcpuCapacity({ ...tiny, gpuTypeId: null }), memoryCapacity({ ...tiny, gpuTypeId: null })], [2, 4]);
  assert.deepEqual([vcpuCapacity({ ...tiny, vcpus: 64 }), memoryCapacity({ ...tiny, memoryGb: 512 })], [64, 512]);
  const t = gpuHostTerms(tiny, catalog.gpuTypes);
  assert.deepEqual(allotmentOn(t, 1), { ok: true, vcpus: 1, memoryGb: 1 });
  assert.equal(placeableUnits(t, { freeGpus: 8, freeVcpus: t.vcpus, freeMemoryGb: t.memoryGb }, 1), 8);
});

test('the allotment is the default × GPUs or the minimum, whichever is larger, capped by the share; a minimum past the share is refused', () => {
  assert.deepEqual(allotmentOn(terms(), 1), { ok: true, vcpus: 6, memoryGb: 48 });
  assert.deepEqual(allotmentOn(terms(), 4), { ok: true, vcpus: 24, memoryGb: 192 });
  assert.deepEqual(allotmentOn(terms(), 1, { vcpus: 7, memoryGb: 10 }), { ok: true, vcpus: 7, memoryGb: 48 });
  assert.deepEqual(allotmentOn(terms({ perGpu: { vcpus: 20, memoryGb: 192 } }), 1), {
    ok: true,
    vcpus: 8,
    memoryGb: 64,
  });
  assert.deepEqual(allotmentOn(terms(), 1, { vcpus: 9, memoryGb: 0 }), {
    ok: false,
    short: 'vcpus',
    share: { vcpus: 8, memoryGb: 64 },
  });
  assert.deepEqual(allotmentOn(terms(), 2, { vcpus: 0, memoryGb: 129 }), {
    ok: false,
    short: 'memory',
    share: { vcpus: 16, memoryGb: 128 },
  });
});

test('whatever instances a host takes, the allotments of its GPUs never add up to more than it has', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 16 }),
      fc.integer({ min: 1, max: 256 }),
      fc.integer({ min: 1, max: 2048 }),
      fc.array(fc.integer({ min: 1, max: 16 }), { maxLength: 16 }),
      fc.record({ vcpus: fc.integer({ min: 1, max: 64 }), memoryGb: fc.integer({ min: 1, max: 512 }) }),
      (gpuCount, vcpus, memoryGb, counts, perGpu) => {
        fc.pre(vcpus >= gpuCount && memoryGb >= gpuCount);
        const t = terms({ vcpus, memoryGb, gpuCount, perGpu });
        let gpus = 0;
        let usedVcpus = 0;
        let usedMemory = 0;
        for (const n of counts) {
          if (gpus + n > gpuCount) continue;
          const a = allotmentOn(t, n);
          assert.ok(a.ok);
          gpus += n;
          usedVcpus += a.vcpus;
          usedMemory += a.memoryGb;
        }
        assert.ok(usedVcpus <= vcpus && usedMemory <= memoryGb, `${usedVcpus}/${vcpus} ${usedMemory}/${memoryGb}`);
      },
    ),
  );
});

test('what a host can still place is bounded by its free GPUs, vCPUs or memory, whichever runs out first', () => {
  const t = terms();
  const free = (freeGpus: number, freeVcpus: number, freeMemoryGb: number) => ({ freeGpus, freeVcpus, freeMemoryGb });
  assert.equal(placeableUnits(t, free(8, 64, 512), 1), 8);
  assert.equal(placeableUnits(t, free(8, 64, 512), 3), 2);
  assert.equal(placeableUnits(t, free(8, 11, 512), 1), 1, 'CPUs run out before GPUs');
  assert.equal(placeableUnits(t, free(8, 64, 95), 1), 1, 'memory runs out before GPUs');
  assert.equal(placeableUnits(t, free(2, 64, 512), 1), 2);
  assert.equal(largestPlaceable(t, free(8, 64, 512)), 8);
  assert.equal(largestPlaceable(t, free(8, 20, 512)), 3, '3 GPUs come with 18 vCPUs, 4 with 24');
  assert.equal(largestPlaceable(t, free(8, 5, 512)), 0);
});

test("the demo fleet's hosts give each of their GPUs at least one vCPU and one GB, and the catalog knows each type", () => {
  for (const host of defaultFleet().filter((h) => h.gpuTypeId !== null)) {
    const t = gpuHostTerms(host, catalog.gpuTypes);
    assert.notDeepEqual(t.perGpu, perGpuDefault(undefined), `${host.id}: its type's own figures`);
    assert.equal(
      largestPlaceable(t, { freeGpus: host.gpuCount, freeVcpus: host.vcpus, freeMemoryGb: host.memoryGb }),
      host.gpuCount,
      host.id,
    );
  }
});
