/**
 * The Docker runtime's utilisation sampler on the real engine: figures come from the engine's
 * stats, readers never cause an engine call, and the loop stops when nothing runs. The engine is
 * reached through a socket proxy that counts the requests going through.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeTimers, settle } from '../../../test/support/fake-timers.js';
import {
  DOCKER_HOST,
  dockerEngine,
  makeDockerRuntime,
  noEngine,
  testHost,
  type RuntimeFixture,
} from '../../../test/support/docker.js';
import { removeStandIns, standInNvidiaSmi } from '../../../test/support/nvidia-smi.js';
import { UnixSocketProxy } from '../../../test/support/socket-proxy.js';
import { ChangeRecorder, instanceSpec, waitFor } from '../runtime-contract.js';
import type { DockerRuntimeOptions } from './docker-runtime-options.js';
import { gpuIndicesOf } from './container-sampler.js';

const engine = await dockerEngine();
after(() => engine?.client.close());
after(removeStandIns);

const BUSY = '-e "const keep = Buffer.alloc(96 * 1024 * 1024, 1); for (;;) { keep[0]++; }"';
const MiB = 1024 * 1024;

test('a container’s GPUs are read back from the NVIDIA_VISIBLE_DEVICES the platform set, by UUID or index', () => {
  const uuids = ['GPU-a', 'GPU-b', 'GPU-c'];
  assert.deepEqual(gpuIndicesOf(['A=1', 'NVIDIA_VISIBLE_DEVICES=GPU-c,GPU-a'], uuids), [2, 0]);
  assert.deepEqual(gpuIndicesOf(['NVIDIA_VISIBLE_DEVICES=1'], uuids), [1]);
  assert.deepEqual(gpuIndicesOf(['NVIDIA_VISIBLE_DEVICES=none'], uuids), []);
  assert.deepEqual(
    gpuIndicesOf(['NVIDIA_VISIBLE_DEVICES=GPU-zzz,7'], uuids),
    [],
    'a GPU the host does not have is not read',
  );
  assert.deepEqual(gpuIndicesOf([], uuids), []);
});

if (!engine) {
  test('the Docker utilisation sampler', { skip: noEngine() }, () => {});
} else if (!DOCKER_HOST.startsWith('unix://')) {
  test(
    'the Docker utilisation sampler',
    { skip: `these tests count engine calls through a unix socket proxy; DOCKER_HOST ${DOCKER_HOST} is not one` },
    () => {},
  );
} else {
  const e = engine;
  const withRuntime = async (
    body: (t: RuntimeFixture & { proxy: UnixSocketProxy; statsCalls: () => number }) => Promise<void>,
    overrides: Partial<DockerRuntimeOptions> = {},
  ) => {
    const proxy = new UnixSocketProxy(DOCKER_HOST.slice('unix://'.length));
    await proxy.start();
    const t = makeDockerRuntime(e, { dockerHost: `unix://${proxy.path}`, ...overrides });
    const statsCalls = () => proxy.requests.filter((r) => /^GET \/containers\/[^/]+\/stats\?/.test(r)).length;
    try {
      await body({ ...t, proxy, statsCalls });
    } finally {
      await t.cleanup();
      await proxy.close();
    }
  };

  describe('ContainerSampler', () => {
    test('a container’s memory and CPU figures come from the engine, against its allotment', () =>
      withRuntime(
        async ({ runtime, namespace }) => {
          const busy = instanceSpec({ image: e.images.node, args: BUSY, vcpus: 1, memoryGb: 1 });
          const idle = instanceSpec({ image: e.images.idle, vcpus: 1, memoryGb: 1 });
          const changes = new ChangeRecorder(runtime);
          await runtime.start(busy);
          await runtime.start(idle);
          await changes.next(busy.id, 'running', 30_000);
          const stats = await waitFor(
            'the busy container to show CPU and memory use',
            async () => {
              const s = (await runtime.inspect(busy.id))?.stats;
              // A spinning loop shows CPU use, but what share of a core it gets is the machine's to
              // give: with twenty tasks running on two cores it is under a tenth, so the figure is
              // only required to be clearly above zero.
              return s && s.cpuUtil > 1 && s.memoryBytes > 96 * MiB ? s : null;
            },
            30_000,
          );
          assert.ok(stats.cpuUtil <= 100);
          const expectedUtil = (stats.memoryBytes / 1024 ** 3) * 100;
          assert.ok(
            Math.abs(stats.memoryUtil - expectedUtil) < 0.2,
            `memoryUtil ${stats.memoryUtil} is memoryBytes over the 1 GB limit (${expectedUtil})`,
          );
          // The engine's own reading, now: the same order as the sampled one (the process holds its 96 MiB throughout).
          const direct = await e.client.containerStats(`gantry-${namespace}-${busy.id}`);
          const engineBytes =
            (direct?.memory_stats?.usage ?? 0) -
            (direct?.memory_stats?.stats?.inactive_file ?? direct?.memory_stats?.stats?.total_inactive_file ?? 0);
          assert.ok(
            Math.abs(engineBytes - stats.memoryBytes) < 0.25 * engineBytes,
            `sampled ${stats.memoryBytes} B, the engine says ${engineBytes} B`,
          );
          const quiet = await waitFor(
            'the idle container to have figures',
            async () => (await runtime.inspect(idle.id))?.stats ?? null,
            30_000,
          );
          assert.ok(quiet.cpuUtil < 15, `an idle container's cpuUtil is low (${quiet.cpuUtil})`);
          assert.ok(quiet.memoryBytes < 32 * MiB, `an idle container holds little memory (${quiet.memoryBytes})`);
          assert.equal(stats.gpus, undefined, 'a host without GPUs runs no nvidia-smi and reports no GPU figures');
        },
        { statsIntervalMs: 300 },
      ));

    test('many reads of running containers cause no engine stats calls: inspect and list answer the last sample', async () => {
      const timers = new FakeTimers();
      await withRuntime(
        async ({ runtime, statsCalls }) => {
          const spec = instanceSpec({ image: e.images.idle, vcpus: 1, memoryGb: 1 });
          await runtime.start(spec);
          await waitFor('a first sample', async () => (await runtime.inspect(spec.id))?.stats ?? null, 30_000);
          await waitFor('the first turn to end', () => timers.dues.length === 1, 30_000);
          const before = statsCalls();
          assert.equal(before, 1, 'one container, one turn: one stats call');
          for (let i = 0; i < 300; i++) {
            await runtime.inspect(spec.id);
            await runtime.list();
          }
          assert.equal(statsCalls(), before, '600 reads made no stats call');
          // A call the reads set off without waiting for it went to the engine before the next
          // turn's, which the turn waits for: once the turn ends, every such call is counted.
          const due = timers.dues[0]!;
          await timers.advance(60_000);
          await waitFor('the next turn to end', () => timers.dues.length === 1 && timers.dues[0]! > due, 30_000);
          assert.equal(statsCalls(), before + 1, '600 reads made no stats call: the one since is the next turn’s');
        },
        { statsIntervalMs: 60_000, timers },
      );
    });

    test('the sampler stops when nothing runs, and starts again with the next instance', async () => {
      const timers = new FakeTimers();
      await withRuntime(
        async ({ runtime, statsCalls }) => {
          const first = instanceSpec({ image: e.images.idle, vcpus: 1, memoryGb: 1 });
          await runtime.start(first);
          await waitFor('the first turn', () => statsCalls() === 1 && timers.dues.length === 1, 30_000);
          await timers.advance(1_000);
          await waitFor('the second turn', () => statsCalls() === 2 && timers.dues.length === 1, 30_000);
          await runtime.stop(first.id);
          await timers.advance(1_000);
          await settle();
          assert.deepEqual(timers.dues, [], 'nothing runs: the loop ended');
          await timers.advance(10_000);
          await settle();
          assert.equal(statsCalls(), 2, 'no stats call while nothing runs');

          const second = instanceSpec({ image: e.images.idle, vcpus: 1, memoryGb: 1 });
          await runtime.start(second);
          await waitFor('a turn for the new instance', () => timers.dues.length === 1, 30_000);
          // The new instance's turn waited for its stats call, made after anything sent while
          // nothing ran: it is the only one since.
          assert.equal(statsCalls(), 3, 'no stats call while nothing runs: the one since is the new instance’s turn');
        },
        { statsIntervalMs: 1_000, timers },
      );
    });

    test('nvidia-smi runs once per turn for the whole host, and only while some container has GPUs', async () => {
      const timers = new FakeTimers();
      const uuids = ['GPU-0000-a', 'GPU-0000-b'];
      const smi = standInNvidiaSmi({ utilization: `0, ${uuids[0]}, 50, 100, 1000\n1, ${uuids[1]}, 20, 500, 1000` });
      const host = testHost({
        gpuTypeId: 'NVIDIA GeForce RTX 4090',
        gpuCount: 2,
        gpuUuids: uuids,
        gpuMode: 'env-only',
      });
      const gpuCalls = () => smi.calls().filter((c) => c.includes('utilization.gpu')).length;
      await withRuntime(
        async ({ runtime, statsCalls }) => {
          const cpuOnly = instanceSpec({ image: e.images.idle, vcpus: 1, memoryGb: 1 });
          await runtime.start(cpuOnly);
          await waitFor('a turn', () => statsCalls() === 1 && timers.dues.length === 1, 30_000);
          assert.equal(gpuCalls(), 0, 'no container has GPUs: nvidia-smi is not run');

          const a = instanceSpec({ image: e.images.idle, vcpus: 1, memoryGb: 1, gpuIndices: [1] });
          const b = instanceSpec({ image: e.images.idle, vcpus: 1, memoryGb: 1, gpuIndices: [0] });
          await runtime.start(a);
          await runtime.start(b);
          await timers.advance(1_000);
          await waitFor('a turn over three containers', () => statsCalls() === 4 && timers.dues.length === 1, 30_000);
          await timers.advance(1_000);
          await waitFor('another', () => statsCalls() === 7 && timers.dues.length === 1, 30_000);
          assert.equal(gpuCalls(), 2, 'two turns with GPU containers: two nvidia-smi calls, not one per container');
          assert.deepEqual((await runtime.inspect(a.id))?.stats?.gpus, [{ id: uuids[1], util: 20, memoryUtil: 50 }]);
          assert.deepEqual((await runtime.inspect(b.id))?.stats?.gpus, [{ id: uuids[0], util: 50, memoryUtil: 10 }]);
          assert.equal((await runtime.inspect(cpuOnly.id))?.stats?.gpus, undefined);
        },
        { host, statsIntervalMs: 1_000, timers, nvidiaSmiEnv: smi.env },
      );
    });
  });
}
