import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { images, node, removeDataDirs, withRuntime } from '../../../test/support/process-runtime-harness.js';
import { ChangeRecorder, instanceSpec, waitFor } from '../runtime-contract.js';

after(removeDataDirs);

describe('output.log', () => {
  test('the exit reason carries only the last lines of output, at most about 2 KB', () =>
    withRuntime(
      async ({ runtime }) => {
        const spec = instanceSpec({ image: 'test/many-lines' });
        const changes = new ChangeRecorder(runtime);
        await runtime.start(spec);
        const exited = await changes.next(spec.id, 'exited');
        const tail = (exited.reason ?? '').split('last output:\n')[1] ?? '';
        assert.ok(tail.length <= 2048, `tail is ${tail.length} chars`);
        assert.ok(tail.endsWith('line 99 ' + 'y'.repeat(200)));
        assert.ok(!tail.includes('line 79 '), 'only the last 20 lines');
      },
      {
        images: {
          ...images,
          'test/many-lines': {
            command: [
              node,
              '-e',
              'for (let i = 0; i < 100; i++) console.log(`line ${i} ` + "y".repeat(200)); process.exitCode = 1',
            ],
          },
        },
      },
    ));

  test('output.log keeps the stdout and stderr of every run', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const spec = instanceSpec({ image: 'test/crashing' });
      const changes = new ChangeRecorder(runtime);
      await runtime.start(spec);
      await changes.next(spec.id, 'exited');
      await runtime.stop(spec.id);
      await runtime.start(spec);
      await waitFor('the second run to exit', async () => (await runtime.inspect(spec.id))?.state === 'exited');
      const log = readFileSync(join(dataDir, 'instances', spec.id, 'output.log'), 'utf8');
      assert.equal(log.match(/loading model/g)?.length, 2);
      assert.equal(log.match(/boom: model file missing/g)?.length, 2);
      const reason = (await runtime.inspect(spec.id))?.reason ?? '';
      assert.equal(reason.match(/boom/g)?.length, 1, "the reason holds this run's output only");
    }));
});
