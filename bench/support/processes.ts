import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

const newest = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce(
    (m, e) =>
      Math.max(
        m,
        e.isDirectory() ? newest(join(dir, e.name)) : e.name.endsWith('.ts') ? statSync(join(dir, e.name)).mtimeMs : 0,
      ),
    0,
  );

/**
 * Benchmarks measure the compiled server, as `npm start` runs it (bin/gantry.js falls back to
 * the TypeScript sources through tsx when dist/ is stale, which costs throughput).
 */
export function ensureBuilt(): void {
  const compiled = join(root, 'dist', 'cli', 'main.js');
  if (existsSync(compiled) && statSync(compiled).mtimeMs >= newest(join(root, 'src'))) return;
  console.log('building dist/ (npm run build) so the benchmark runs the compiled server…');
  const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm run build failed');
}

export interface Child {
  child: ChildProcess;
  url: string;
  output(): string;
  /** Resident set size of the process, MB (Linux). */
  rssMb(): number;
  /** CPU time the process has used so far, ms (Linux; user + system). */
  cpuMs(): number;
  /** CPU time (user + system, ms) of the process's main thread alone: the thread serving requests. */
  mainThreadCpuMs(): number;
  /** User-space CPU time (ms) of the main thread alone: its JavaScript, without the kernel's share. */
  mainThreadUserMs(): number;
  stop(): Promise<void>;
}

/** Fields 14 and 15 of a /proc `stat` file: utime and stime in clock ticks (100 per second), as ms. */
function ticksMs(path: string, which: 'user' | 'both' = 'both'): number {
  const fields = readFileSync(path, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + (which === 'both' ? Number(fields[12]) : 0)) * 10;
}

/** Spawns a node process and waits for `<label> listening on <url>` on its stdout. */
export async function startChild(
  args: string[],
  env: Record<string, string>,
  label: RegExp,
  timeoutMs = 60_000,
): Promise<Child> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready in ${timeoutMs} ms:\n${out}`)), timeoutMs);
    child.stdout.on('data', () => {
      const m = label.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}:\n${out}`)));
  });
  return {
    child,
    url,
    output: () => out,
    rssMb() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      return kb / 1024;
    },
    cpuMs: () => ticksMs(`/proc/${child.pid}/stat`),
    mainThreadCpuMs: () => ticksMs(`/proc/${child.pid}/task/${child.pid}/stat`),
    mainThreadUserMs: () => ticksMs(`/proc/${child.pid}/task/${child.pid}/stat`, 'user'),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
      }),
  };
}

/** Prints rows as an aligned table. */
export function printTable(rows: Array<Record<string, string | number>>): void {
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (r: Record<string, string | number>, c: string) => String(r[c] ?? '');
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r, c).length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(width[i]!)).join('  ');
  console.log(line(cols));
  console.log(line(width.map((w) => '-'.repeat(w))));
  for (const r of rows) console.log(line(cols.map((c) => cell(r, c))));
}
