import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { removeDataDirs, withRuntime } from '../../../test/support/process-runtime-harness.js';
import { FakeClock } from '../../domain/clock.js';
import { ChangeRecorder, instanceSpec } from '../runtime-contract.js';
import { ProcessRuntime } from './process-runtime.js';

after(removeDataDirs);

describe('spawnInstance', () => {
  test('an unknown command rejects start with a message naming the image, the command and the folder, and leaves no instance', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const spec = instanceSpec({ image: 'test/no-such-command' });
      const changes = new ChangeRecorder(runtime);
      await assert.rejects(runtime.start(spec), {
        message: `cannot start image "test/no-such-command": command "gantry-no-such-command-9" not found (cwd ${join(dataDir, 'instances', spec.id)})`,
      });
      assert.equal(await runtime.inspect(spec.id), null);
      assert.deepEqual(await runtime.list(), []);
      assert.deepEqual(changes.changes, []);
    }));

  test('start is rejected with a clear message for a missing working directory, an unexposed probe port or broken args', () =>
    withRuntime(async ({ runtime }) => {
      await assert.rejects(runtime.start(instanceSpec({ image: 'test/missing-cwd' })), {
        message:
          'cannot start image "test/missing-cwd": its working directory /nonexistent/gantry/worker does not exist',
      });
      await assert.rejects(
        runtime.start(instanceSpec({ image: 'test/http', ports: [{ private: 22, public: 30022, protocol: 'tcp' }] })),
        {
          message:
            'cannot start image "test/http": its health check probes port 8000, which this instance does not expose (ports: 22/tcp)',
        },
      );
      await assert.rejects(
        runtime.start(instanceSpec({ image: 'test/idle', args: `--prompt "unfinished` })),
        /unterminated " quote/,
      );
      assert.deepEqual(await runtime.list(), []);
    }));

  test('a command that is not executable rejects start saying so', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const script = join(dataDir, 'handler.sh');
      writeFileSync(script, '#!/bin/sh\necho hi\n', { mode: 0o644 });
      const withScript = new ProcessRuntime({
        images: { 'my-worker:dev': { command: [script] } },
        dataDir,
        clock: new FakeClock(),
        logger: pino({ level: 'silent' }),
        stopGraceMs: 500,
      });
      try {
        await assert.rejects(withScript.start(instanceSpec({ image: 'my-worker:dev' })), {
          message: new RegExp(
            `^cannot start image "my-worker:dev": command "${script}" is not executable: permission denied`,
          ),
        });
      } finally {
        await withScript.close();
      }
      assert.deepEqual(await runtime.list(), []);
    }));
});
