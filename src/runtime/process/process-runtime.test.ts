import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  alive,
  makeRuntime,
  readJson,
  removeDataDirs,
  withRuntime,
} from '../../../test/support/process-runtime-harness.js';
import type { ProbeTiming } from '../health-probe.js';
import type { InstanceSpec } from '../runtime.js';
import { realGraceTimer, type GraceTimer } from './process-group.js';
import {
  ChangeRecorder,
  describeRuntime,
  freePort,
  getJson,
  instanceSpec,
  waitFor,
  type RuntimeUnderTest,
} from '../runtime-contract.js';

after(removeDataDirs);

describeRuntime('process', async (): Promise<RuntimeUnderTest> => {
  const { runtime, dataDir } = makeRuntime();
  return {
    runtime,
    images: { idle: 'test/idle', crashing: 'test/crashing', http: 'test/http' },
    adoptsAfterClose: false,
    entrypointOverride: false,
    reopen: async () => makeRuntime({ dataDir }).runtime,
  };
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
          { path: '/scratch', kind: 'persistent' },
          { path: '/workspace', kind: 'network', volumeId: 'nv1' },
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
      const persistent = join(dataDir, 'pods', spec.id, 'persistent');
      assert.equal(env.GANTRY_VOLUME_0, persistent);
      assert.equal(env.GANTRY_VOLUME_1, join(dataDir, 'volumes', 'nv1'));
      assert.equal(env.RUNPOD_VOLUME_PATH, persistent, 'the first volume');
      assert.equal(env.GANTRY_VOLUME_PATH, persistent);
      assert.deepEqual(JSON.parse(env.GANTRY_MOUNTS ?? 'null'), [
        { path: '/scratch', hostPath: persistent, kind: 'persistent' },
        { path: '/workspace', hostPath: join(dataDir, 'volumes', 'nv1'), kind: 'network' },
      ]);
      assert.ok(existsSync(join(dataDir, 'volumes', 'nv1')), 'volume folders are created');
      assert.ok(existsSync(persistent));
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

  test('a health check that never passes fails the instance with a timeout reason and kills its process', async () => {
    const probeTime = heldProbeTiming();
    await withRuntime(
      async ({ runtime, dataDir }) => {
        const spec = instanceSpec({
          image: 'test/never-ready',
          ports: [{ private: 8000, public: await freePort(), protocol: 'tcp' }],
        });
        const changes = new ChangeRecorder(runtime);
        assert.equal((await runtime.start(spec)).state, 'starting');
        const pid = Number(readFileSync(join(dataDir, 'instances', spec.id, 'pid'), 'utf8'));
        const output = join(dataDir, 'instances', spec.id, 'output.log');
        await waitFor('the fixture to say it is loading', () => readFileSync(output, 'utf8').includes('still loading'));
        assert.equal((await runtime.inspect(spec.id))?.state, 'starting', 'no probe time has passed yet');
        probeTime.release();
        const failed = await changes.next(spec.id, 'failed');
        assert.match(failed.reason ?? '', /health check tcp 127\.0\.0\.1:\d+ did not pass within 300 ms/);
        assert.match(failed.reason ?? '', /still loading/, 'the reason carries the output tail');
        await waitFor('the failed instance process to be killed', () => !alive(pid));
        assert.equal((await runtime.inspect(spec.id))?.state, 'failed');
        assert.deepEqual(changes.statesOf(spec.id), ['starting', 'failed']);
      },
      { probeTiming: probeTime.timing },
    );
  });

  test('a process that exits before its health check passes fails with its exit code', () =>
    withRuntime(async ({ runtime }) => {
      const spec = instanceSpec({
        image: 'test/dies-early',
        ports: [{ private: 8000, public: await freePort(), protocol: 'http' }],
      });
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

  test('a process that ignores SIGTERM is SIGKILLed once the grace period is over', async () => {
    // The grace runs on real timers, watched: how long the machine then takes to kill and reap
    // the process is no part of the rule, what ended the grace is.
    let pid = 0;
    const graces: Array<{ ms: number; aliveWhenOver: boolean }> = [];
    const graceTimer: GraceTimer = async (ms, signal) => {
      await realGraceTimer(ms, signal);
      graces.push({ ms, aliveWhenOver: alive(pid) });
    };
    await withRuntime(
      async ({ runtime, dataDir }) => {
        const spec = instanceSpec({ image: 'test/stubborn' });
        await runtime.start(spec);
        const ready = join(dataDir, 'instances', spec.id, 'ready');
        await waitFor('the fixture to install its SIGTERM handler', () => existsSync(ready));
        pid = Number(readFileSync(ready, 'utf8'));
        const t0 = performance.now();
        await runtime.stop(spec.id);
        const took = performance.now() - t0;
        assert.equal(alive(pid), false);
        assert.ok(took >= 280, `stop waited the grace period (${Math.round(took)} ms)`);
        assert.deepEqual(
          graces,
          [{ ms: 300, aliveWhenOver: true }],
          'the grace of stopGraceMs ran out with the process alive: the SIGKILL after it ended the process',
        );
        assert.match(readFileSync(join(dataDir, 'instances', spec.id, 'output.log'), 'utf8'), /SIGTERM ignored/);
      },
      { stopGraceMs: 300, graceTimer },
    );
  });

  test('stop keeps the pod folder; remove deletes it and the instance folder; removeVolume deletes the volume folder', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const spec = instanceSpec({
        image: 'test/idle',
        volumes: [
          { path: '/workspace', kind: 'persistent' },
          { path: '/net', kind: 'network', volumeId: 'nv7' },
        ],
      });
      await runtime.start(spec);
      const pid = Number(readFileSync(join(dataDir, 'instances', spec.id, 'pid'), 'utf8'));
      await runtime.stop(spec.id);
      assert.ok(existsSync(join(dataDir, 'pods', spec.id, 'persistent')), 'stop keeps the persistent volume');
      await runtime.start(spec);
      const again = Number(readFileSync(join(dataDir, 'instances', spec.id, 'pid'), 'utf8'));
      await runtime.remove(spec.id);
      assert.equal(alive(again), false, 'remove stops the process first');
      assert.equal(alive(pid), false);
      assert.equal(existsSync(join(dataDir, 'pods', spec.id)), false);
      assert.equal(existsSync(join(dataDir, 'instances', spec.id)), false);
      assert.ok(existsSync(join(dataDir, 'volumes', 'nv7')), 'a network volume outlives the instances that mounted it');
      await runtime.removeVolume({ kind: 'network', volumeId: 'nv7' });
      assert.equal(existsSync(join(dataDir, 'volumes', 'nv7')), false);
    }));

  test('an id that could name a folder outside its own is refused, and nothing is deleted', () =>
    withRuntime(async ({ runtime, dataDir }) => {
      const bystander = join(dataDir, 'pods', 'keep-me');
      mkdirSync(bystander, { recursive: true });
      for (const id of ['..', '.', '', 'a/../..', 'x\\y']) {
        await assert.rejects(runtime.remove(id), /cannot name a folder/);
        await assert.rejects(runtime.removeVolume({ kind: 'network', volumeId: id }), /cannot name a folder/);
      }
      await assert.rejects(
        runtime.start(instanceSpec({ id: '../escape', image: 'test/idle' })),
        /cannot start image "test\/idle": instance id "..\/escape" cannot name a folder/,
      );
      await assert.rejects(
        runtime.start(
          instanceSpec({ image: 'test/idle', volumes: [{ kind: 'network', volumeId: '../../etc', path: '/v' }] }),
        ),
        /volume id "..\/..\/etc" cannot name a folder/,
      );
      assert.ok(existsSync(bystander));
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
      const specs: InstanceSpec[] = Array.from({ length: 2_000 }, () =>
        instanceSpec({ image: 'someone/unmapped:v1', ports: [{ private: 80, public: 1, protocol: 'http' }] }),
      );
      // Cheap is this process's CPU time: the wall clock also counts the turns of whatever else
      // the machine runs, and placeholders do all their work here (no child, no file).
      const t0 = cpuMs();
      const started = await Promise.all(specs.map((s) => runtime.start(s)));
      const listed = await runtime.list();
      const startMs = cpuMs() - t0;
      assert.ok(started.every((s) => s.state === 'running' && s.exitCode === null));
      assert.equal(listed.length, 2_000);
      assert.deepEqual((await runtime.inspect(specs[0]!.id))?.stats, { cpuUtil: 0, memoryUtil: 0, memoryBytes: 0 });
      const t1 = cpuMs();
      await Promise.all(specs.map((s) => runtime.stop(s.id)));
      const stopMs = cpuMs() - t1;
      assert.deepEqual(await runtime.list(), []);
      assert.ok(startMs < 2_000, `2,000 placeholder starts took ${Math.round(startMs)} ms of CPU`);
      assert.ok(stopMs < 1_000, `2,000 placeholder stops took ${Math.round(stopMs)} ms of CPU`);
      assert.equal(existsSync(join(dataDir, 'instances')), false, 'placeholders touch no files');
    }));
});

/**
 * Health-check time that stands still until `release()`, then passes on the probe loop's own
 * waits: the deadline cannot run out before the test has seen what it needs, however slow the machine.
 */
function heldProbeTiming(): { timing: ProbeTiming; release: () => void } {
  let now = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const timing: ProbeTiming = {
    now: () => now,
    sleep: async (ms, signal) => {
      signal.throwIfAborted();
      const aborted = new Promise<never>((_resolve, reject) => {
        const onAbort = (): void => reject(signal.reason as Error);
        signal.addEventListener('abort', onAbort, { once: true });
        void released.then(() => signal.removeEventListener('abort', onAbort));
      });
      await Promise.race([released, aborted]);
      now += ms;
    },
  };
  return { timing, release };
}

/** CPU time this process has used (user and system), in ms. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1_000;
}
