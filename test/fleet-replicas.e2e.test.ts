// The fleet on two control-plane replicas, end to end: two `gantry serve` processes with runtime
// fleet on one PostgreSQL schema, and a host (a Docker daemon of its own with a real `gantry agent`
// given both replicas' URLs). A pod created through the replica the agent does not talk to runs and
// reads RUNNING on both; each replica's pod HTTP proxy reaches the pod's port through a tunnel of
// its own to the agent (docs/fleet.md "The tunnel"); when the agent's replica is killed (SIGKILL) the agent moves to the other,
// the host stays available, the pod keeps running untouched, and the surviving replica stops,
// starts and terminates it. GPUs are simulated by a stand-in nvidia-smi (the one seam no real thing
// fills here).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildImage, RECIPES } from './support/docker-images.js';
import { eventually, freePortRange } from './support/eventually.js';
import { dockerDaemonsUnavailable, startDockerDaemon, type DockerDaemon } from './support/docker-daemons.js';
import { openTestDb, postgresUrl, type TestDb } from './support/harness.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi } from './support/nvidia-smi.js';
import { runGantry, spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { spawnAgent, type SpawnedAgent } from './support/spawn-agent.js';
import { readSse } from './support/sse-client.js';

const KEY = 'fleet-replicas-e2e-admin-key-0123456789';
const SECRET = 'ef'.repeat(32);
const METRICS_TOKEN = 'fleet-replicas-e2e-metrics-token-0123456789';

interface Pod {
  id: string;
  status: string;
  statusReason: string | null;
  httpProxy?: Array<{ port: number; url: string }>;
}

const unavailable = dockerDaemonsUnavailable() ?? (postgresUrl() ? null : 'GANTRY_TEST_DATABASE_URL is not set');
if (unavailable && process.env.CI === 'true')
  throw new Error(
    `the fleet's two-replica end-to-end test needs a Docker daemon of its own and PostgreSQL under CI: ${unavailable}`,
  );

describe(
  'the fleet on two control-plane replicas sharing PostgreSQL, an agent failing over between them',
  { skip: unavailable ?? false },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'gantry-fleet-replicas-e2e-'));
    let t: TestDb;
    let daemon: DockerDaemon;
    const replicas: SpawnedGantry[] = [];
    let agent: SpawnedAgent | null = null;
    let image = '';
    let env: Record<string, string> = {};

    const api = async <T>(
      replica: SpawnedGantry,
      method: string,
      path: string,
      body?: unknown,
    ): Promise<{ status: number; body: T }> => {
      const res = await fetch(`${replica.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${KEY}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
    };
    const podOn = async (replica: SpawnedGantry, id: string) =>
      (
        await api<Pod>(replica, 'GET', `/v2/pods/${id}`).catch((err: Error) => {
          // a replica that stopped answering: say how it ended
          throw new Error(
            `${replica.url} did not answer (${err.message}); exit ${replica.child.exitCode ?? replica.child.signalCode}; its output:\n${replica.output().slice(-4000)}`,
          );
        })
      ).body;
    const container = async (podId: string) =>
      (await daemon.client.listContainers({ all: true, filters: { label: [`gantry.instance=${podId}`] } }))[0] ?? null;
    const startedAt = async (podId: string) =>
      (await daemon.client.inspectContainer((await container(podId))!.Id))!.State;
    const hostsList = () =>
      JSON.parse(runGantry(['hosts', 'list', '--json', '--data-dir', join(dir, 'cli')], env).stdout || '[]') as Array<{
        id: string;
        state: string;
      }>;

    before(async () => {
      t = await openTestDb('postgres');
      env = {
        GANTRY_DATABASE_URL: postgresUrl()!,
        GANTRY_DATABASE_SCHEMA: t.schema,
        GANTRY_SECRET_KEY: SECRET,
        GANTRY_BOOTSTRAP_KEY: KEY,
      };
      daemon = await startDockerDaemon();
      image = await buildImage(daemon.client, RECIPES.http);
      const config = join(dir, 'config.json');
      writeFileSync(
        config,
        JSON.stringify({
          runtime: 'fleet',
          fleet: { heartbeatMs: 500, heartbeatTimeoutMs: 2_500, pollWaitMs: 5_000 },
          pods: { stopGraceMs: 1_000 },
          // each replica's own pod HTTP proxy listener, reaching the host through its own tunnel
          proxy: { port: 0, connectTimeoutMs: 10_000 },
          metrics: { token: METRICS_TOKEN, refreshMs: 0 },
        }),
      );
      for (const name of ['replica-a', 'replica-b'])
        replicas.push(
          await spawnGantry(['--host', '127.0.0.1', '--data-dir', join(dir, name), '--config', config], env),
        );
      const smi = standInNvidiaSmi({
        csv: [0, 1]
          .map((i) => `${i}, GPU-c0ffee00-0000-4000-8000-00000000000${i}, NVIDIA GeForce RTX 4090, 24564`)
          .join('\n'),
        banner: BANNER_12_4,
      });
      const ports = await freePortRange(20);
      const token = runGantry(['hosts', 'token', 'create', '--data-dir', join(dir, 'cli')], env).stdout.trim();
      assert.match(token, /^gjt_/);
      agent = spawnAgent(
        [
          '--server',
          `${replicas[0]!.url},${replicas[1]!.url}`,
          '--token',
          token,
          '--data-dir',
          join(dir, 'host'),
          '--name',
          'host-1',
          '--docker-host',
          daemon.host,
          '--public-ip',
          '127.0.0.1',
          '--port-range',
          `${ports[0]}-${ports[1]}`,
          '--nvidia-smi',
          smi.path,
          '--gpu-mode',
          'env-only',
        ],
        { GANTRY_LOG_LEVEL: 'warn' },
      );
      await eventually('the host available', async () => hostsList().some((h) => h.state === 'available'));
    });

    after(async () => {
      await agent?.stop('SIGTERM');
      for (const r of replicas) await r.stop();
      await daemon?.stop();
      removeStandIns();
      await t?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    let podId = '';

    test(
      'a pod created through the replica the agent does not talk to runs, and reads RUNNING on both replicas',
      { timeout: 240_000 },
      async () => {
        const [a, b] = replicas as [SpawnedGantry, SpawnedGantry];
        // B learns of the join through the relay (or its next check): until then it has no room (400, nothing made).
        const created = await eventually(
          'B to place the pod',
          async () => {
            const r = await api<Pod>(b, 'POST', '/v2/pods', {
              name: 'replicated',
              image,
              gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
              ports: ['8000/http'],
              disk: 5,
            });
            assert.ok(r.status === 201 || r.status === 400, JSON.stringify(r.body));
            return r.status === 201 ? r : null;
          },
          45_000,
        );
        podId = created.body.id;
        for (const replica of [b, a])
          // Under a loaded CI machine the agent's first image start can take tens of seconds: the
          // ceiling is generous, and a miss says where the pod was and what the agent saw.
          await eventually(
            async () =>
              `RUNNING on ${replica.url}: ${JSON.stringify(await podOn(replica, podId))}\nagent: ${agent!.output().slice(-3000)}`,
            async () => (await podOn(replica, podId)).status === 'RUNNING',
            90_000,
            250,
          );
        assert.equal((await startedAt(podId)).Running, true);
      },
    );

    test("a pod's log stream read through the replica the agent does not poll is dialed back to that replica", async () => {
      const b = replicas[1]!;
      // The agent polls A first: B's stream operation reaches it through the database, A does not
      // hold the session (404), and the agent dials B, which does.
      const read = await readSse(`${b.url}/v2/pods/${podId}/logs?source=container&tail=20`, {
        headers: { authorization: `Bearer ${KEY}` },
        until: (events) => events.some((e) => e.data.includes('listening on 8000')),
        timeoutMs: 30_000,
      });
      assert.equal(read.status, 200);
      assert.ok(
        read.events.some((e) => (JSON.parse(e.data) as { line: string }).line === 'listening on 8000'),
        JSON.stringify(read.events),
      );
    });

    test("each replica reaches the pod's HTTP port through its own pod HTTP proxy, over a tunnel of its own to the one agent", async () => {
      const boots: string[] = [];
      for (const replica of replicas) {
        const url = (await podOn(replica, podId)).httpProxy?.find((h) => h.port === 8000)?.url;
        assert.ok(url, `${replica.url} lists the pod's proxy URL`);
        assert.ok(url.startsWith('http://127.0.0.1:'), url);
        const res = await fetch(new URL('info', url.endsWith('/') ? url : `${url}/`));
        assert.equal(res.status, 200, await res.clone().text());
        boots.push(((await res.json()) as { bootId: string }).bootId);
        const metrics = await (
          await fetch(`${replica.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
        ).text();
        assert.match(metrics, /^gantry_fleet_tunnels_open 1$/m, `${replica.url} holds one tunnel`);
      }
      assert.notEqual(
        new URL((await podOn(replicas[0]!, podId)).httpProxy![0]!.url).port,
        new URL((await podOn(replicas[1]!, podId)).httpProxy![0]!.url).port,
        'each replica names its own proxy listener',
      );
      assert.equal(boots[0], boots[1], 'both reached the one container');
    });

    test('when the agent’s replica is killed, the agent moves to the other; the host stays available and the pod runs on untouched', async () => {
      const [a, b] = replicas as [SpawnedGantry, SpawnedGantry];
      const before = (await startedAt(podId)).StartedAt;
      await a.stop('SIGKILL');
      // Past the heartbeat timeout: the host must have been heard through B meanwhile.
      await new Promise((r) => setTimeout(r, 4_000));
      assert.deepEqual(
        hostsList().map((h) => h.state),
        ['available'],
      );
      const pod = await podOn(b, podId);
      assert.deepEqual([pod.status, pod.statusReason], ['RUNNING', null]);
      const state = await startedAt(podId);
      assert.deepEqual([state.Running, state.StartedAt], [true, before], 'not restarted');
      assert.equal(agent!.child.exitCode, null, `the agent runs on: ${agent!.output()}`);
    });

    test('the surviving replica stops, starts and terminates the pod on the host', async () => {
      const b = replicas[1]!;
      assert.equal((await api(b, 'POST', `/v2/pods/${podId}/action`, { action: 'stop' })).status, 200);
      await eventually('the container stopped', async () => (await startedAt(podId)).Running === false, 20_000);
      await eventually('the pod EXITED', async () => (await podOn(b, podId)).status === 'EXITED');
      assert.equal((await api(b, 'POST', `/v2/pods/${podId}/action`, { action: 'start' })).status, 200);
      await eventually(
        async () =>
          `RUNNING again: ${JSON.stringify(await podOn(b, podId))}, container ${JSON.stringify(await startedAt(podId))}\nagent: ${agent!.output().slice(-3000)}\nreplica: ${b.output().slice(-3000)}`,
        async () => (await podOn(b, podId)).status === 'RUNNING',
        20_000,
      );
      assert.equal((await startedAt(podId)).Running, true);
      assert.ok((await api(b, 'DELETE', `/v2/pods/${podId}`)).status < 300);
      await eventually('the container removed', async () => (await container(podId)) === null, 20_000);
    });
  },
);
