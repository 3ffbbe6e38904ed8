/**
 * The real Python worker SDK (runpod-python) for end-to-end tests: where it is, whether it can
 * run here, and its processes. Set up as the header of test/python-worker.e2e.test.ts says
 * (GANTRY_PYTHON_WORKER_SDK, GANTRY_PYTHON, PYTHONPATH); suites skip, saying why, without it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { delimiter } from 'node:path';

const sdk = process.env.GANTRY_PYTHON_WORKER_SDK;
const python = process.env.GANTRY_PYTHON ?? 'python3';
const pythonEnv = {
  ...process.env,
  PYTHONPATH: [sdk, process.env.PYTHONPATH].filter(Boolean).join(delimiter),
  RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true',
  PYTHONUNBUFFERED: '1',
};

/** Why the SDK cannot run here, or false. */
export function pythonSdkSkipReason(): string | false {
  if (!sdk)
    return 'GANTRY_PYTHON_WORKER_SDK is not set: point it to a runpod-python checkout (see the header of test/python-worker.e2e.test.ts)';
  const probe = spawnSync(python, ['-c', 'import runpod.serverless'], {
    env: pythonEnv,
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (probe.status !== 0) {
    const why = (probe.error?.message ?? probe.stderr ?? '').trim().split('\n').slice(-1)[0];
    return `${python} cannot import runpod.serverless from ${sdk} (${why}); see the header of test/python-worker.e2e.test.ts`;
  }
  return false;
}

export interface PythonProcess {
  child: ChildProcess;
  /** What it printed so far (stdout and stderr). */
  output: () => string;
  exited: Promise<number | null>;
  /** SIGKILL to its whole process group (the SDK's heartbeat runs in a process of its own); resolves once it exited. */
  kill(): Promise<void>;
}

/** Runs `script` with the SDK on the path and `env` added, in its own process group. */
export function spawnPython(
  script: string,
  args: readonly string[],
  env: Record<string, string>,
  cwd: string,
): PythonProcess {
  const child = spawn(python, [script, ...args], {
    cwd,
    env: { ...pythonEnv, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exited,
    async kill() {
      // The group first (the heartbeat process holds the stdio pipes open too), then the leader.
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // the group is gone already
      }
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
