import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
export const gantryBin = join(root, 'bin', 'gantry.js');

export interface SpawnedGantry {
  child: ChildProcess;
  url: string;
  /** Everything the server printed so far (stdout + stderr). */
  output(): string;
  /** SIGTERM and wait for exit; answers the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Runs `gantry serve` as a real process and waits until it prints its URL. `prefix` runs it
 * under another command (`nsenter --net=…`); `command` replaces `gantry serve` (a fixture server
 * that prints the same ready line).
 */
export async function spawnGantry(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 30_000,
  options: { prefix?: string[]; command?: string[] } = {},
): Promise<SpawnedGantry> {
  const argv = [
    ...(options.prefix ?? []),
    process.execPath,
    ...(options.command ?? [gantryBin, 'serve', '--port', '0']),
    ...args,
  ];
  const child = spawn(argv[0]!, argv.slice(1), {
    env: { ...process.env, GANTRY_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`gantry did not start within ${timeoutMs} ms:\n${out}`)),
      timeoutMs,
    );
    const check = () => {
      const m = /gantry listening on (https?:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gantry exited with ${code} before it was ready:\n${out}`));
    });
  });
  return {
    child,
    url,
    output: () => out,
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        // ended already (by a signal too: then exitCode stays null and 'exit' will not fire again)
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill(signal);
      }),
  };
}

/** Runs a one-shot `gantry …` command; answers its exit status and output. */
export function runGantry(
  args: string[],
  env: Record<string, string> = {},
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [gantryBin, ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
