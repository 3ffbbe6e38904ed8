import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { removeDataDirs, withRuntime } from '../../../test/support/process-runtime-harness.js';
import { instanceSpec, waitFor } from '../runtime-contract.js';
import { procAvailable } from './proc-stats.js';

after(removeDataDirs);

const needsProc = { skip: procAvailable() ? false : 'needs /proc' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('UsageMeter', () => {
  test('a busy process shows its CPU and memory against its allotment, and an idle one stays low', needsProc, () =>
    withRuntime(
      async ({ runtime }) => {
        const busy = instanceSpec({ image: 'test/busy', vcpus: 1, memoryGb: 1 });
        const idle = instanceSpec({ image: 'test/idle', vcpus: 1, memoryGb: 1 });
        await runtime.start(busy);
        await runtime.start(idle);
        const stats = await waitFor(
          'a busy process to show CPU use',
          async () => {
            const s = (await runtime.inspect(busy.id))?.stats;
            return s && s.cpuUtil > 30 && s.memoryBytes > 64 * 1024 * 1024 ? s : null;
          },
          10_000,
        );
        assert.ok(stats.cpuUtil <= 100);
        assert.ok(stats.memoryUtil > 6 && stats.memoryUtil <= 100, `memoryUtil ${stats.memoryUtil}`);
        // The idle process started after the busy one: its first figures may come a sample later.
        const quiet = await waitFor(
          'the idle process to have figures',
          async () => (await runtime.inspect(idle.id))?.stats ?? null,
          10_000,
        );
        assert.ok(quiet.cpuUtil < 15, `an idle process's cpuUtil is low (${quiet.cpuUtil})`);
        assert.ok(quiet.memoryUtil < stats.memoryUtil, 'and it holds less memory than the busy one');
        assert.equal(quiet.gpus, undefined, 'a process host has no real GPUs to read');
      },
      { statsIntervalMs: 250 },
    ),
  );

  test(
    'inspect answers the last sample and never measures: between two turns it gives the same figures',
    needsProc,
    () =>
      withRuntime(
        async ({ runtime }) => {
          const busy = instanceSpec({ image: 'test/busy', vcpus: 1, memoryGb: 1 });
          await runtime.start(busy);
          const first = await waitFor('a sample', async () => (await runtime.inspect(busy.id))?.stats ?? null, 10_000);
          await sleep(300);
          // A busy process's memory and CPU time move all the time: only an unmeasured read repeats exactly.
          const again = await Promise.all(Array.from({ length: 50 }, () => runtime.inspect(busy.id)));
          for (const status of again) assert.deepEqual(status?.stats, first);
          const [listed] = await runtime.list();
          assert.deepEqual(listed?.stats, first);
        },
        { statsIntervalMs: 60_000 },
      ),
  );
});
