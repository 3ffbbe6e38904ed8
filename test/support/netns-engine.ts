/**
 * A Docker Engine with its default network settings (iptables on, as production runs it) inside a
 * network namespace of a test's own, so the rules it and Gantry install never touch this machine's
 * firewall. A veth pair joins the namespace to the machine: the machine's end is `hostAddress`
 * (10.250.N.1, a private address, standing in for the operator's network), the namespace's end
 * `engineAddress` (10.250.N.2, the engine host's own address). The engine runs under `nsenter
 * --net` (not `ip netns exec`, which remounts /sys and hides the cgroups from dockerd), with its
 * own data root, exec root, socket and pid file. Programs run inside with {@link NetnsEngine.spawn}.
 *
 * Needs root, dockerd, iptables, nsenter and ip; {@link netnsEnginesUnavailable} says what is
 * missing, so a suite skips (and fails under CI=true, where .ci/run installs them).
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { DockerClient } from '../../src/runtime/docker/docker-client.js';
import { engineAnswers, stopDockerd } from './docker-daemons.js';

export interface NetnsEngine {
  /** the namespace's name (`/var/run/netns/<name>`) */
  name: string;
  /** the command prefix that runs a program in the namespace */
  nsenter: string[];
  /** the machine's end of the veth (10.250.N.1) */
  hostAddress: string;
  /** the namespace's end of the veth (10.250.N.2): the engine host's address */
  engineAddress: string;
  /** `unix:///tmp/gne-…/docker.sock` */
  dockerHost: string;
  client: DockerClient;
  /** Starts `argv` inside the namespace; it is killed by {@link stop} if still running. */
  spawn(argv: string[], options?: SpawnOptions): ChildProcess;
  /** Runs `argv` inside the namespace to its end. */
  run(argv: string[], input?: string): { status: number | null; stdout: string; stderr: string };
  /**
   * A namespace behind the engine's holding `address` (169.254.169.254: the cloud metadata
   * service; its last byte not 1), reached from the engine's namespace through a veth of its own
   * on that address's /24. Answers the prefix that runs a program there.
   */
  addNeighbour(address: string): Promise<string[]>;
  /** Stops the engine (its containers with it) and whatever was started inside, removes the namespaces and files. */
  stop(): Promise<void>;
}

const ip = (...args: string[]) => spawnSync('ip', args, { encoding: 'utf8' });
const has = (command: string): boolean => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;

/** Why this machine cannot run such an engine, or null when it can. */
export function netnsEnginesUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'a Docker Engine in a network namespace needs root';
  for (const command of ['dockerd', 'iptables', 'nsenter', 'ip'])
    if (!has(command)) return `${command} is not installed (apt-get install docker.io iptables util-linux iproute2)`;
  return null;
}

/** A 10.250.N.0/30 no address on the machine uses yet. */
function freeSlot(): number {
  const addresses = ip('-4', 'addr').stdout;
  const start = process.pid % 250;
  for (let i = 0; i < 250; i++) {
    const n = ((start + i) % 250) + 1;
    if (!addresses.includes(`10.250.${n}.`)) return n;
  }
  throw new Error('no free 10.250.N.0/30 for a test engine’s veth');
}

function must(result: { status: number | null; stderr: string }, what: string): void {
  if (result.status !== 0) throw new Error(`${what}: ${result.stderr.trim()}`);
}

