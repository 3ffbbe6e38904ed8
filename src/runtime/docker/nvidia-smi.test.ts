import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCudaVersion, parseGpuCsv, queryNvidiaSmi } from './nvidia-smi.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi, TWO_4090 } from '../../../test/support/nvidia-smi.js';

after(removeStandIns);

test('two GPUs on PATH are listed by index with their UUIDs, names, memory and the CUDA version of the banner', async () => {
  const { env } = standInNvidiaSmi({ csv: TWO_4090, banner: BANNER_12_4 });
  const result = await queryNvidiaSmi('nvidia-smi', { env });
  assert.deepEqual(result, {
    kind: 'ok',
    command: 'nvidia-smi',
    cudaVersion: '12.4',
    gpus: [
      { index: 0, uuid: 'GPU-6f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b01', name: 'NVIDIA GeForce RTX 4090', memoryMiB: 24564 },
      { index: 1, uuid: 'GPU-6f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b02', name: 'NVIDIA GeForce RTX 4090', memoryMiB: 24564 },
    ],
  });
});

test('one GPU is listed, and the driver 610 banner (CUDA UMD Version) gives the CUDA version', async () => {
  const { env } = standInNvidiaSmi({
    csv: '0, GPU-11111111-2222-3333-4444-555555555555, NVIDIA H100 80GB HBM3, 81559',
    banner: '| NVIDIA-SMI 610.43.03      KMD Version: 610.43.03      CUDA UMD Version: 13.3     |',
  });
  const result = await queryNvidiaSmi('nvidia-smi', { env });
  assert.equal(result.kind, 'ok');
  assert.equal(result.kind === 'ok' && result.gpus.length, 1);
  assert.equal(result.kind === 'ok' && result.cudaVersion, '13.3');
});

test('a driver that finds no devices is a host without GPUs, not a failure', async () => {
  const { env } = standInNvidiaSmi({ csv: 'No devices were found', exit: 6 });
  assert.deepEqual(await queryNvidiaSmi('nvidia-smi', { env }), {
    kind: 'ok',
    command: 'nvidia-smi',
    gpus: [],
    cudaVersion: null,
  });
});

test('a command that is not there answers absent', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'gantry-nvsmi-'));
  after(() => rmSync(empty, { recursive: true, force: true }));
  assert.deepEqual(await queryNvidiaSmi('nvidia-smi', { env: { PATH: empty } }), {
    kind: 'absent',
    command: 'nvidia-smi',
  });
  assert.deepEqual(await queryNvidiaSmi(join(empty, 'nvidia-smi')), {
    kind: 'absent',
    command: join(empty, 'nvidia-smi'),
  });
});

test('a failing command answers failed with what it printed', async () => {
  const { env } = standInNvidiaSmi({
    body: `echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running." >&2\nexit 9`,
  });
  const result = await queryNvidiaSmi('nvidia-smi', { env });
  assert.equal(result.kind, 'failed');
  assert.match(
    result.kind === 'failed' ? result.message : '',
    /^nvidia-smi failed \(9\): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver/,
  );
});

test('garbage output answers failed, quoting the line it could not read', async () => {
  const { env } = standInNvidiaSmi({ csv: 'Field "uuid" is not a valid field to query.' });
  const result = await queryNvidiaSmi('nvidia-smi', { env });
  assert.equal(result.kind, 'failed');
  assert.match(
    result.kind === 'failed' ? result.message : '',
    /^nvidia-smi printed a line gantry cannot read as "index, uuid, name, memory\.total": "Field "uuid" is not a valid field/,
  );
});

test('a command that hangs is given up on after its timeout', async () => {
  const { env } = standInNvidiaSmi({ body: 'exec sleep 30' });
  const started = Date.now();
  const result = await queryNvidiaSmi('nvidia-smi', { env, timeoutMs: 300 });
  assert.equal(result.kind, 'failed');
  assert.match(result.kind === 'failed' ? result.message : '', /did not finish within 300 ms/);
  assert.ok(Date.now() - started < 10_000);
});

test('the CSV reader keeps a name with a comma, reads [N/A] memory as unknown, and refuses a short line', () => {
  assert.deepEqual(parseGpuCsv('3, GPU-aa, Some, Odd Name, [N/A]\n\n'), [
    { index: 3, uuid: 'GPU-aa', name: 'Some, Odd Name', memoryMiB: null },
  ]);
  assert.throws(() => parseGpuCsv('0, GPU-aa, 24564'), /cannot read/);
  assert.throws(() => parseGpuCsv('x, GPU-aa, NVIDIA L4, 23034'), /cannot read/);
});

test('the banner reader takes major.minor of either spelling, and null when there is none', () => {
  assert.equal(parseCudaVersion(BANNER_12_4), '12.4');
  assert.equal(parseCudaVersion('CUDA Version                              : 11.8'), '11.8');
  assert.equal(parseCudaVersion('| NVIDIA-SMI 470.182.03   Driver Version: 470.182.03   |'), null);
});
