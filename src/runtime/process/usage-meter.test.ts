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
        // A spinning loop gets more than a tenth of a core however loaded the machine (two cores,
        // other suites running); a quiet one reads its full share.
        const stats = await waitFor(
          'a busy process to show CPU use',
          async () => {
            const s = (await runtime.inspect(busy.id))?.stats;
            return s && s.cpuUtil > 10 && s.memoryBytes > 64 * 1024 * 1024 ? s : null;
          },
          30_000,
        );
        assert.ok(stats.cpuUtil <= 100);
        assert.ok(stats.memoryUtil > 6 && stats.memoryUtil <= 100, `memoryUtil ${stats.memoryUtil}`);
        // The idle process's first figure covers its own start-up (Node spends tens of ms of CPU
        // starting); once started it spends nothing, and a meter that read another group's CPU
        // (the busy one's) would never come down.
        const quiet = await waitFor(
          'the idle process to read low',
          async () => {
            const s = (await runtime.inspect(idle.id))?.stats;
            return s && s.cpuUtil < 5 ? s : null;
          },
          30_000,
        );
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
