import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { removeDataDirs, withRuntime } from '../../../test/support/process-runtime-harness.js';
import { instanceSpec, waitFor } from '../runtime-contract.js';

after(removeDataDirs);

describe('LogRotator', () => {
  test('output.log is rotated to output.log.1 once it passes the size cap', () =>
    withRuntime(
      async ({ runtime, dataDir }) => {
        const spec = instanceSpec({ image: 'test/chatty' });
        await runtime.start(spec);
        const dir = join(dataDir, 'instances', spec.id);
        await waitFor('the log to be rotated', () => existsSync(join(dir, 'output.log.1')));
        await runtime.stop(spec.id);
        assert.ok(readdirSync(dir).includes('output.log'));
        const size = readFileSync(join(dir, 'output.log')).length;
        assert.ok(size < 2 * 1024 * 1024, `output.log stays near the cap (${size} bytes)`);
      },
      { maxLogBytes: 256 * 1024, logCheckIntervalMs: 50 },
    ));
});
