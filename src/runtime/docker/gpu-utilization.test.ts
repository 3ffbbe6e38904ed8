import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { removeStandIns, standInNvidiaSmi } from '../../../test/support/nvidia-smi.js';
import { gpuFiguresOf, parseGpuUtilization, readGpuUtilization } from './gpu-utilization.js';

after(removeStandIns);

const CSV = `0, GPU-aaaa-0001, 87, 12282, 24564
1, GPU-aaaa-0002, 3, 1024, 24564
2, MIG-bbbb-0003, [N/A], 512, 10240`;

test('nvidia-smi’s utilization CSV is read per GPU, [N/A] as no figure', () => {
  assert.deepEqual(parseGpuUtilization(CSV), [
    { index: 0, uuid: 'GPU-aaaa-0001', util: 87, memoryUsedMiB: 12282, memoryTotalMiB: 24564 },
    { index: 1, uuid: 'GPU-aaaa-0002', util: 3, memoryUsedMiB: 1024, memoryTotalMiB: 24564 },
    { index: 2, uuid: 'MIG-bbbb-0003', util: null, memoryUsedMiB: 512, memoryTotalMiB: 10240 },
  ]);
  assert.throws(
    () => parseGpuUtilization('0, GPU-a, lots, 1, 2'),
    /cannot read as "index, uuid, utilization\.gpu, memory\.used, memory\.total": "0, GPU-a, lots, 1, 2"/,
  );
});

test('an instance’s GPU figures follow its indices by UUID, and a GPU without a reading gives none rather than a made-up one', () => {
  const readings = parseGpuUtilization(CSV);
  const uuids = ['GPU-aaaa-0001', 'GPU-aaaa-0002', 'MIG-bbbb-0003'];
  assert.deepEqual(gpuFiguresOf([1, 0], uuids, readings), [
    { id: 'GPU-aaaa-0002', util: 3, memoryUtil: 4.2 },
    { id: 'GPU-aaaa-0001', util: 87, memoryUtil: 50 },
  ]);
  // The host's index 0 is now another UUID: found by UUID, not by position.
  assert.deepEqual(gpuFiguresOf([0], ['GPU-aaaa-0002'], readings), [{ id: 'GPU-aaaa-0002', util: 3, memoryUtil: 4.2 }]);
  assert.equal(gpuFiguresOf([2], uuids, readings), undefined, 'utilization [N/A]');
  assert.equal(gpuFiguresOf([0, 5], uuids, readings), undefined, 'a GPU nvidia-smi did not list');
});

test('the query runs the configured nvidia-smi and says why when it fails', async () => {
  const smi = standInNvidiaSmi({ utilization: CSV });
  assert.equal((await readGpuUtilization('nvidia-smi', { env: smi.env }))[0]?.util, 87);
  assert.deepEqual(smi.calls(), [
    '--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits',
  ]);
  const broken = standInNvidiaSmi({
    body: 'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver" >&2; exit 9',
  });
  await assert.rejects(
    readGpuUtilization(broken.path),
    /failed \(9\): NVIDIA-SMI has failed because it couldn't communicate/,
  );
  await assert.rejects(readGpuUtilization('/nonexistent/nvidia-smi'), /\/nonexistent\/nvidia-smi failed \(ENOENT\)/);
});
