import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { HealthProbe, ImageSpec } from '../../config.js';
import { FakeClock } from '../../domain/clock.js';
import type { InstanceSpec } from '../runtime.js';
import { ChangeRecorder, describeRuntime, freePort, getJson, instanceSpec, waitFor, type RuntimeUnderTest } from '../runtime-contract.js';
import { ProcessRuntime, type ProcessRuntimeOptions } from './process-runtime.js';
import { procAvailable } from './proc-stats.js';

const node = process.execPath;
const fixture = (name: string): string => join(import.meta.dirname, '..', '..', '..', 'test', 'fixtures', name);
const probe = (port: number, timeoutMs = 10_000): HealthProbe => ({ type: 'http', port, path: '/health', intervalMs: 25, timeoutMs });

const images: Record<string, ImageSpec> = {
  'test/idle': { command: [node, '-e', 'setInterval(() => {}, 1 << 30)'] },
  'test/crashing': { command: [node, '-e', 'console.log("loading model"); console.error("boom: model file missing"); process.exit(3)'] },
  'test/http': { command: [node, fixture('http-server.mjs')], env: { FROM_IMAGE: 'image', OVERRIDDEN: 'by image' }, health: probe(8000) },
  'test/http-unprobed': { command: [node, fixture('http-server.mjs')] },
  'test/never-ready': { command: [node, '-e', 'console.log("still loading"); setInterval(() => {}, 1 << 30)'], health: { ...probe(8000, 300), type: 'tcp' } },
  'test/dies-early': { command: [node, '-e', 'console.error("cannot bind"); setTimeout(() => process.exit(7), 100)'], health: probe(8000) },
  'test/self-kill': { command: [node, '-e', 'console.error("about to die"); process.kill(process.pid, "SIGKILL")'] },
  'test/grandchild': { command: [node, fixture('spawn-grandchild.mjs')] },
  'test/stubborn': { command: [node, fixture('ignore-sigterm.mjs')] },
  'test/busy': { command: [node, '-e', 'const keep = Buffer.alloc(64 * 1024 * 1024, 1); for (;;) { keep[0]++; }'] },
  'test/chatty': { command: [node, '-e', 'const line = "x".repeat(1023) + "\\n"; setInterval(() => { for (let i = 0; i < 64; i++) process.stdout.write(line); }, 5)'] },
  'test/no-such-command': { command: ['gantry-no-such-command-9'] },
  'test/missing-cwd': { command: [node, '-e', '0'], cwd: '/nonexistent/gantry/worker' },
};

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function makeRuntime(overrides: Partial<ProcessRuntimeOptions> = {}): { runtime: ProcessRuntime; dataDir: string; clock: FakeClock } {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-process-runtime-'));
  dirs.push(dataDir);
  const clock = new FakeClock();
  const runtime = new ProcessRuntime({ images, dataDir, clock, logger: pino({ level: 'silent' }), stopGraceMs: 2_000, ...overrides });
  return { runtime, dataDir, clock };
}

/** Runs `body` with a fresh runtime, closing it afterwards whatever happens. */
async function withRuntime(body: (t: ReturnType<typeof makeRuntime>) => Promise<void>, overrides: Partial<ProcessRuntimeOptions> = {}): Promise<void> {
  const t = makeRuntime(overrides);
  try {
    await body(t);
  } finally {
    await t.runtime.close();
  }
}

