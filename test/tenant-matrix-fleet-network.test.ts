/**
 * Tenants kept apart on every fleet host, tried from inside real containers: a control plane
 * (`gantry serve`, runtime fleet) on this machine and two hosts, each a Docker Engine with its
 * default network settings (iptables on) in a network namespace of its own with a `gantry agent`
 * beside it (real processes; the agent installs the container firewall as it does in production).
 * On each host, two accounts' pods (and, on the first, their workers): no TCP path between
 * accounts while an account's own instances reach each other, raw and packet sockets refused with
 * EPERM, and of everything on the host and behind it only the control plane's job API reached —
 * while a container the engine runs outside Gantry reaches all of it. The attacks are the ones
 * test/tenant-matrix-container-network.test.ts plays against a single engine (the agent runs the
 * same Docker runtime); there each defence is also shown to hold alone.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from './support/eventually.js';
import { podOf, twoAccounts, workerOf, type Account, type Placed, type Where } from './support/isolation-world.js';
import {
  inContainer,
  netprobeImage,
  netprobeUnavailable,
  netprobeWorkerImage,
  reaches,
  startOutsider,
} from './support/netprobe.js';
import { netnsEnginesUnavailable, startListener, startNetnsEngine, type NetnsEngine } from './support/netns-engine.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi } from './support/nvidia-smi.js';
import { spawnAgent, type SpawnedAgent } from './support/spawn-agent.js';
import { runGantry, spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';

const ROOT = join(import.meta.dirname, '..');
const unavailable =
  netnsEnginesUnavailable() ??
  netprobeUnavailable() ??
  (existsSync(join(ROOT, 'dist', 'worker', 'index.js')) ? null : 'the worker library is not built (npm run build)');
if (unavailable && process.env.CI === 'true') throw new Error(`CI=true: ${unavailable}`);

const KEY = 'gty_fleet_isolation_admin_0123456789abcdef';
const MAIN_PORT = 18180;
const JOB_PORT = 18181;
const HOST_SERVICE_PORT = 15432;
const LAN_SERVICE_PORT = 15434;
const METADATA = '169.254.169.254';
const HOSTS = [
  { name: 'iso-a', gpu: 'NVIDIA GeForce RTX 4090', model: 'NVIDIA GeForce RTX 4090, 24564', prefix: 'a11ce' },
  { name: 'iso-b', gpu: 'NVIDIA RTX A6000', model: 'NVIDIA RTX A6000, 49140', prefix: 'b0b00' },
];

describe('containers of two accounts on fleet hosts with iptables on', { skip: unavailable ?? false }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-fleet-isolation-'));
  const dataDir = join(dir, 'control-plane');
  const engines: NetnsEngine[] = [];
  const agents: SpawnedAgent[] = [];
  let server: SpawnedGantry;
  let accountA: Account;
  let accountB: Account;
  let podImage = '';
  let workerImage = '';
  const outsiders: string[] = [];
  const where = (i: number): Where => ({
    client: engines[i]!.client,
    namespace: `fleetiso${i}`,
    output: () => `${server.output().slice(-1_500)}\nagent: ${agents[i]?.output().slice(-1_500) ?? ''}`,
  });

  before(async () => {
    engines.push(...(await Promise.all([startNetnsEngine(), startNetnsEngine()])));
    const [first] = engines;
    // Every host reaches the control plane at the first veth's address on this machine.
    const controlPlane = first!.hostAddress;
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        fleet: { heartbeatMs: 500, heartbeatTimeoutMs: 5_000, pollWaitMs: 5_000 },
        pods: { stopGraceMs: 1_000 },
        runtime: { kind: 'fleet' },
        jobs: { pingIntervalMs: 1_000, takeWaitMs: 1_000 },
        serverless: { autoscaler: { intervalMs: 200 } },
      }),
    );
    const env = {
      GANTRY_BOOTSTRAP_KEY: KEY,
      GANTRY_DATA_DIR: dataDir,
      GANTRY_CONFIG: config,
      GANTRY_HOST: '0.0.0.0',
      PORT: String(MAIN_PORT),
      GANTRY_JOB_PORT: String(JOB_PORT),
      GANTRY_PUBLIC_URL: `http://${controlPlane}:${MAIN_PORT}`,
      GANTRY_PUBLIC_JOB_URL: `http://${controlPlane}:${JOB_PORT}`,
    };
    server = await spawnGantry(['--port', String(MAIN_PORT)], env);
    ({ accountA, accountB } = twoAccounts(`http://${controlPlane}:${MAIN_PORT}`, KEY, env));
    for (const [i, host] of HOSTS.entries()) {
      const engine = engines[i]!;
      const smi = standInNvidiaSmi({
        csv: [0, 1, 2, 3, 4, 5, 6, 7]
          .map((g) => `${g}, GPU-${host.prefix}000-0000-4000-8000-00000000000${g}, ${host.model}`)
          .join('\n'),
        banner: BANNER_12_4,
      });
      const token = runGantry(['hosts', 'token', 'create'], env).stdout.trim();
      assert.match(token, /^gjt_/);
      // The agent runs beside its engine, in its namespace, as on a real host.
      agents.push(
        spawnAgent(
          [
            '--server',
            `http://${controlPlane}:${MAIN_PORT}`,
            '--token',
            token,
            '--data-dir',
            join(dir, host.name),
            '--name',
            host.name,
            '--namespace',
            `fleetiso${i}`,
            '--docker-host',
            engine.dockerHost,
            '--public-ip',
            engine.engineAddress,
            '--port-range',
            '30000-30999',
            '--disk-gb',
            '2000',
            '--nvidia-smi',
            smi.path,
            '--gpu-mode',
            'env-only',
          ],
          { GANTRY_LOG_LEVEL: 'warn', GANTRY_AGENT_FIREWALL: 'install' },
          engine.nsenter,
        ),
      );
      const metadata = await engine.addNeighbour(METADATA);
      await startListener(metadata, METADATA, 80, (c) => after(() => void c.kill('SIGKILL')));
      await startListener(engine.nsenter, '0.0.0.0', HOST_SERVICE_PORT, (c) => after(() => void c.kill('SIGKILL')));
      await startListener([], engine.hostAddress, LAN_SERVICE_PORT, (c) => after(() => void c.kill('SIGKILL')));
    }
    [podImage, workerImage] = await Promise.all([
      netprobeImage(engines[0]!.client),
      netprobeWorkerImage(engines[0]!.client),
    ]);
    assert.equal(await netprobeImage(engines[1]!.client), podImage, 'both hosts hold the same images');
    assert.equal(await netprobeWorkerImage(engines[1]!.client), workerImage);
    for (const engine of engines)
      outsiders.push(await startOutsider(engine.client, podImage, `outsider-${process.pid}`));
    await eventually(
      () =>
        `both hosts available: ${runGantry(['hosts', 'list'], env).stdout}\n${agents.map((a) => a.output()).join('\n')}`,
      async () => (runGantry(['hosts', 'list', '--json'], env).stdout.match(/"available"/g) ?? []).length === 2,
      60_000,
    );
  });

  after(async () => {
    for (const agent of agents) await agent.stop('SIGTERM');
    await server?.stop();
    await Promise.all(engines.map((e) => e.stop()));
    removeStandIns();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [i, host] of HOSTS.entries()) {
    describe(`on ${host.name}`, () => {
      let a1: Placed, a2: Placed, b1: Placed;
      let workers: Array<Placed & { endpointId: string }> = [];

      before(async () => {
        const at = where(i);
        [a1, a2, b1] = await Promise.all([
          podOf(accountA, podImage, at, host.gpu),
          podOf(accountA, podImage, at, host.gpu),
          podOf(accountB, podImage, at, host.gpu),
        ]);
        // The workers' pool is the first host's GPU type.
        workers =
          i === 0 ? await Promise.all([workerOf(accountA, workerImage, at), workerOf(accountB, workerImage, at)]) : [];
      });

      test("no TCP path joins two accounts' containers, while an account's own reach each other", async () => {
        const [aw, bw] = workers;
        const pairs: Array<[Placed, Placed, boolean]> = [
          [a1, a2, true],
          [a1, b1, false],
          [b1, a2, false],
          ...(aw && bw
            ? ([
                [a1, aw, true],
                [a1, bw, false],
                [bw, a1, false],
                [aw, bw, false],
              ] as Array<[Placed, Placed, boolean]>)
            : []),
        ];
        const tries = await Promise.all(
          pairs.map(async ([from, to, expected]) => ({
            from: from.id,
            to: to.id,
            expected,
            ...(await reaches(engines[i]!.dockerHost, from.container, to.ip, 7000)),
          })),
        );
        for (const t of tries) assert.equal(t.reached, t.expected, JSON.stringify(t));
      });

      if (i === 0)
        test("a worker behind its host's firewall still runs its account's jobs", async () => {
          const bw = workers[1]!;
          const res = await accountB.call('POST', `/v2/${bw.endpointId}/runsync`, { input: { host: host.name } });
          assert.equal(res.status, 200, JSON.stringify(res.body));
          const done =
            res.body.status === 'COMPLETED'
              ? res.body
              : (await accountB.call('GET', `/v2/${bw.endpointId}/status-sync/${res.body.id}?wait=60000`)).body;
          assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
          assert.deepEqual(done.output.echoed, { host: host.name });
        });

      test('a container can open no raw or packet socket: EPERM', async () => {
        for (const p of [a1, ...workers])
          assert.equal(
            await inContainer(engines[i]!.dockerHost, p.container, ['netprobe', 'sockets']),
            'raw=EPERM packet=EPERM',
            p.id,
          );
      });

      test("a container reaches the control plane's job API and nothing else of its host or behind it; one outside Gantry reaches it all", async () => {
        const engine = engines[i]!;
        const controlPlane = engines[0]!.hostAddress;
        const targets = [
          { what: 'the job API', ip: controlPlane, port: JOB_PORT, gantry: true },
          { what: "the control plane's main API", ip: controlPlane, port: MAIN_PORT, gantry: false },
          { what: "the host's database", ip: engine.engineAddress, port: HOST_SERVICE_PORT, gantry: false },
          { what: 'the metadata address', ip: METADATA, port: 80, gantry: false },
          { what: "the operator's network", ip: engine.hostAddress, port: LAN_SERVICE_PORT, gantry: false },
        ];
        const from = [a1, ...workers, { id: 'outsider', container: outsiders[i]! }];
        // The agent let the job API through once a report's answer named it.
        await eventually(
          () => `the job API reached from ${a1.id}`,
          async () => (await reaches(engine.dockerHost, a1.container, controlPlane, JOB_PORT)).reached,
          30_000,
        );
        const tries = await Promise.all(
          from.flatMap((f) =>
            targets.map(async (t) => ({
              from: f.id,
              what: t.what,
              expected: f.id === 'outsider' || t.gantry,
              ...(await reaches(engine.dockerHost, f.container, t.ip, t.port)),
            })),
          ),
        );
        for (const t of tries) assert.equal(t.reached, t.expected, JSON.stringify(t));
      });
    });
  }
});
