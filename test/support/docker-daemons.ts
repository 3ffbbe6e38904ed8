/**
 * Docker daemons of a test's own: several hosts on one machine, for the fleet's tests (an agent
 * per host, each with its own engine). Each daemon has its own socket, data root, exec root, pid
 * file and bridge (a /24 under 10.214.0.0/16 no route uses yet), and is stopped, unmounted and
 * removed by `stop()`. Starting one needs root and `dockerd` (CI installs docker.io); where either
 * is missing, `dockerDaemonsUnavailable()` says why so a suite can skip (and fail under CI=true).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { DockerClient } from '../../src/runtime/docker/docker-client.js';

export interface DockerDaemon {
  /** `unix:///tmp/gdt-…/docker.sock` */
  host: string;
  client: DockerClient;
  dir: string;
  /** Stops the daemon (its containers stop with it), removes its bridge and files. */
  stop(): Promise<void>;
  /**
   * Stops the daemon as an engine restart does (SIGTERM: its containers stop with it) and starts
   * it again on the same data; resolves once it answers.
   */
  restart(): Promise<void>;
}

/** Why this machine cannot start daemons of a test's own, or null when it can. */
export function dockerDaemonsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'starting Docker daemons needs root';
  if (spawnSync('sh', ['-c', 'command -v dockerd'], { encoding: 'utf8' }).status !== 0)
    return 'dockerd is not installed (apt-get install docker.io)';
  return null;
}

const ip = (...args: string[]) => spawnSync('ip', args, { encoding: 'utf8' });

function freeSubnet(): string {
  const routes = ip('route').stdout;
  const start = 20 + (process.pid % 200);
  for (let i = 0; i < 235; i++) {
    const n = 20 + ((start - 20 + i) % 235);
    if (!routes.includes(`10.214.${n}.0/24`)) return `10.214.${n}`;
  }
  throw new Error('no free 10.214.x.0/24 for a test daemon’s bridge');
}

/** Starts a daemon and waits until it answers (up to 60 s). */
export async function startDockerDaemon(): Promise<DockerDaemon> {
  const reason = dockerDaemonsUnavailable();
  if (reason) throw new Error(reason);
  // Short: the exec root's socket paths have length limits.
  const dir = mkdtempSync('/tmp/gdt-');
  const bridge = `gdt${dir.slice(-6).replace(/[^a-zA-Z0-9]/g, '')}`.slice(0, 15);
  const subnet = freeSubnet();
  const made = ip('link', 'add', bridge, 'type', 'bridge');
  if (made.status !== 0) throw new Error(`creating bridge ${bridge}: ${made.stderr}`);
  ip('addr', 'add', `${subnet}.1/24`, 'dev', bridge);
  ip('link', 'set', bridge, 'up');
  const host = `unix://${dir}/docker.sock`;
  let log = '';
  const launch = (): ChildProcess => {
    const c = spawn(
      'dockerd',
      [
        '--data-root',
        `${dir}/root`,
        '--exec-root',
        `${dir}/exec`,
        '--host',
        host,
        '--pidfile',
        `${dir}/dockerd.pid`,
        '--iptables=false',
        '--ip-masq=false',
        '--ip6tables=false',
        '--shutdown-timeout',
        '2',
        '--bridge',
        bridge,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    c.stdout.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
    c.stderr.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
    return c;
  };
  let child = launch();
  const client = new DockerClient({ dockerHost: host, timeoutMs: 60_000 });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    client.close();
    await stopDockerd(child, dir);
    ip('link', 'delete', bridge);
    rmSync(dir, { recursive: true, force: true });
  };
  const restart = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    }
    child = launch();
    await engineAnswers(client, child, () => log);
  };
  try {
    await engineAnswers(client, child, () => log);
  } catch (err) {
    await stop();
    throw err;
  }
  return { host, client, dir, stop, restart };
}

/**
 * Stops a dockerd a test started (its containers stop with it; SIGKILL for it and its containerd
 * after 30 s) and unmounts what it left mounted under `dir`.
 */
export async function stopDockerd(child: ChildProcess, dir: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const done = await Promise.race([exited.then(() => true), sleep(30_000, false, { ref: false })]);
    if (!done) {
      child.kill('SIGKILL');
      const pidFile = `${dir}/exec/containerd/containerd.pid`;
      if (existsSync(pidFile)) {
        try {
          process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
        } catch {
          // gone already
        }
      }
    }
  }
  const mounts = readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(`${dir}/`))
    .sort()
    .reverse();
  for (const m of mounts) spawnSync('umount', ['-l', m]);
}

/** Waits (up to 60 s) until the engine answers; rejects with its log when it exits or does not. */
export async function engineAnswers(client: DockerClient, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await client.ping(1_000);
      return;
    } catch {
      if (child.exitCode !== null || Date.now() > deadline)
        throw new Error(`the test Docker daemon did not answer:\n${log()}`);
      await sleep(200);
    }
  }
}
