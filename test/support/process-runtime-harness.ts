/**
 * The harness of the process runtime's tests (src/runtime/process/*.test.ts): images with agreed
 * behaviour, a runtime over a fresh data folder, and a check that a process is really gone.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { HealthProbe, ImageSpec } from '../../src/config.js';
import { FakeClock } from '../../src/domain/clock.js';
import { procAvailable } from '../../src/runtime/process/proc-stats.js';
import { ProcessRuntime } from '../../src/runtime/process/process-runtime.js';
import type { ProcessRuntimeOptions } from '../../src/runtime/process/process-runtime-options.js';

export const node = process.execPath;
const fixture = (name: string): string => join(import.meta.dirname, '..', 'fixtures', name);
const probe = (port: number, timeoutMs = 10_000): HealthProbe => ({
  type: 'http',
  port,
  path: '/health',
  intervalMs: 25,
  timeoutMs,
});

/** Images with agreed behaviour, run by the process runtime under test. */
export const images: Record<string, ImageSpec> = {
  'test/idle': { command: [node, '-e', 'setInterval(() => {}, 1 << 30)'] },
  'test/crashing': {
    command: [node, '-e', 'console.log("loading model"); console.error("boom: model file missing"); process.exit(3)'],
  },
  'test/http': {
    command: [node, fixture('http-server.mjs')],
    env: { FROM_IMAGE: 'image', OVERRIDDEN: 'by image' },
    health: probe(8000),
  },
  'test/http-unprobed': { command: [node, fixture('http-server.mjs')] },
  'test/never-ready': {
    // prints at once (a shell, not Node, whose start-up under load outlasts the 300 ms health timeout)
    command: ['sh', '-c', 'echo still loading; exec sleep 1000000'],
    health: { ...probe(8000, 300), type: 'tcp' },
  },
  'test/dies-early': {
    command: [node, '-e', 'console.error("cannot bind"); setTimeout(() => process.exit(7), 100)'],
    health: probe(8000),
  },
  'test/self-kill': { command: [node, '-e', 'console.error("about to die"); process.kill(process.pid, "SIGKILL")'] },
  'test/grandchild': { command: [node, fixture('spawn-grandchild.mjs')] },
  'test/stubborn': { command: [node, fixture('ignore-sigterm.mjs')] },
  'test/busy': { command: [node, '-e', 'const keep = Buffer.alloc(64 * 1024 * 1024, 1); for (;;) { keep[0]++; }'] },
  'test/chatty': {
    command: [
      node,
      '-e',
      'const line = "x".repeat(1023) + "\\n"; setInterval(() => { for (let i = 0; i < 64; i++) process.stdout.write(line); }, 5)',
    ],
  },
  'test/no-such-command': { command: ['gantry-no-such-command-9'] },
  'test/missing-cwd': { command: [node, '-e', '0'], cwd: '/nonexistent/gantry/worker' },
};

const dirs: string[] = [];

/** Removes the data folders of every runtime made here; each test file runs it `after` its tests. */
export function removeDataDirs(): void {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

/** A process runtime over a fresh data folder (or `overrides.dataDir`, as a restarted server) and a fake clock. */
export function makeRuntime(overrides: Partial<ProcessRuntimeOptions> = {}): {
  runtime: ProcessRuntime;
  dataDir: string;
  clock: FakeClock;
} {
  const dataDir = overrides.dataDir ?? mkdtempSync(join(tmpdir(), 'gantry-process-runtime-'));
  if (!overrides.dataDir) dirs.push(dataDir);
  const clock = new FakeClock();
  const runtime = new ProcessRuntime({
    images,
    clock,
    logger: pino({ level: 'silent' }),
    stopGraceMs: 2_000,
    ...overrides,
    dataDir,
  });
  return { runtime, dataDir, clock };
}

/** Runs `body` with a fresh runtime, closing it afterwards whatever happens. */
export async function withRuntime(
  body: (t: ReturnType<typeof makeRuntime>) => Promise<void>,
  overrides: Partial<ProcessRuntimeOptions> = {},
): Promise<void> {
  const t = makeRuntime(overrides);
  try {
    await body(t);
  } finally {
    await t.runtime.close();
  }
}

/** Alive and not a zombie (orphans stay zombies where PID 1 does not reap). */
export function alive(pid: number): boolean {
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

export const readJson = (path: string): unknown => JSON.parse(readFileSync(path, 'utf8'));
