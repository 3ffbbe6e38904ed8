/**
 * The one-line join (docs/deploy.md, "Fleet: the one-line join"), end to end with real parts: a
 * control plane (`gantry serve`, runtime fleet) on this machine; a "host", a Docker Engine in a
 * network namespace of its own (test/support/netns-engine.ts) that reaches the control plane
 * over a veth only; the agent's single executable (scripts/build-agent-sea.mjs, built here when it
 * is missing or older than the sources). The command `gantry hosts token create --print command`
 * prints is run inside the namespace as printed (sudo: this test is root already, so a `sudo` on
 * PATH runs the rest as is, environment kept): it downloads the executable from the control
 * plane, checks its SHA-256, creates the agent's user in the `docker` group and runs the agent as
 * that user with CAP_NET_ADMIN — the script's non-systemd mode, as this machine's PID 1 is not
 * systemd (GANTRY_INSTALL_MODE=foreground; every file under GANTRY_INSTALL_ROOT, so nothing lands in
 * this machine's /usr/local or /etc). The host is then in `gantry hosts list`, and a pod placed
 * on it answers through the pod proxy. The systemd mode's unit is checked with
 * `systemd-analyze verify` where that command exists. Running the command again (no token) is an
 * upgrade: the agent is replaced and the pod's container keeps running, adopted.
 *
 * Over HTTPS, as the docs' command is: the control plane serves a certificate of a CA the test
 * makes (server.tls), for the address the host reaches it at; the host is given the CA by
 * GANTRY_CACERT (curl checks the download with it, the agent its connections), and this process
 * and the CLI trust it through GANTRY_CA_FILE.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildImage } from './support/docker-images.js';
import { eventually, freePortRange } from './support/eventually.js';
import { issueCertificate, makeCa } from './support/test-ca.js';
import { trustCaFile } from '../src/transport/tls-trust.js';
import { netnsEnginesUnavailable, startNetnsEngine, type NetnsEngine } from './support/netns-engine.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi } from './support/nvidia-smi.js';
import { runGantry, spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { bearerApi } from './support/bearer-api.js';

const ROOT = join(import.meta.dirname, '..');
const BINARY = join(ROOT, 'dist', 'agent', `gantry-agent-linux-${process.arch}`);
const AGENT_USER = 'gantry-agent-e2e';
const KEY = 'gty_agent_join_admin_0123456789abcdef';
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

const has = (command: string): boolean => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
const unavailable =
  netnsEnginesUnavailable() ??
  (['curl', 'sha256sum', 'useradd', 'userdel', 'setpriv']
    .filter((c) => !has(c))
    .map((c) => `${c} is not installed`)[0] ||
    null) ??
  (process.arch === 'x64' || process.arch === 'arm64' ? null : `no agent executable for ${process.arch}`);
if (unavailable && process.env.CI === 'true')
  throw new Error(`the one-line join's test needs, under CI: ${unavailable}`);

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds the executable unless one newer than every source file is there. */
function ensureBinary(): void {
  if (existsSync(BINARY) && statSync(BINARY).mtimeMs >= newestSource(join(ROOT, 'src'))) return;
  const built = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-agent-sea.mjs')], { encoding: 'utf8' });
  assert.equal(built.status, 0, `npm run build:agent failed:\n${built.stdout}\n${built.stderr}`);
}

interface Pod {
  id: string;
  status: string;
  httpProxy?: Array<{ port: number; url: string }>;
}
interface ListedHost {
  id: string;
  name: string;
  publicIp: string;
  agentVersion: string;
  state: string;
}

