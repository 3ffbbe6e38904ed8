import { spawn, type ChildProcess } from 'node:child_process';
import { gantryBin } from './spawn-gantry.js';

export interface SpawnedAgent {
  child: ChildProcess;
  /** Everything it printed so far (stdout + stderr). */
  output(): string;
  stderr(): string;
  /** Its exit status (or the signal that ended it), once it ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs `gantry agent ARGS` as a real process (under `prefix`, e.g. `nsenter --net=…`, when given). */
export function spawnAgent(args: string[], env: Record<string, string> = {}, prefix: string[] = []): SpawnedAgent {
  const argv = [...prefix, process.execPath, gantryBin, 'agent', ...args];
  const child = spawn(argv[0]!, argv.slice(1), {
    env: {
      ...process.env,
      GANTRY_LOG_LEVEL: 'info',
      GANTRY_AGENT_TOKEN: '',
      GANTRY_AGENT_SERVER: '',
      GANTRY_AGENT_DATA_DIR: '',
      // The test engines share this machine's network namespace: its firewall stays untouched
      // (the isolation suites run agents beside engines in namespaces of their own).
      GANTRY_AGENT_FIREWALL: 'off',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    out += d.toString();
    err += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => out,
    stderr: () => err,
    exited,
    stop: (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