export async function startNetnsEngine(): Promise<NetnsEngine> {
  const reason = netnsEnginesUnavailable();
  if (reason) throw new Error(reason);
  const n = freeSlot();
  const name = `gne${process.pid.toString(36)}${n}`;
  const hostEnd = `gne${n}h`;
  const nsEnd = `gne${n}n`;
  const hostAddress = `10.250.${n}.1`;
  const engineAddress = `10.250.${n}.2`;
  const nsenter = ['nsenter', `--net=/var/run/netns/${name}`];
  const inNs = (...argv: string[]) => spawnSync(nsenter[0]!, [...nsenter.slice(1), ...argv], { encoding: 'utf8' });
  const children: ChildProcess[] = [];
  const neighbours: string[] = [];
  const dir = mkdtempSync('/tmp/gne-');
  let dockerd: ChildProcess | null = null;
  const dockerHost = `unix://${dir}/docker.sock`;
  const client = new DockerClient({ dockerHost, timeoutMs: 120_000 });

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    client.close();
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (dockerd) await stopDockerd(dockerd, dir);
    for (const neighbour of neighbours) ip('netns', 'del', neighbour);
    ip('netns', 'del', name);
    ip('link', 'del', hostEnd);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    must(ip('netns', 'add', name), `creating network namespace ${name}`);
    must(ip('link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', nsEnd), 'creating the veth pair');
    must(ip('link', 'set', nsEnd, 'netns', name), 'moving the veth into the namespace');
    must(ip('addr', 'add', `${hostAddress}/30`, 'dev', hostEnd), 'addressing the machine’s end');
    must(ip('link', 'set', hostEnd, 'up'), 'bringing the machine’s end up');
    must(inNs('ip', 'addr', 'add', `${engineAddress}/30`, 'dev', nsEnd), 'addressing the namespace’s end');
    must(inNs('ip', 'link', 'set', nsEnd, 'up'), 'bringing the namespace’s end up');
    must(inNs('ip', 'link', 'set', 'lo', 'up'), 'bringing loopback up');
    must(inNs('ip', 'route', 'add', 'default', 'via', hostAddress), 'routing the namespace through the machine');

    let log = '';
    dockerd = spawn(
      nsenter[0]!,
      [
        ...nsenter.slice(1),
        'dockerd',
        '--data-root',
        `${dir}/root`,
        '--exec-root',
        `${dir}/exec`,
        '--host',
        dockerHost,
        '--pidfile',
        `${dir}/dockerd.pid`,
        '--shutdown-timeout',
        '2',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    dockerd.stdout!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
    dockerd.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
    await engineAnswers(client, dockerd, () => log);
  } catch (err) {
    await stop();
    throw err;
  }

  const spawnIn = (argv: string[], options: SpawnOptions = {}): ChildProcess => {
    const child = spawn(nsenter[0]!, [...nsenter.slice(1), ...argv], { stdio: 'pipe', ...options });
    children.push(child);
    return child;
  };
  return {
    name,
    nsenter,
    hostAddress,
    engineAddress,
    dockerHost,
    client,
    spawn: spawnIn,
    run: (argv, input) => {
      const r = spawnSync(nsenter[0]!, [...nsenter.slice(1), ...argv], { encoding: 'utf8', input });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    },
    addNeighbour: async (address) => {
      const neighbour = `${name}x${neighbours.length}`;
      const near = `gne${n}x${neighbours.length}`;
      const far = `gne${n}y${neighbours.length}`;
      must(ip('netns', 'add', neighbour), `creating network namespace ${neighbour}`);
      neighbours.push(neighbour);
      const there = ['nsenter', `--net=/var/run/netns/${neighbour}`];
      const inThere = (...argv: string[]) => spawnSync(there[0]!, [...there.slice(1), ...argv], { encoding: 'utf8' });
      must(ip('link', 'add', near, 'type', 'veth', 'peer', 'name', far), 'creating the neighbour’s veth pair');
      must(ip('link', 'set', near, 'netns', name), 'moving its near end into the engine’s namespace');
      must(ip('link', 'set', far, 'netns', neighbour), 'moving its far end into the neighbour');
      // Both ends in one /24 (the near end at .1): the engine's namespace masquerades its
      // containers to the near end's address, and the neighbour answers on the link.
      const near24 = `${address.split('.').slice(0, 3).join('.')}.1/24`;
      must(inNs('ip', 'addr', 'add', near24, 'dev', near), 'addressing the near end');
      must(inNs('ip', 'link', 'set', near, 'up'), 'bringing the near end up');
      must(inThere('ip', 'addr', 'add', `${address}/24`, 'dev', far), 'addressing the neighbour');
      must(inThere('ip', 'link', 'set', far, 'up'), 'bringing the far end up');
      must(inThere('ip', 'link', 'set', 'lo', 'up'), 'bringing its loopback up');
      return there;
    },
    stop,
  };
}

/**
 * A TCP service that answers `hello\n` and closes, listening at `host:port` inside the namespace
 * `prefix` runs in (empty: this machine's). Resolves once it listens.
 */
export async function startListener(
  prefix: string[],
  host: string,
  port: number,
  track: (child: ChildProcess) => void = () => undefined,
): Promise<ChildProcess> {
  const script = `require('net').createServer((s) => s.end('hello\\n')).listen(${port}, ${JSON.stringify(host)}, () => console.log('listening'))`;
  const argv = [...prefix, process.execPath, '-e', script];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  await new Promise<void>((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('listening')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the listener at ${host}:${port} exited (${code}): ${err}`)));
  });
  return child;
}