describe('the one-line join of a host with Docker and nothing else', { skip: unavailable ?? false }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-agent-join-'));
  const dataDir = join(dir, 'control-plane');
  const installRoot = join(dir, 'host-root');
  const env: Record<string, string> = {};
  const userExisted = spawnSync('id', [AGENT_USER]).status === 0;
  let engine: NetnsEngine;
  let server: SpawnedGantry;
  let agent: ChildProcess | null = null;
  let agentOutput = '';
  let hostEnv: NodeJS.ProcessEnv = {};
  let publicUrl = '';
  let caFile = '';
  let command = '';
  let image = '';
  let pod: Pod;
  let joinMs = 0;

  const diagnostics = () => `server:\n${server?.output().slice(-3000)}\nhost:\n${agentOutput.slice(-3000)}`;
  const api = bearerApi(() => server.url, KEY);
  const hosts = (): ListedHost[] => {
    const listed = runGantry(['hosts', 'list', '--json', '--data-dir', dataDir], env);
    assert.equal(listed.status, 0, listed.stderr);
    return JSON.parse(listed.stdout) as ListedHost[];
  };
  /** Runs `line` in the host's namespace as the printed command is run there; answers the process. */
  const runOnHost = (line: string, extra: NodeJS.ProcessEnv = {}): ChildProcess => {
    agentOutput = '';
    const child = engine.spawn(['sh', '-c', line], {
      env: { ...hostEnv, ...extra },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => (agentOutput = (agentOutput + d.toString()).slice(-20_000)));
    child.stderr!.on('data', (d: Buffer) => (agentOutput = (agentOutput + d.toString()).slice(-20_000)));
    return child;
  };
  const installed = () => join(installRoot, 'usr', 'local', 'bin', 'gantry-agent');
  /** The agent's process: the installed executable, run by the script's last step. */
  const agentPids = (): number[] =>
    readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readlinkSync(`/proc/${p}/exe`) === installed();
        } catch {
          return false;
        }
      })
      .map(Number);
  /** Stops the agent as its unit would (SIGTERM: the containers keep running) and waits for the command to end. */
  const stopAgent = async (): Promise<void> => {
    const child = agent;
    agent = null;
    for (const pid of agentPids()) process.kill(pid, 'SIGTERM');
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise((resolve) => child.once('exit', resolve));
  };

  before(async () => {
    ensureBinary();
    engine = await startNetnsEngine();
    // the agent's user reaches the engine's socket through its folder, as /var/run/docker.sock
    chmodSync(dirname(engine.dockerHost.replace('unix://', '')), 0o711);
    const [port] = await freePortRange(1);
    const ca = makeCa();
    chmodSync(ca.dir, 0o755);
    const cert = issueCertificate(ca, 'control-plane', { ips: [engine.hostAddress] });
    publicUrl = `https://${engine.hostAddress}:${port}`;
    Object.assign(env, { GANTRY_PUBLIC_URL: publicUrl, GANTRY_BOOTSTRAP_KEY: KEY, GANTRY_CA_FILE: ca.certFile });
    caFile = ca.certFile;
    await trustCaFile(ca.certFile);
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        server: { tls: { certFile: cert.certFile, keyFile: cert.keyFile } },
        fleet: { heartbeatMs: 500, heartbeatTimeoutMs: 5_000, pollWaitMs: 5_000 },
        pods: { stopGraceMs: 1_000 },
        runtime: { kind: 'fleet' },
        proxy: { port: 0 },
        ssh: { enabled: false },
      }),
    );
    env.GANTRY_CONFIG = config;
    server = await spawnGantry(['--host', engine.hostAddress, '--port', String(port), '--data-dir', dataDir], env);
    image = await buildImage(engine.client, {
      name: 'proxy-upstream',
      node: true,
      files: [{ from: join(import.meta.dirname, 'fixtures', 'proxy-upstream.mjs'), to: '/app/proxy-upstream.mjs' }],
      changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/proxy-upstream.mjs"]'],
    });
    const smi = standInNvidiaSmi({
      csv: '0, GPU-1b2c3d4e-0000-4000-8000-000000000000, NVIDIA GeForce RTX 4090, 24564',
      banner: BANNER_12_4,
    });
    chmodSync(smi.dir, 0o755);
    // `sudo` as the host's root has it: this test is root, so the shim runs the rest as is
    const shims = join(dir, 'shims');
    mkdirSync(shims);
    writeFileSync(join(shims, 'sudo'), '#!/bin/sh\nexec "$@"\n', { mode: 0o755 });
    mkdirSync(installRoot, { mode: 0o755 });
    chmodSync(dir, 0o755);
    hostEnv = {
      PATH: `${shims}:${smi.dir}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`,
      DOCKER_HOST: engine.dockerHost,
      // a private CA: curl (the line's own and the script's) and the agent are given it
      CURL_CA_BUNDLE: caFile,
      GANTRY_CACERT: caFile,
      GANTRY_INSTALL_MODE: 'foreground',
      GANTRY_INSTALL_ROOT: installRoot,
      GANTRY_AGENT_USER: AGENT_USER,
      GANTRY_LOG_LEVEL: 'warn',
    };
  });

  after(async () => {
    await stopAgent();
    await server?.stop();
    await engine?.stop();
    if (!userExisted) spawnSync('userdel', [AGENT_USER]);
    removeStandIns();
    rmSync(dir, { recursive: true, force: true });
    if (caFile) rmSync(dirname(caFile), { recursive: true, force: true });
  });

  test('hosts token create prints the one-line join command, or the token alone for scripts', () => {
    const printed = runGantry(['hosts', 'token', 'create', '--data-dir', dataDir, '--print', 'command'], env);
    assert.equal(printed.status, 0, printed.stderr);
    assert.match(
      printed.stdout,
      /^curl -fsSL https:\/\/10\.250\.\d+\.1:\d+\/agent\/v1\/install\.sh \| sudo sh -s -- --token gjt_[A-Za-z0-9]{32}\n$/,
    );
    assert.ok(printed.stdout.startsWith(`curl -fsSL ${publicUrl}/agent/v1/install.sh `));
    command = printed.stdout.trim();
    // piped (no terminal), as every script that used it before: the token alone
    const piped = runGantry(['hosts', 'token', 'create', '--data-dir', dataDir], env);
    assert.match(piped.stdout, /^gjt_[A-Za-z0-9]{32}\n$/);
    assert.ok(piped.stderr.includes(`${publicUrl}/agent/v1/install.sh`), piped.stderr);
    assert.ok(!piped.stderr.includes(piped.stdout.trim()), 'the token is printed once, on stdout');
    const bad = runGantry(['hosts', 'token', 'create', '--data-dir', dataDir, '--print', 'json'], env);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--print must be command or token/);
  });

  test('the printed command, run on the host, joins it: listed within seconds, as its own user', async (t) => {
    assert.ok(command, 'the command was printed');
    const started = Date.now();
    agent = runOnHost(command);
    const host = await eventually(
      () => `the host in gantry hosts list: ${diagnostics()}`,
      async () => hosts().find((h) => h.state === 'available') ?? null,
      90_000,
    );
    joinMs = Date.now() - started;
    assert.equal(host.agentVersion, VERSION);
    // the address the host reaches the control plane from, found by the script
    assert.equal(host.publicIp, engine.engineAddress);
    assert.equal(
      createHash('sha256').update(readFileSync(installed())).digest('hex'),
      createHash('sha256').update(readFileSync(BINARY)).digest('hex'),
    );
    const uid = spawnSync('id', ['-u', AGENT_USER], { encoding: 'utf8' }).stdout.trim();
    assert.match(spawnSync('id', ['-nG', AGENT_USER], { encoding: 'utf8' }).stdout, /\bdocker\b/);
    const [pid] = agentPids();
    assert.ok(pid, 'the agent runs');
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    assert.match(status, new RegExp(`^Uid:\\s+${uid}\\s`, 'm'), 'the agent runs as its user');
    assert.match(status, /^CapAmb:\s+0000000000001000$/m, 'with CAP_NET_ADMIN, and nothing else');
    const data = statSync(join(installRoot, 'var', 'lib', 'gantry-agent'));
    assert.deepEqual([data.uid, data.mode & 0o777], [Number(uid), 0o700]);
    const envFile = join(installRoot, 'etc', 'gantry', 'agent.env');
    assert.equal(statSync(envFile).mode & 0o777, 0o600);
    assert.doesNotMatch(readFileSync(envFile, 'utf8'), /gjt_/, 'the token is never written in the foreground mode');
    const joinedAt = statSync(join(installRoot, 'var', 'lib', 'gantry-agent', 'credential.json')).mtimeMs;
    t.diagnostic(
      `from the command to the join (credential stored): ${Math.round(joinedAt - started)} ms; to the host seen in gantry hosts list: ${joinMs} ms`,
    );
  });

  test('a pod placed on the joined host answers through the pod proxy', async () => {
    const created = await api<Pod>('POST', '/v2/pods', {
      name: 'joined',
      image,
      gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
      ports: ['8000/http'],
      disk: 5,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    pod = await eventually(
      () => `pod ${created.body.id} RUNNING: ${diagnostics()}`,
      async () => {
        const r = await api<Pod>('GET', `/v2/pods/${created.body.id}`);
        return r.body.status === 'RUNNING' && r.body.httpProxy?.length ? r.body : null;
      },
      90_000,
    );
    const base = pod.httpProxy![0]!.url;
    const res = await eventually(
      () => `the pod's server through the proxy: ${diagnostics()}`,
      async () => {
        const r = await fetch(`${base}echo?joined=1`).catch(() => null);
        return r?.ok ? r : null;
      },
    );
    assert.equal(((await res.json()) as { url: string }).url, '/echo?joined=1');
  });

  test('running the command again upgrades the agent in place: the pod keeps its container', async () => {
    assert.ok(pod, 'a pod runs');
    const containers = async () =>
      engine.client.listContainers({ all: true, filters: { label: [`gantry.instance=${pod.id}`] } });
    const [before] = await containers();
    assert.ok(before, 'the pod has a container');
    await stopAgent();
    // the upgrade command: no token, the credential and the settings of the first run kept
    const upgrade = command.replace(/ -s -- --token gjt_[A-Za-z0-9]+$/, '');
    assert.equal(upgrade, `curl -fsSL ${publicUrl}/agent/v1/install.sh | sudo sh`);
    agent = runOnHost(upgrade);
    // the proxy reaches the pod through a tunnel the new agent dials
    const base = pod.httpProxy![0]!.url;
    await eventually(
      () => `the pod through the upgraded agent: ${diagnostics()}`,
      async () => (await fetch(`${base}health`).catch(() => null))?.ok,
    );
    const [after] = await containers();
    assert.equal(after?.Id, before.Id);
    assert.equal(after?.State, 'running');
    assert.equal(hosts().length, 1, 'the same host, not a second join');
  });

  test('the systemd mode writes the unit of docs/fleet.md, which systemd-analyze verifies', (t) => {
    const token = runGantry(['hosts', 'token', 'create', '--data-dir', dataDir, '--print', 'token'], env).stdout.trim();
    const root = join(dir, 'systemd-root');
    mkdirSync(root);
    const run = engine.run([
      'sh',
      '-c',
      `curl --cacert '${caFile}' -fsSL ${publicUrl}/agent/v1/install.sh | env PATH='${hostEnv.PATH}' CURL_CA_BUNDLE='${caFile}' GANTRY_CACERT='${caFile}' GANTRY_INSTALL_ROOT='${root}' GANTRY_AGENT_USER=${AGENT_USER} sh -s -- --token ${token} --public-ip 203.0.113.7`,
    ]);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stderr, /systemd is not told/);
    const unit = readFileSync(join(root, 'etc', 'systemd', 'system', 'gantry-agent.service'), 'utf8');
    for (const line of [
      `User=${AGENT_USER}`,
      'Group=docker',
      'EnvironmentFile=/etc/gantry/agent.env',
      'ExecStart=/usr/local/bin/gantry-agent agent --data-dir /var/lib/gantry-agent',
      'AmbientCapabilities=CAP_NET_ADMIN',
      'CapabilityBoundingSet=CAP_NET_ADMIN',
      'StateDirectory=gantry-agent',
      'RestartPreventExitStatus=2 3',
      'WantedBy=multi-user.target',
    ])
      assert.ok(unit.split('\n').includes(line), `the unit has ${line}:\n${unit}`);
    const envFile = readFileSync(join(root, 'etc', 'gantry', 'agent.env'), 'utf8');
    // the first start's token: the script removes it once the agent has joined
    assert.ok(envFile.includes(`GANTRY_AGENT_TOKEN=${token}\n`));
    assert.ok(envFile.includes('GANTRY_AGENT_PUBLIC_IP=203.0.113.7\n'));
    assert.ok(envFile.includes(`GANTRY_AGENT_SERVER=${publicUrl}\n`));
    if (!has('systemd-analyze')) return t.skip('systemd-analyze is not installed');
    // verified where the executable is (the root stands for /)
    const checked = join(dir, 'gantry-agent.service');
    writeFileSync(checked, unit.replace('ExecStart=/usr/local/bin/', `ExecStart=${root}/usr/local/bin/`));
    const verify = spawnSync('systemd-analyze', ['verify', checked], { encoding: 'utf8' });
    assert.equal(verify.status, 0, verify.stderr);
    assert.equal(verify.stderr.trim(), '', 'no warning about the unit');
  });

  test('a download whose checksum is not the one the script states installs nothing', async () => {
    const script = await (await fetch(`${publicUrl}/agent/v1/install.sh`)).text();
    assert.match(script, /SUM='[0-9a-f]{64}'/);
    const tampered = join(dir, 'tampered.sh');
    writeFileSync(tampered, script.replace(/SUM='[0-9a-f]{64}'/g, `SUM='${'0'.repeat(64)}'`));
    const root = join(dir, 'tampered-root');
    mkdirSync(root);
    const token = runGantry(['hosts', 'token', 'create', '--data-dir', dataDir, '--print', 'token'], env).stdout.trim();
    const run = engine.run([
      'env',
      `PATH=${hostEnv.PATH}`,
      `GANTRY_INSTALL_ROOT=${root}`,
      `CURL_CA_BUNDLE=${caFile}`,
      `GANTRY_CACERT=${caFile}`,
      'sh',
      tampered,
      '--token',
      token,
    ]);
    assert.equal(run.status, 1);
    assert.match(run.stderr, /the download's SHA-256 is [0-9a-f]{64}, not 0{64}: nothing was installed/);
    assert.deepEqual(readdirSync(join(root, 'usr', 'local', 'bin')), []);
  });

  test('an agent too far from the control plane is refused at join with both versions, the token unspent', async () => {
    const token = runGantry(['hosts', 'token', 'create', '--data-dir', dataDir, '--print', 'token'], env).stdout.trim();
    const join = (agentVersion: string) =>
      fetch(`${server.url}/agent/v1/join`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          token,
          name: 'too-new',
          publicIp: '203.0.113.9',
          portRange: [30000, 30099],
          agentVersion,
          capacity: { vcpus: 4, memoryGb: 8, diskGb: 100, gpus: [], cpuFlavors: [] },
        }),
      });
    const refused = await join('9.0.0');
    assert.equal(refused.status, 409);
    assert.match(refused.headers.get('content-type') ?? '', /problem\+json/);
    const problem = (await refused.json()) as { code: string; detail: string };
    assert.equal(problem.code, 'AGENT_VERSION_UNSUPPORTED');
    assert.ok(problem.detail.includes('9.0.0') && problem.detail.includes(VERSION), problem.detail);
    assert.ok(problem.detail.includes(`${publicUrl}/agent/v1/install.sh`), problem.detail);
    await eventually(
      () => `the refusal in the server's log: ${server.output().slice(-2000)}`,
      async () => /refused a join: the agent.s version is too far/.test(server.output()),
    );
    // the token was not spent: the same one is refused for its capacity, not as used
    const again = await join(VERSION);
    assert.notEqual(((await again.json()) as { code?: string }).code, 'JOIN_TOKEN_INVALID');
  });

  test('the control plane serves the checksums, and says what is missing', async () => {
    const sums = await (await fetch(`${publicUrl}/agent/v1/download/SHA256SUMS`)).text();
    const sha = createHash('sha256').update(readFileSync(BINARY)).digest('hex');
    assert.ok(sums.includes(`${sha}  gantry-agent-linux-${process.arch}\n`), sums);
    const other = process.arch === 'x64' ? 'arm64' : 'x64';
    const missing = await fetch(`${publicUrl}/agent/v1/download/gantry-agent-linux-${other}`);
    if (existsSync(join(ROOT, 'dist', 'agent', `gantry-agent-linux-${other}`))) return;
    assert.equal(missing.status, 404);
    assert.match(((await missing.json()) as { detail: string }).detail, /npm run build:agent/);
  });
});
