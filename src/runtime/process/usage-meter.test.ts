import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeTimers } from '../../../test/support/fake-timers.js';
import { images, node, removeDataDirs, withRuntime } from '../../../test/support/process-runtime-harness.js';
import { instanceSpec, waitFor } from '../runtime-contract.js';
import { groupUsage, procAvailable, scanProcesses } from './proc-stats.js';

after(removeDataDirs);

const needsProc = { skip: procAvailable() ? false : 'needs /proc' };

/**
 * The sampler's turns and the meters' clock are the test's (fake timers): a CPU figure is the
 * group's own CPU time between two turns over the time the test moved the clock between them,
 * however little of a core the loaded machine gave the process meanwhile.
 */
const INTERVAL_MS = 1_000;

/** Writes `ready` (its pid) in its instance folder, once it has done what comes before. */
const ready =
  "require('fs').writeFileSync(require('path').join(process.env.GANTRY_INSTANCE_DIR, 'ready'), String(process.pid))";
const meterImages = {
  ...images,
  // started (ready) and from then on spending no CPU
  'test/quiet': { command: [node, '-e', `${ready}; setInterval(() => {}, 1 << 30)`] },
  // holds 64 MiB (ready), then spins
  'test/spinning': {
    command: [node, '-e', `const keep = Buffer.alloc(64 * 1024 * 1024, 1); ${ready}; for (;;) { keep[0]++; }`],
  },
};

describe('UsageMeter', () => {
  const isReady = (dataDir: string, id: string) => existsSync(join(dataDir, 'instances', id, 'ready'));
  const pgidOf = (dataDir: string, id: string) => Number(readFileSync(join(dataDir, 'instances', id, 'pid'), 'utf8'));
  /** The group's own CPU time now, in clock ticks, read from /proc by the test. */
  const cpuTicksOf = async (pgid: number) => groupUsage((await scanProcesses()) ?? [], pgid).cpuTicks;

  /** Runs the sampler's next turn, INTERVAL_MS later on the meters' clock, and waits for it to end. */
  const turn = async (timers: FakeTimers): Promise<void> => {
    await waitFor('the sampler to wait for its next turn', () => timers.dues.length === 1, 30_000);
    const due = timers.dues[0]!;
    await timers.advance(due - timers.clock.now());
    // The turn has ended once the loop waits again (its next turn due an interval later).
    await waitFor('the sampler to take its turn', () => timers.dues.length === 1 && timers.dues[0]! > due, 30_000);
  };

  test('a busy process shows its CPU and memory against its allotment, and an idle one stays low', needsProc, () => {
    const timers = new FakeTimers();
    return withRuntime(
      async ({ runtime, dataDir }) => {
        const busy = instanceSpec({ image: 'test/spinning', vcpus: 1, memoryGb: 1 });
        const idle = instanceSpec({ image: 'test/quiet', vcpus: 1, memoryGb: 1 });
        await runtime.start(busy);
        await runtime.start(idle);
        await waitFor(
          'both processes to be started',
          () => isReady(dataDir, busy.id) && isReady(dataDir, idle.id),
          30_000,
        );
        // The figures from here on cover only what each does once started (Node spends tens of ms
        // of CPU starting, however long a loaded machine takes to give it them).
        await turn(timers);
        const pgid = pgidOf(dataDir, busy.id);
        const from = await cpuTicksOf(pgid);
        // Half a second of CPU, read after the turn's own reading: however slowly it comes.
        await waitFor(
          'the busy process to spend half a second of CPU',
          async () => (await cpuTicksOf(pgid)) >= from + 50,
          60_000,
        );
        await turn(timers);

        const stats = (await runtime.inspect(busy.id))?.stats;
        assert.ok(stats);
        // At least 50 ticks (0.5 s) of its own CPU over the one second on the meter's clock.
        assert.ok(stats.cpuUtil >= 50 && stats.cpuUtil <= 100, `cpuUtil ${stats.cpuUtil}`);
        assert.ok(stats.memoryBytes > 64 * 1024 * 1024, `memoryBytes ${stats.memoryBytes}`);
        assert.ok(stats.memoryUtil > 6 && stats.memoryUtil <= 100, `memoryUtil ${stats.memoryUtil}`);
        // Once started the idle process spends nothing: a meter that read another group's CPU
        // (the busy one's, half a second and more over the same second) would read it high.
        const quiet = (await runtime.inspect(idle.id))?.stats;
        assert.ok(quiet);
        assert.ok(quiet.cpuUtil < 5, `an idle process's cpuUtil is low (${quiet.cpuUtil})`);
        assert.ok(quiet.memoryUtil < stats.memoryUtil, 'and it holds less memory than the busy one');
        assert.equal(quiet.gpus, undefined, 'a process host has no real GPUs to read');
      },
      { images: meterImages, statsIntervalMs: INTERVAL_MS, timers, usageClock: timers.clock },
    );
  });

  test(
    'inspect answers the last sample and never measures: between two turns it gives the same figures',
    needsProc,
    () => {
      const timers = new FakeTimers();
      return withRuntime(
        async ({ runtime, dataDir }) => {
          const busy = instanceSpec({ image: 'test/spinning', vcpus: 1, memoryGb: 1 });
          await runtime.start(busy);
          // The first turn runs at the start; the next is a minute away on the fake timers.
          await waitFor('the first sample', () => timers.dues.length === 1, 30_000);
          const first = (await runtime.inspect(busy.id))?.stats;
          assert.ok(first);
          assert.equal(first.cpuUtil, 0, 'a first sample has no time since the last to measure CPU over');
          // What a measurement would read now: the process spent CPU since that sample, and the
          // meter's clock is a second past it (no turn is due), so its CPU figure would not be 0.
          const pgid = pgidOf(dataDir, busy.id);
          const from = await cpuTicksOf(pgid);
          await waitFor('the busy process to spend CPU', async () => (await cpuTicksOf(pgid)) >= from + 10, 60_000);
          await timers.advance(1_000);
          assert.equal(timers.dues.length, 1, 'no turn was due');
          const again = await Promise.all(Array.from({ length: 50 }, () => runtime.inspect(busy.id)));
          for (const status of again) assert.deepEqual(status?.stats, first);
          const [listed] = await runtime.list();
          assert.deepEqual(listed?.stats, first);
        },
        { images: meterImages, statsIntervalMs: 60_000, timers, usageClock: timers.clock },
      );
    },
  );
});
