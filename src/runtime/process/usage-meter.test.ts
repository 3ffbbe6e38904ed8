import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { removeDataDirs, withRuntime } from '../../../test/support/process-runtime-harness.js';
import { instanceSpec, waitFor } from '../runtime-contract.js';
import { procAvailable } from './proc-stats.js';

after(removeDataDirs);

describe('UsageMeter', () => {
  test('stats measure the CPU and memory of a running process against its allotment', { skip: procAvailable() ? false : 'needs /proc' }, () =>
    withRuntime(async ({ runtime }) => {
      const spec = instanceSpec({ image: 'test/busy', vcpus: 1, memoryGb: 1 });
      await runtime.start(spec);
      const stats = await waitFor(
        'a busy process to show CPU use',
        async () => {
          const s = (await runtime.inspect(spec.id))?.stats;
          return s && s.cpuUtil > 30 && s.memoryBytes > 64 * 1024 * 1024 ? s : null;
        },
        10_000,
      );
      assert.ok(stats.cpuUtil <= 100);
      assert.ok(stats.memoryUtil > 6 && stats.memoryUtil <= 100, `memoryUtil ${stats.memoryUtil}`);
    }));
});
