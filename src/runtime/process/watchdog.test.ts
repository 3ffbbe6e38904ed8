// The watchdog runs on real timers (it is a process of its own, outliving the server that could
// inject a clock), so these tests use short grace periods and measure them.
import { describe, test, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { alive, images, makeRuntime, node, removeDataDirs } from '../../../test/support/process-runtime-harness.js';
import { FakeClock } from '../../domain/clock.js';
import { instanceSpec, waitFor } from '../runtime-contract.js';
import { isLiveState, procAvailable, readEnviron, scanProcesses } from './proc-stats.js';
import { ProcessRuntime } from './process-runtime.js';
import { WATCHDOG_SCRIPT } from './watchdog.js';

const root = join(import.meta.dirname, '..', '..', '..');
const serverFixture = join(root, 'test', 'fixtures', 'process-runtime-server.ts');
const dirs: string[] = [];
const strays: number[] = [];
after(() => {
  for (const pid of strays) signal(pid, 'SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  removeDataDirs();
});

const signal = (pid: number, name: NodeJS.Signals): void => {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
};
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-watchdog-'));
  dirs.push(dir);
  return dir;
}

interface ServerLike {
  child: ChildProcess;
  watchdog: number;
  pids: Record<string, number>;
}

/** Starts the server-like fixture and waits for its line: the watchdog's pid and each instance's. */
async function startServer(options: {
  dataDir: string;
  orphanGraceMs: number;
  stopGraceMs: number;
  instances: { id: string; image: string }[];
  killWatchdogAfter?: number;
}): Promise<ServerLike> {
  const child = spawn(node, ['--import', 'tsx', serverFixture, JSON.stringify(options)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const line = await waitFor(
    'the server-like process to start its instances',
    () => (out.includes('\n') ? out.slice(0, out.indexOf('\n')) : child.exitCode !== null ? `exited: ${err}` : null),
    30_000,
  );
  const parsed = JSON.parse(line) as { watchdog: number; pids: Record<string, number> };
  strays.push(parsed.watchdog, ...Object.values(parsed.pids));
  return { child, ...parsed };
}

/** The pids of a test/grandchild instance (its fixture writes them once both run). */
async function grandchildPids(dir: string, id: string): Promise<{ child: number; grandchild: number }> {
  const path = join(dir, 'instances', id, 'pids.json');
  const read = (): { child: number; grandchild: number } | null => {
    try {
      return JSON.parse(readFileSync(path, 'utf8')) as { child: number; grandchild: number };
    } catch {
      return null;
    }
  };
  const pids = await waitFor('the grandchild fixture to report its pids', read);
  strays.push(pids.grandchild);
  return pids;
}

/** Kills the server like the OOM killer would, and answers when (performance.now()). */
async function killHard(server: ServerLike): Promise<number> {
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGKILL');
  const at = performance.now();
  await exited;
  return at;
}

/** Checks every `everyMs` that all `pids` are alive, until `untilMs` after `since`; answers how many checks passed. */
async function staysAlive(
  pids: number[],
  since: number,
  untilMs: number,
  graceMs: number,
  everyMs = 50,
): Promise<void> {
  // How many checks fit in the time depends on the machine's load; what proves the rule is a check
  // made once `untilMs` has passed (a stopped process does not come back), read against the grace
  // only if the machine let it happen inside the grace.
  for (let done = false; !done; await pause(everyMs)) {
    done = performance.now() - since >= untilMs;
    const dead = pids.filter((pid) => !alive(pid));
    const at = performance.now() - since;
    if (dead.length && at < graceMs)
      assert.fail(
        `processes ${dead.join(', ')} were stopped ${Math.round(at)} ms after the server died, inside the grace`,
      );
    if (done && at >= graceMs) assert.fail(`the machine let no check happen between ${untilMs} and ${graceMs} ms`);
  }
}

/** Waits until `pid` is gone, and answers how long after `since` it was seen gone. */
async function goneAfter(pid: number, since: number, timeoutMs: number): Promise<number> {
  await waitFor(`process ${pid} to be stopped`, () => !alive(pid), timeoutMs);
  return performance.now() - since;
}

describe('the process watchdog', () => {
  test('the instances of a server killed with SIGKILL run through the grace, then their whole groups are stopped, with SIGKILL for what ignores SIGTERM', async (t: TestContext) => {
    const dir = dataDir();
    const graceMs = 2_000;
    const stopGraceMs = 500;
    const server = await startServer({
      dataDir: dir,
      orphanGraceMs: graceMs,
      stopGraceMs,
      instances: [
        { id: 'idle', image: 'test/idle' },
        { id: 'forks', image: 'test/grandchild' },
        { id: 'stubborn', image: 'test/stubborn' },
      ],
    });
    const { grandchild } = await grandchildPids(dir, 'forks');
    await waitFor('the stubborn fixture to install its SIGTERM handler', () =>
      existsSync(join(dir, 'instances', 'stubborn', 'ready')),
    );
    const { idle, forks, stubborn } = server.pids as Record<'idle' | 'forks' | 'stubborn', number>;
    assert.ok(alive(server.watchdog), 'the watchdog runs beside the server');

    const killedAt = await killHard(server);
    await staysAlive([idle, forks, grandchild, stubborn, server.watchdog], killedAt, graceMs / 2, graceMs);

    const [idleGone, forksGone, grandchildGone, stubbornGone] = await Promise.all(
      [idle, forks, grandchild, stubborn].map((pid) => goneAfter(pid, killedAt, graceMs + stopGraceMs + 10_000)),
    );
    for (const [what, ms] of [
      ['idle', idleGone],
      ['forks', forksGone],
      ['its grandchild', grandchildGone],
    ] as const) {
      assert.ok(ms! >= graceMs, `${what} was stopped after the grace (${Math.round(ms!)} ms after the kill)`);
      assert.ok(
        ms! < graceMs + 3_000,
        `${what} was stopped soon after the grace (${Math.round(ms!)} ms after the kill)`,
      );
    }
    assert.ok(
      stubbornGone! >= graceMs + stopGraceMs,
      `what ignores SIGTERM is SIGKILLed ${stopGraceMs} ms later (${Math.round(stubbornGone!)} ms after the kill)`,
    );
    await waitFor('the watchdog to exit once done', () => !alive(server.watchdog));
    const log = readFileSync(join(dir, 'watchdog.log'), 'utf8');
    assert.match(log, /the server is gone/);
    assert.match(log, /instance stubborn .*SIGKILL/);
    t.diagnostic(
      `grace ${graceMs} ms, stop grace ${stopGraceMs} ms; seen stopped after the kill: idle ${Math.round(idleGone!)} ms, forks ${Math.round(forksGone!)} ms, ` +
        `grandchild ${Math.round(grandchildGone!)} ms, stubborn ${Math.round(stubbornGone!)} ms`,
    );
  });

  test('a server that closes says goodbye: its watchdog exits with it, and placeholders start none', async () => {
    const { runtime } = makeRuntime();
    await runtime.start(instanceSpec());
    assert.equal(runtime.watchdogPid, null, 'a placeholder runs nothing to guard');
    await runtime.start(instanceSpec({ image: 'test/idle' }));
    const watchdog = runtime.watchdogPid;
    assert.ok(watchdog !== null && alive(watchdog), 'the first process instance starts the watchdog');
    await runtime.start(instanceSpec({ image: 'test/idle' }));
    assert.equal(runtime.watchdogPid, watchdog, 'one watchdog per runtime');
    await runtime.close();
    await waitFor('the watchdog to exit', () => !alive(watchdog), 3_000);
  });

  test(
    'close lets a start under way finish, stops what it started, then dismisses the watchdog',
    { skip: procAvailable() ? false : 'needs /proc' },
    async () => {
      const { runtime } = makeRuntime();
      const first = instanceSpec({ image: 'test/idle' });
      await runtime.start(first);
      const watchdog = runtime.watchdogPid!;
      const late = instanceSpec({ image: 'test/idle' });
      let settled = false;
      const outcome = runtime
        .start(late)
        .then(
          () => null,
          (err: Error) => err.message,
        )
        .finally(() => (settled = true));
      await runtime.close();
      assert.ok(settled, 'the start under way had settled when close() resolved');
      const marker = `GANTRY_INSTANCE_ID=${late.id}`;
      const entries = (await scanProcesses()) ?? [];
      const running = await Promise.all(
        entries
          .filter((e) => isLiveState(e.state))
          .map(async (e) => ((await readEnviron(e.pid)) ?? []).includes(marker)),
      );
      assert.ok(!running.includes(true), 'no process of the late instance is left once close() resolves');
      assert.match((await outcome) ?? 'started', /shutting down/);
      await waitFor('the watchdog to exit', () => !alive(watchdog), 3_000);
    },
  );

  test('a server started again on the same data dir within the grace stops the leftovers at once, and the old watchdog leaves without touching what it starts', async () => {
    const dir = dataDir();
    // Long enough that a loaded machine starts the next server well inside it (1.5 s was not: the
    // attach answered 1.6 s after the kill), so the leftover's end can only be the new server's
    // doing; the old watchdog leaves as soon as its groups end, not at the grace.
    const graceMs = 20_000;
    const server = await startServer({
      dataDir: dir,
      orphanGraceMs: graceMs,
      stopGraceMs: 500,
      instances: [{ id: 'pod1', image: 'test/idle' }],
    });
    const killedAt = await killHard(server);
    const next = new ProcessRuntime({
      images,
      dataDir: dir,
      clock: new FakeClock(),
      logger: pino({ level: 'silent' }),
      stopGraceMs: 500,
      orphanGraceMs: graceMs,
    });
    try {
      assert.deepEqual(await next.attach(), []);
      const stoppedAfter = performance.now() - killedAt;
      assert.equal(alive(server.pids.pod1!), false, 'the leftover is gone when attach() answers');
      assert.ok(stoppedAfter < graceMs, `within the grace (${Math.round(stoppedAfter)} ms after the kill)`);
      await next.start(instanceSpec({ id: 'pod1', image: 'test/idle' }));
      const pid = Number(readFileSync(join(dir, 'instances', 'pod1', 'pid'), 'utf8'));
      await waitFor('the old watchdog to exit', () => !alive(server.watchdog), graceMs + 10_000);
      const log = readFileSync(join(dir, 'watchdog.log'), 'utf8');
      // It saw the server go either before or after the new server stopped the leftover.
      assert.match(
        log,
        /every instance ended; nothing to stop|it left no instance running/,
        'it saw its groups end, and left',
      );
      assert.doesNotMatch(log, /stopping instance/);
      assert.ok(alive(pid), 'the new server’s instance of the same id runs on');
    } finally {
      await next.close();
    }
  });

  test('a watchdog that died is started again with the next instance, and guards the instances started before', async () => {
    const dir = dataDir();
    const graceMs = 1_000;
    const server = await startServer({
      dataDir: dir,
      orphanGraceMs: graceMs,
      stopGraceMs: 500,
      instances: [
        { id: 'before', image: 'test/idle' },
        { id: 'after', image: 'test/idle' },
      ],
      killWatchdogAfter: 1,
    });
    const killedAt = await killHard(server);
    await Promise.all(Object.values(server.pids).map((pid) => goneAfter(pid, killedAt, graceMs + 10_000)));
    assert.match(readFileSync(join(dir, 'watchdog.log'), 'utf8'), /stopping instance before/);
  });

  describe(
    'the script',
    { skip: procAvailable() ? false : 'needs /proc to tell an instance’s group from a stranger’s' },
    () => {
      /** A process leading its own group, started as instance `id`. */
      async function groupLeader(id: string): Promise<number> {
        const child = spawn(node, ['-e', 'setInterval(() => {}, 1 << 30)'], {
          detached: true,
          stdio: 'ignore',
          env: { GANTRY_INSTANCE_ID: id },
        });
        child.unref();
        await new Promise((resolve) => child.once('spawn', resolve));
        strays.push(child.pid!);
        return child.pid!;
      }
      /** Runs the watchdog script fed `lines` and then end of file; resolves when it exits. */
      async function runScript(lines: object[], graceMs: number): Promise<void> {
        const child = spawn(node, [WATCHDOG_SCRIPT, JSON.stringify({ graceMs, stopGraceMs: 500 })], {
          stdio: ['pipe', 'ignore', 'ignore'],
        });
        const exited = new Promise((resolve) => child.once('exit', resolve));
        for (const line of lines) child.stdin.write(`${JSON.stringify(line)}\n`);
        child.stdin.end();
        await exited;
      }

      test('a guarded group that is no longer the instance’s (its id went to another process) is left alone', async () => {
        const mine = await groupLeader('mine');
        const stranger = await groupLeader('someone-else');
        await runScript(
          [
            { guard: mine, id: 'mine' },
            { guard: stranger, id: 'reused' },
          ],
          100,
        );
        assert.equal(alive(mine), false);
        assert.ok(alive(stranger), 'a group without the instance’s marker is not signalled');
      });

      test('a released group, and every group after a goodbye, are left alone', async () => {
        const released = await groupLeader('released');
        await runScript([{ guard: released, id: 'released' }, { release: released }], 100);
        assert.ok(alive(released));
        const kept = await groupLeader('kept');
        await runScript([{ guard: kept, id: 'kept' }, { bye: true }], 100);
        assert.ok(alive(kept));
      });
    },
  );

  test(
    'the build ships the watchdog script beside its module',
    { skip: existsSync(join(root, 'dist', 'runtime', 'process', 'watchdog.js')) ? false : 'no build in dist/' },
    () => {
      assert.ok(existsSync(join(root, 'dist', 'runtime', 'process', 'watchdog-process.mjs')));
    },
  );
});
