/**
 * Spawns one instance process: the leader of its own process group (so the whole group can be
 * signalled), stdin closed, stdout and stderr appended straight to its output.log.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { open, stat } from 'node:fs/promises';

export interface LaunchRequest {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  logPath: string;
  /** Errors after the start (a failed kill, say); without a listener they would crash the server. */
  onError: (err: Error) => void;
}

interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface LaunchedProcess {
  child: ChildProcess;
  /** = the child's pid: it leads its own group */
  pgid: number;
  /** where this run's output begins in output.log */
  logOffset: number;
  /** resolves when Node has reaped the process */
  exit: Promise<ExitInfo>;
}

/**
 * Starts the process and resolves once it runs (Node's 'spawn' event). Rejects with a message a
 * user can act on ("command "python9" not found (cwd /srv/worker)") when it cannot.
 */
export async function launchProcess(req: LaunchRequest): Promise<LaunchedProcess> {
  if (!(await isDirectory(req.cwd))) throw new Error(`its working directory ${req.cwd} does not exist`);
  // 0600: an instance's output is its tenant's (tokens, inputs), not other local users'.
  const log = await open(req.logPath, 'a', 0o600);
  // Measured before the spawn: a child that writes at once (a shell's echo) would otherwise have
  // its first lines counted as a previous run's.
  const logOffset = await log.stat().then(
    (s) => s.size,
    () => 0,
  );
  let child: ChildProcess;
  try {
    child = spawn(req.file, req.args, {
      cwd: req.cwd,
      env: req.env,
      detached: true,
      stdio: ['ignore', log.fd, log.fd],
    });
  } catch (err) {
    await log.close();
    throw new Error(describeSpawnError(err as NodeJS.ErrnoException, req.file, req.cwd), { cause: err });
  }
  // 'spawn', 'error' and 'exit' come on later ticks: listen before the first await.
  const exit = new Promise<ExitInfo>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const started = new Promise<Error | null>((resolve) => {
    child.once('spawn', () => resolve(null));
    child.once('error', resolve);
  });
  child.once('spawn', () => child.on('error', req.onError));
  // spawn() forked synchronously: the child holds its own copy of the log descriptor already.
  await log.close();
  const error = await started;
  if (error) throw new Error(describeSpawnError(error, req.file, req.cwd));
  return { child, pgid: child.pid!, logOffset, exit };
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

function describeSpawnError(err: NodeJS.ErrnoException, file: string, cwd: string): string {
  switch (err.code) {
    case 'ENOENT':
      return `command "${file}" not found (cwd ${cwd})`;
    case 'EACCES':
      return `command "${file}" is not executable: permission denied (cwd ${cwd})`;
    case 'ENOEXEC':
      return `command "${file}" is not a program this machine can run (cwd ${cwd})`;
    default:
      return `command "${file}" could not be run: ${err.message} (cwd ${cwd})`;
  }
}