/** Alive and not a zombie (orphans stay zombies where PID 1 does not reap). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\S+ \(.*\) [ZX] /.test(stat);
  } catch {
    return !procAvailable();
  }
}

const readJson = (path: string): unknown => JSON.parse(readFileSync(path, 'utf8'));

describeRuntime('process', async (): Promise<RuntimeUnderTest> => {
  const { runtime } = makeRuntime();
  return { runtime, images: { idle: 'test/idle', crashing: 'test/crashing', http: 'test/http' } };
});

describe('ProcessRuntime', () => {
  test('a mapped image runs in its instance folder and sees its GPUs, ports, volumes and layered env', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const [web, ssh, metrics] = [await freePort(), await freePort(), await freePort()];
      const spec = instanceSpec({
        image: 'test/http',
        gpuIndices: [1, 3],
        vcpus: 8,
        env: { OVERRIDDEN: 'by pod', GANTRY_INSTANCE_ID: 'spoofed', CUDA_VISIBLE_DEVICES: '0,1,2,3' },
        ports: [
          { private: 8000, public: web, protocol: 'http' },
          { private: 22, public: ssh, protocol: 'tcp' },
          { private: 9100, public: metrics, protocol: 'http' },
        ],
        volumes: [
          { hostPath: join(dataDir, 'disk', 'container'), path: '/scratch', kind: 'container' },
          { hostPath: join(dataDir, 'volumes', 'nv1'), path: '/workspace', kind: 'network' },
        ],
      });
      const changes = new ChangeRecorder(runtime);
      await runtime.start(spec);
      await changes.next(spec.id, 'running');
      const { env, cwd } = (await getJson(web, '/info')) as { env: Record<string, string>; cwd: string };

      assert.equal(cwd, join(dataDir, 'instances', spec.id));
      assert.equal(env.GANTRY_INSTANCE_DIR, cwd);
      assert.equal(env.GANTRY_INSTANCE_ID, spec.id, 'platform variables win over the pod env');
      assert.equal(env.CUDA_VISIBLE_DEVICES, '1,3');
      assert.equal(env.NVIDIA_VISIBLE_DEVICES, '1,3');
      assert.equal(env.RUNPOD_GPU_COUNT, '2');
      assert.equal(env.RUNPOD_CPU_COUNT, '8');
      assert.equal(env.RUNPOD_PUBLIC_IP, '127.0.0.1');
      assert.equal(env.PORT, String(web));
      assert.equal(env.GANTRY_PORT_8000, String(web));
      assert.equal(env.GANTRY_PORT_22, String(ssh));
      assert.equal(env.GANTRY_PORT_9100, String(metrics));
      assert.equal(env.RUNPOD_TCP_PORT_22, String(ssh));
      assert.equal(env.RUNPOD_TCP_PORT_8000, undefined, 'only tcp bindings get RUNPOD_TCP_PORT_*');
      assert.equal(env.FROM_IMAGE, 'image');
      assert.equal(env.OVERRIDDEN, 'by pod', 'the pod env wins over the image env');
      assert.equal(env.GANTRY_LOG_LEVEL, undefined, "the server's own environment does not leak");
      assert.equal(env.PATH, process.env.PATH);
      assert.equal(env.GANTRY_VOLUME_0, join(dataDir, 'disk', 'container'));
      assert.equal(env.GANTRY_VOLUME_1, join(dataDir, 'volumes', 'nv1'));
      assert.equal(env.RUNPOD_VOLUME_PATH, join(dataDir, 'volumes', 'nv1'), 'the first network or persistent volume');
      assert.equal(env.GANTRY_VOLUME_PATH, join(dataDir, 'volumes', 'nv1'));
      assert.deepEqual(JSON.parse(env.GANTRY_MOUNTS ?? 'null'), [
        { path: '/scratch', hostPath: join(dataDir, 'disk', 'container'), kind: 'container' },
        { path: '/workspace', hostPath: join(dataDir, 'volumes', 'nv1'), kind: 'network' },
      ]);
      assert.ok(existsSync(join(dataDir, 'volumes', 'nv1')), 'volume folders are created');
      assert.ok(existsSync(join(dataDir, 'disk', 'container')));
    }));

  test('an image without a health check is running once its process has spawned', () =>
    withRuntime(async ({ runtime }) => {
      const spec = instanceSpec({ image: 'test/idle' });
      const started = await runtime.start(spec);
      assert.equal(started.state, 'running');
    }));

  test('startedAt comes from the injected clock', () =>
    withRuntime(async ({ runtime, clock }) => {
      clock.set(Date.UTC(2030, 4, 6));
      const started = await runtime.start(instanceSpec({ image: 'test/idle' }));
      assert.equal(started.startedAt, Date.UTC(2030, 4, 6));
      const placeholder = await runtime.start(instanceSpec());
      assert.equal(placeholder.startedAt, Date.UTC(2030, 4, 6));
    }));

  test('a health check that never passes fails the instance with a timeout reason and kills its process', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const spec = instanceSpec({ image: 'test/never-ready', ports: [{ private: 8000, public: await freePort(), protocol: 'tcp' }] });
      const changes = new ChangeRecorder(runtime);
      assert.equal((await runtime.start(spec)).state, 'starting');
      const pid = Number(readFileSync(join(dataDir, 'instances', spec.id, 'pid'), 'utf8'));
      const failed = await changes.next(spec.id, 'failed');
      assert.match(failed.reason ?? '', /health check tcp 127\.0\.0\.1:\d+ did not pass within 300 ms/);
      assert.match(failed.reason ?? '', /still loading/, 'the reason carries the output tail');
      await waitFor('the failed instance process to be killed', () => !alive(pid));
      assert.equal((await runtime.inspect(spec.id))?.state, 'failed');
      assert.deepEqual(changes.statesOf(spec.id), ['starting', 'failed']);
    }));

  test('a process that exits before its health check passes fails with its exit code', () =>
    withRuntime(async ({ runtime }) => {
      const spec = instanceSpec({ image: 'test/dies-early', ports: [{ private: 8000, public: await freePort(), protocol: 'http' }] });
      const changes = new ChangeRecorder(runtime);
      await runtime.start(spec);
      const failed = await changes.next(spec.id, 'failed');
      assert.equal(failed.exitCode, 7);
      assert.match(failed.reason ?? '', /process exited with code 7 before its health check passed/);
      assert.match(failed.reason ?? '', /cannot bind/);
    }));

  test('a process killed by a signal is exited with the signal named and 128+n as its code', () =>
    withRuntime(async ({ runtime }) => {
      const spec = instanceSpec({ image: 'test/self-kill' });
      const changes = new ChangeRecorder(runtime);
      await runtime.start(spec);
      const exited = await changes.next(spec.id, 'exited');
      assert.equal(exited.exitCode, 137);
      assert.match(exited.reason ?? '', /^killed by signal SIGKILL; last output:\nabout to die$/);
    }));

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
          'test/many-lines': { command: [node, '-e', 'for (let i = 0; i < 100; i++) console.log(`line ${i} ` + "y".repeat(200)); process.exitCode = 1'] },
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

  test('stop terminates the whole process group: the process and the grandchild it forked', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const spec = instanceSpec({ image: 'test/grandchild' });
      await runtime.start(spec);
      const pidsFile = join(dataDir, 'instances', spec.id, 'pids.json');
      // the fixture's write may be seen half done: wait until the file parses
      const parsed = (): unknown => {
        try {
          return readJson(pidsFile);
        } catch {
          return null;
        }
      };
      await waitFor('the fixture to report its pids', () => parsed() !== null);
      const pids = parsed() as { child: number; grandchild: number };
      assert.ok(alive(pids.child) && alive(pids.grandchild));
      await runtime.stop(spec.id);
      assert.equal(alive(pids.child), false, 'the process is gone when stop resolves');
      assert.equal(alive(pids.grandchild), false, 'so is its grandchild');
      assert.equal(await runtime.inspect(spec.id), null);
      assert.equal(existsSync(join(dataDir, 'instances', spec.id, 'pid')), false, 'the pid file goes with it');
    }));

  test('a process that ignores SIGTERM is SIGKILLed once the grace period is over', () =>
    withRuntime(
      async ({ runtime, dataDir }) => {
        const spec = instanceSpec({ image: 'test/stubborn' });
        await runtime.start(spec);
        const ready = join(dataDir, 'instances', spec.id, 'ready');
        await waitFor('the fixture to install its SIGTERM handler', () => existsSync(ready));
        const pid = Number(readFileSync(ready, 'utf8'));
        const t0 = performance.now();
        await runtime.stop(spec.id);
        const took = performance.now() - t0;
        assert.equal(alive(pid), false);
        assert.ok(took >= 280, `stop waited the grace period (${Math.round(took)} ms)`);
        assert.ok(took < 3_000, `and not much longer (${Math.round(took)} ms)`);
        assert.match(readFileSync(join(dataDir, 'instances', spec.id, 'output.log'), 'utf8'), /SIGTERM ignored/);
      },
      { stopGraceMs: 300 },
    ));

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
        message: 'cannot start image "test/missing-cwd": its working directory /nonexistent/gantry/worker does not exist',
      });
      await assert.rejects(runtime.start(instanceSpec({ image: 'test/http', ports: [{ private: 22, public: 30022, protocol: 'tcp' }] })), {
        message: 'cannot start image "test/http": its health check probes port 8000, which this instance does not expose (ports: 22/tcp)',
      });
      await assert.rejects(runtime.start(instanceSpec({ image: 'test/idle', args: `--prompt "unfinished` })), /unterminated " quote/);
      assert.deepEqual(await runtime.list(), []);
    }));

  test('a command that is not executable rejects start saying so', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const script = join(dataDir, 'handler.sh');
      writeFileSync(script, '#!/bin/sh\necho hi\n', { mode: 0o644 });
      const withScript = new ProcessRuntime({ images: { 'my-worker:dev': { command: [script] } }, dataDir, clock: new FakeClock(), logger: pino({ level: 'silent' }), stopGraceMs: 500 });
      try {
        await assert.rejects(withScript.start(instanceSpec({ image: 'my-worker:dev' })), {
          message: new RegExp(`^cannot start image "my-worker:dev": command "${script}" is not executable: permission denied`),
        });
      } finally {
        await withScript.close();
      }
      assert.deepEqual(await runtime.list(), []);
    }));

  test('an instance that exited can be started again under the same id', () =>
    withRuntime(async ({ runtime }) => {
      const spec = instanceSpec({ image: 'test/crashing' });
      const changes = new ChangeRecorder(runtime);
      await runtime.start(spec);
      await changes.next(spec.id, 'exited');
      const again = await runtime.start({ ...spec, image: 'test/idle' });
      assert.equal(again.state, 'running');
    }));

  test('placeholders for unmapped images are running at once with zero stats, and 2,000 of them are cheap', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const specs: InstanceSpec[] = Array.from({ length: 2_000 }, () => instanceSpec({ image: 'someone/unmapped:v1', ports: [{ private: 80, public: 1, protocol: 'http' }] }));
      const t0 = performance.now();
      const started = await Promise.all(specs.map((s) => runtime.start(s)));
      const listed = await runtime.list();
      const startMs = performance.now() - t0;
      assert.ok(started.every((s) => s.state === 'running' && s.exitCode === null));
      assert.equal(listed.length, 2_000);
      assert.deepEqual((await runtime.inspect(specs[0]!.id))?.stats, { cpuUtil: 0, memoryUtil: 0, memoryBytes: 0 });
      const t1 = performance.now();
      await Promise.all(specs.map((s) => runtime.stop(s.id)));
      const stopMs = performance.now() - t1;
      assert.deepEqual(await runtime.list(), []);
      assert.ok(startMs < 2_000, `2,000 placeholder starts took ${Math.round(startMs)} ms`);
      assert.ok(stopMs < 1_000, `2,000 placeholder stops took ${Math.round(stopMs)} ms`);
      assert.equal(existsSync(join(dataDir, 'instances')), false, 'placeholders touch no files');
    }));

  test('a process group left behind by a previous server is killed when the same instance starts again', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const spec = instanceSpec({ image: 'test/idle' });
      // The "previous server": started the instance detached, wrote its pid file, then died.
      const leftover = spawn(node, ['-e', 'setInterval(() => {}, 1 << 30)'], { detached: true, stdio: 'ignore', env: { GANTRY_INSTANCE_ID: spec.id } });
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

  test('a pid file naming a process that is not ours leaves that process alone', { skip: procAvailable() ? false : 'needs /proc' }, () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const spec = instanceSpec({ image: 'test/idle' });
      const stranger = spawn(node, ['-e', 'setInterval(() => {}, 1 << 30)'], { detached: true, stdio: 'ignore', env: { GANTRY_INSTANCE_ID: 'someone-else' } });
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
    }));

  test('reapOrphans kills every leftover instance a previous server left, but none of its own', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const mine = instanceSpec({ image: 'test/idle' });
      await runtime.start(mine);
      const ids = ['orphan-a', 'orphan-b'];
      const pids: number[] = [];
      for (const id of ids) {
        const child = spawn(node, ['-e', 'setInterval(() => {}, 1 << 30)'], { detached: true, stdio: 'ignore', env: { GANTRY_INSTANCE_ID: id } });
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
