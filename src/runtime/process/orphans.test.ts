import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { alive, node, removeDataDirs, withRuntime } from '../../../test/support/process-runtime-harness.js';
import { instanceSpec } from '../runtime-contract.js';
import { procAvailable } from './proc-stats.js';

after(removeDataDirs);

describe('orphans', () => {
  test('a process group left behind by a previous server is killed when the same instance starts again', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const spec = instanceSpec({ image: 'test/idle' });
      // The "previous server": started the instance detached, wrote its pid file, then died.
      const leftover = spawn(node, ['-e', 'setInterval(() => {}, 1 << 30)'], {
        detached: true,
        stdio: 'ignore',
        env: { GANTRY_INSTANCE_ID: spec.id },
      });
      leftover.unref();
      await new Promise((resolve) => leftover.once('spawn', resolve));
      const oldPid = leftover.pid!;
      mkdirSync(join(dataDir, 'instances', spec.id), { recursive: true });
      writeFileSync(join(dataDir, 'instances', spec.id, 'pid'), `${oldPid}\n`);

      await runtime.start(spec);
      assert.equal(alive(oldPid), false, 'the leftover process is gone');
      const newPid = Number(readFileSync(join(dataDir, 'instances', spec.id, 'pid'), 'utf8'));
      assert.notEqual(newPid, oldPid);
      assert.ok(alive(newPid));
    }));

  test(
    'a pid file naming a process that is not ours leaves that process alone',
    { skip: procAvailable() ? false : 'needs /proc' },
    () =>
      withRuntime(async ({ runtime, dataDir }) => {
        const spec = instanceSpec({ image: 'test/idle' });
        const stranger = spawn(node, ['-e', 'setInterval(() => {}, 1 << 30)'], {
          detached: true,
          stdio: 'ignore',
          env: { GANTRY_INSTANCE_ID: 'someone-else' },
        });
        stranger.unref();
        await new Promise((resolve) => stranger.once('spawn', resolve));
        try {
          mkdirSync(join(dataDir, 'instances', spec.id), { recursive: true });
          writeFileSync(join(dataDir, 'instances', spec.id, 'pid'), `${stranger.pid}\n`);
          await runtime.start(spec);
          assert.ok(alive(stranger.pid!), 'a pid reused by another process is not killed');
        } finally {
          stranger.kill('SIGKILL');
        }
      }),
  );

  test('reapOrphans kills every leftover instance a previous server left, but none of its own', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const mine = instanceSpec({ image: 'test/idle' });
      await runtime.start(mine);
      const ids = ['orphan-a', 'orphan-b'];
      const pids: number[] = [];
      for (const id of ids) {
        const child = spawn(node, ['-e', 'setInterval(() => {}, 1 << 30)'], {
          detached: true,
          stdio: 'ignore',
          env: { GANTRY_INSTANCE_ID: id },
        });
        child.unref();
        await new Promise((resolve) => child.once('spawn', resolve));
        pids.push(child.pid!);
        mkdirSync(join(dataDir, 'instances', id), { recursive: true });
        writeFileSync(join(dataDir, 'instances', id, 'pid'), `${child.pid}\n`);
      }
      assert.deepEqual((await runtime.reapOrphans()).sort(), ids);
      assert.ok(pids.every((pid) => !alive(pid)));
      assert.equal((await runtime.inspect(mine.id))?.state, 'running');
    }));
});
