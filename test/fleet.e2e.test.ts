// The fleet end to end, on one machine: a control plane (`gantry serve` with runtime fleet) and two
// hosts, each a Docker daemon of its own with a `gantry agent` over it (real processes, the real
// CLI for tokens and revocation). GPUs are simulated by a stand-in nvidia-smi per host (the one
// seam no real thing fills here). Pods are placed by GPU type on the host that has it, answer on
// their published ports on 127.0.0.1, keep running when their agent is killed (the host goes
// unreachable and comes back with nothing restarted), and a revoked host's agent is refused. A host
// that is unreachable or revoked is placed on and offered by the catalog no more from the moment
// `gantry hosts list` says so, and its pods answer every action with a 2xx or a 4xx.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildImage, RECIPES } from './support/docker-images.js';
import { eventually, freePortRange } from './support/eventually.js';
import { dockerDaemonsUnavailable, startDockerDaemon, type DockerDaemon } from './support/docker-daemons.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi } from './support/nvidia-smi.js';
import { runGantry, spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { spawnAgent, type SpawnedAgent } from './support/spawn-agent.js';
import { readSse } from './support/sse-client.js';
import { newKeyPair, noOpenSsh, runSsh } from './support/openssh.js';
import { pushImage, registryUnavailable, startRegistry, type TestRegistry } from './support/registry.js';

const KEY = 'fleet-e2e-admin-key-0123456789abcdef';

function getJson(port: number, path: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 2_000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body) as Record<string, unknown>);
        } catch (err) {
          reject(new Error(`${path} did not answer JSON: ${body.slice(0, 200)}`, { cause: err }));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

interface Pod {
  id: string;
  status: string;
  statusReason: string | null;
  runtime: { ports?: Array<{ private: number; public: number }> } | null;
}

const unavailable = dockerDaemonsUnavailable();
if (unavailable && process.env.CI === 'true')
  throw new Error(`the fleet's end-to-end tests need Docker daemons of their own under CI: ${unavailable}`);
const noRegistry = unavailable ? null : registryUnavailable();
/** Account B's: the control plane serves two accounts (workers would share the hosts' loopback). */
const MULTI_ACCOUNT = { GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT: 'true' };
const ALICE = { username: 'alice', password: 'alice-pw-4711' };
const BOB = { username: 'bob', password: 'bob-pw-0815' };

describe('the fleet: agents on two Docker hosts joined to one control plane', { skip: unavailable ?? false }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-fleet-e2e-'));
  const dataDir = join(dir, 'control-plane');
  // the server's and the CLI's: `gantry hosts list` judges availability by its heartbeat timeout
  const configPath = join(dir, 'config.json');
  const daemons: DockerDaemon[] = [];
  let server: SpawnedGantry | null = null;
  const agents = new Map<string, SpawnedAgent>();
  let image = '';
  const hostArgs = new Map<string, string[]>();
  /** A registry asking for a credential, and an image of it only alice could pull (pushed to host B's engine, untagged there). */
  let registry: TestRegistry | null = null;
  let secret = '';

  const api = async <T>(
    method: string,
    path: string,
    body?: unknown,
    key = KEY,
  ): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${server!.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  };
  const hostsList = (): Array<{ id: string; name: string; state: string }> =>
    JSON.parse(
      runGantry(['hosts', 'list', '--json', '--data-dir', dataDir, '--config', configPath]).stdout || '[]',
    ) as Array<{
      id: string;
      name: string;
      state: string;
    }>;
  /** What the catalog says of a GPU type for pods: its stock level, and whether any host offers it. */
  const offered = async (gpu: string) =>
    (
      await api<{ availability: string; secure: boolean }>(
        'GET',
        `/v2/catalog/gpus/${encodeURIComponent(gpu)}?include=AVAILABILITY&product=POD`,
      )
    ).body;
  const createPod = (gpu: string) =>
    api<Pod & { code?: string; detail?: string }>('POST', '/v2/pods', {
      name: 'on-gpu',
      image,
      gpu: { id: gpu, count: 1 },
      disk: 5,
    });
  const containerOf = async (daemon: DockerDaemon, podId: string) =>
    (await daemon.client.listContainers({ all: true, filters: { label: [`gantry.instance=${podId}`] } }))[0] ?? null;

  const startAgent = (name: string, token?: string): SpawnedAgent => {
    const agent = spawnAgent([...hostArgs.get(name)!, ...(token ? ['--token', token] : [])], {
      GANTRY_LOG_LEVEL: 'warn',
    });
    agents.set(name, agent);
    return agent;
  };

  before(async () => {
    daemons.push(...(await Promise.all([startDockerDaemon(), startDockerDaemon()])));
    image = await buildImage(daemons[0]!.client, RECIPES.http);
    const same = await buildImage(daemons[1]!.client, RECIPES.http);
    assert.equal(same, image, 'both hosts hold the same image');
    if (!noRegistry) {
      registry = await startRegistry({ alice: ALICE.password, bob: BOB.password });
      secret = `${registry.address}/acme/model-server:3`;
      await pushImage(daemons[1]!.host, image, secret, ALICE);
    }
    const registries = { allow: registry ? [registry.address] : [] };
    writeFileSync(
      configPath,
      JSON.stringify({
        // the timeout leaves room for the last-seen times written every second (`hosts list` reads those)
        fleet: { heartbeatMs: 500, heartbeatTimeoutMs: 4_000, pollWaitMs: 5_000 },
        pods: { stopGraceMs: 1_000 },
        runtime: { kind: 'fleet', orphanGraceMs: 1_500, docker: { registries } },
      }),
    );
    server = await spawnGantry(['--host', '127.0.0.1', '--data-dir', dataDir, '--config', configPath], {
      GANTRY_BOOTSTRAP_KEY: KEY,
      ...MULTI_ACCOUNT,
    });
    const gpus = {
      'host-a': [0, 1, 2]
        .map((i) => `${i}, GPU-a11ce000-0000-4000-8000-00000000000${i}, NVIDIA GeForce RTX 4090, 24564`)
        .join('\n'),
      'host-b': [0, 1]
        .map((i) => `${i}, GPU-b0b00000-0000-4000-8000-00000000000${i}, NVIDIA RTX A6000, 49140`)
        .join('\n'),
    };
    // what each host's nvidia-smi says of its GPUs' use: index, uuid, utilization.gpu, memory.used, memory.total
    const utilization = {
      'host-a': [0, 1, 2].map((i) => `${i}, GPU-a11ce000-0000-4000-8000-00000000000${i}, 31, 6141, 24564`).join('\n'),
      'host-b': [0, 1].map((i) => `${i}, GPU-b0b00000-0000-4000-8000-00000000000${i}, 73, 12285, 49140`).join('\n'),
    };
    for (const [i, name] of ['host-a', 'host-b'].entries()) {
      const smi = standInNvidiaSmi({
        csv: gpus[name as keyof typeof gpus],
        banner: BANNER_12_4,
        utilization: utilization[name as keyof typeof utilization],
      });
      const ports = await freePortRange(20);
      hostArgs.set(name, [
        '--server',
        server.url,
        '--data-dir',
        join(dir, name),
        '--name',
        name,
        '--docker-host',
        daemons[i]!.host,
        '--public-ip',
        '127.0.0.1',
        '--port-range',
        `${ports[0]}-${ports[1]}`,
        '--nvidia-smi',
        smi.path,
        '--gpu-mode',
        'env-only',
        ...(registry ? ['--registries-allow', registry.address] : []),
      ]);
      const token = runGantry(['hosts', 'token', 'create', '--data-dir', dataDir]).stdout.trim();
      assert.match(token, /^gjt_/);
      startAgent(name, token);
    }
    await eventually(
      () => `both hosts available: ${JSON.stringify(hostsList())}`,
      async () => hostsList().filter((h) => h.state === 'available').length === 2,
    );
  });

  after(async () => {
    for (const agent of agents.values()) await agent.stop('SIGTERM');
    await server?.stop();
    await Promise.all(daemons.map((d) => d.stop()));
    await registry?.close();
    removeStandIns();
    rmSync(dir, { recursive: true, force: true });
  });

  let podA = '';
  let podB = '';

  test('pods are placed by GPU type on the host that has it, and answer on their published ports', async () => {
    const make = async (gpu: string) => {
      const r = await api<Pod>('POST', '/v2/pods', {
        name: 'on-gpu',
        image,
        gpu: { id: gpu, count: 1 },
        ports: ['8000/http'],
        disk: 5,
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.id;
    };
    podA = await make('NVIDIA GeForce RTX 4090');
    podB = await make('NVIDIA RTX A6000');
    for (const id of [podA, podB]) {
      const pod = await eventually(`pod ${id} RUNNING`, async () => {
        const r = await api<Pod>('GET', `/v2/pods/${id}`);
        return r.body.status === 'RUNNING' && r.body.runtime?.ports?.length ? r.body : null;
      });
      const port = pod.runtime!.ports!.find((p) => p.private === 8000)!.public;
      const info = await eventually(`pod ${id} answering on ${port}`, () => getJson(port, '/info').catch(() => null));
      assert.equal((info.env as Record<string, string>).RUNPOD_POD_ID, id);
    }
    assert.ok(await containerOf(daemons[0]!, podA), 'the 4090 pod runs on host A');
    assert.equal(await containerOf(daemons[1]!, podA), null);
    assert.ok(await containerOf(daemons[1]!, podB), 'the A6000 pod runs on host B');
    assert.equal(await containerOf(daemons[0]!, podB), null);
  });

  test("a pod on an agent's host shows the utilisation its host measured: its GPU's figures from that host's nvidia-smi", async () => {
    let last = '';
    for (const [id, util, memoryUtil] of [
      [podA, 31, 25],
      [podB, 73, 25],
    ] as const) {
      const pod = await eventually(
        `pod ${id}'s GPU figures`,
        async () => {
          const r = await api<
            Pod & { runtime: { gpus?: Array<{ util: number; memoryUtil: number }>; cpu?: { util: number } } }
          >('GET', `/v2/pods/${id}`);
          last = JSON.stringify(r.body.runtime);
          return r.body.runtime?.gpus?.length ? r.body : null;
        },
        15_000,
      ).catch((err: Error) =>
        assert.fail(
          `${err.message}; runtime: ${last}; agent: ${[...agents.values()].map((a) => a.output().slice(-2000)).join('\n')}`,
        ),
      );
      assert.deepEqual(
        pod.runtime.gpus!.map((g) => [g.util, g.memoryUtil]),
        [[util, memoryUtil]],
      );
      assert.equal(typeof pod.runtime.cpu?.util, 'number');
    }
  });

  test("a pod's logs on an agent's host stream through the control plane: its container's output read on the host, and the platform's lines", async () => {
    const read = await readSse(`${server!.url}/v2/pods/${podB}/logs?tail=50`, {
      headers: { authorization: `Bearer ${KEY}` },
      until: (events) =>
        events.some((e) => e.data.includes('listening on 8000')) && events.some((e) => e.data.includes('"system"')),
    });
    assert.equal(read.status, 200);
    const lines = read.events.map((e) => JSON.parse(e.data) as { source: string; line: string });
    assert.ok(
      lines.some((l) => l.source === 'container' && l.line === 'listening on 8000'),
      JSON.stringify(lines),
    );
    assert.ok(
      lines.some((l) => l.source === 'system' && /host/.test(l.line)),
      JSON.stringify(lines),
    );
    // Resumed after the container line: nothing before it comes again.
    const last = read.events.findLast((e) => e.data.includes('listening on 8000'))!;
    const resumed = await readSse(`${server!.url}/v2/pods/${podB}/logs?source=container`, {
      headers: { authorization: `Bearer ${KEY}`, 'last-event-id': last.id! },
      until: (events) => events.length > 0,
      timeoutMs: 3_000,
    }).catch(() => null);
    assert.ok(
      resumed === null || resumed.events.every((e) => !e.data.includes('listening on 8000')),
      'a resumed stream repeated a line',
    );
  });

  test(
    "the SSH proxy opens a shell in a pod on an agent's host: a typed command runs in its container",
    { skip: noOpenSsh() },
    async () => {
      const key = newKeyPair();
      assert.equal((await api('PUT', '/v2/account/ssh-keys', [key.publicKey])).status, 200);
      const created = await api<Pod & { ssh: { proxy: { username: string; port: number } | null } }>(
        'POST',
        '/v2/pods',
        { name: 'ssh-on-agent', image, gpu: { id: 'NVIDIA RTX A6000', count: 1 }, startSsh: true, disk: 5 },
      );
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const pod = await eventually(
        'the ssh pod RUNNING with its proxy',
        async () => {
          const r = await api<Pod & { ssh: { proxy: { username: string; port: number } | null } }>(
            'GET',
            `/v2/pods/${created.body.id}`,
          );
          return r.body.status === 'RUNNING' && r.body.ssh.proxy ? r.body : null;
        },
        20_000,
      );
      const run = await runSsh({
        user: pod.ssh.proxy!.username,
        port: pod.ssh.proxy!.port,
        key: key.path,
        input: 'echo "hi-$((6*7)) $RUNPOD_POD_ID"\nexit 4\n',
      });
      assert.equal(run.code, 4, run.stderr);
      assert.match(run.stdout, new RegExp(`hi-42 ${pod.id}`));
      assert.equal((await api('DELETE', `/v2/pods/${pod.id}`)).status < 300, true);
    },
  );

  test(
    "on an agent's host a private image another account pulled runs only for an account whose own credential the registry accepts, checked by the agent",
    { skip: noRegistry ?? false },
    async () => {
      const account = runGantry(
        ['accounts', 'create', 'intruder', '--data-dir', dataDir, '--config', configPath],
        MULTI_ACCOUNT,
      );
      assert.equal(account.status, 0, account.stderr);
      const made = runGantry(['keys', 'create', '--account', 'intruder', '--scope', 'write', '--data-dir', dataDir]);
      assert.equal(made.status, 0, made.stderr);
      const intruder = made.stdout.trim();
      const credential = async (key: string, who: { username: string; password: string }) => {
        const r = await api<{ id: string }>('POST', '/v2/registries', { name: who.username, ...who }, key);
        assert.equal(r.status, 201, JSON.stringify(r.body));
        return r.body.id;
      };
      const settle = async (key: string, registryId: string | null) => {
        const created = await api<Pod>(
          'POST',
          '/v2/pods',
          {
            name: 'private-image',
            image: secret,
            gpu: { id: 'NVIDIA RTX A6000', count: 1 },
            disk: 5,
            ...(registryId ? { registry: registryId } : {}),
          },
          key,
        );
        assert.equal(created.status, 201, JSON.stringify(created.body));
        const pod = await eventually(
          `pod ${created.body.id} RUNNING or ERROR`,
          async () => {
            const r = await api<Pod>('GET', `/v2/pods/${created.body.id}`, undefined, key);
            return r.body.status === 'RUNNING' || r.body.status === 'ERROR' ? r.body : null;
          },
          30_000,
        );
        const container = await containerOf(daemons[1]!, pod.id);
        assert.equal((await api('DELETE', `/v2/pods/${pod.id}`, undefined, key)).status < 300, true);
        await eventually('the pod’s container gone', async () => (await containerOf(daemons[1]!, pod.id)) === null);
        return { pod, container };
      };

      const owner = await settle(KEY, await credential(KEY, ALICE));
      assert.equal(owner.pod.status, 'RUNNING', owner.pod.statusReason ?? '');
      const none = await settle(intruder, null);
      assert.equal(none.pod.status, 'ERROR');
      assert.match(none.pod.statusReason ?? '', /is private on this host/);
      assert.equal(none.container, null, 'the agent created no container');
      const own = await settle(intruder, await credential(intruder, BOB));
      assert.equal(own.pod.status, 'RUNNING', own.pod.statusReason ?? '');
    },
  );

  test('an agent killed with SIGKILL makes its host unreachable, leaves its containers running and the other host alone; restarted, it adopts them without a restart', async () => {
    // A second pod on host A, to act on while its host is away (pod A is left to be adopted).
    const created = await createPod('NVIDIA GeForce RTX 4090');
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const podA2 = created.body.id;
    await eventually(
      'pod A2 RUNNING',
      async () => (await api<Pod>('GET', `/v2/pods/${podA2}`)).body.status === 'RUNNING',
    );
    assert.ok(await containerOf(daemons[0]!, podA2), 'pod A2 runs on host A');
    assert.equal((await offered('NVIDIA GeForce RTX 4090')).secure, true, 'host A has a 4090 free');

    const before = (await daemons[0]!.client.inspectContainer((await containerOf(daemons[0]!, podA))!.Id))!.State
      .StartedAt;
    await agents.get('host-a')!.stop('SIGKILL');
    // As an operator would: as soon as `gantry hosts list` says the host is unreachable, create.
    await eventually(
      'host A listed unreachable',
      async () => hostsList().find((h) => h.name === 'host-a')?.state === 'unreachable',
      15_000,
    );
    // placement skips the unreachable host: its free 4090 is out of reach, so a 4090 pod has nowhere to go
    const refused = await createPod('NVIDIA GeForce RTX 4090');
    assert.deepEqual(
      [refused.status, refused.body.code],
      [400, 'NO_CAPACITY'],
      `a pod that only the unreachable host could take is refused: ${JSON.stringify(refused.body)}`,
    );
    assert.deepEqual(
      await offered('NVIDIA GeForce RTX 4090'),
      { ...(await offered('NVIDIA GeForce RTX 4090')), availability: 'NONE', secure: false },
      'the catalog offers its GPUs no more',
    );
    const unreachable = await eventually(
      'pod A to say its host is unreachable',
      async () => {
        const r = await api<Pod>('GET', `/v2/pods/${podA}`);
        return r.body.statusReason?.includes('unreachable') ? r.body : null;
      },
      15_000,
    );
    assert.equal(unreachable.status, 'RUNNING', 'the pod keeps its status while its host is away');
    assert.equal((await api<Pod>('GET', `/v2/pods/${podB}`)).body.statusReason, null, 'the other host is unaffected');
    assert.equal(
      (await daemons[0]!.client.inspectContainer((await containerOf(daemons[0]!, podA))!.Id))!.State.Running,
      true,
      'its container runs on',
    );

    // Every action on its pods answers 2xx or 4xx: what cannot start is 409, stop and terminate wait in its queue.
    for (const [path, body] of [
      [`/v2/pods/${podA2}/action`, { action: 'restart' }],
      [`/v2/pods/${podA}/action`, { action: 'restart' }],
    ] as const) {
      const r = await api<{ code: string; detail: string }>('POST', path, body);
      assert.deepEqual([r.status, r.body.code], [409, 'HOST_UNAVAILABLE'], JSON.stringify(r.body));
      assert.match(r.body.detail, /unreachable since/);
    }
    assert.equal((await api('POST', `/v2/pods/${podA2}/action`, { action: 'stop' })).status, 200);
    const start = await api<{ code: string }>('POST', `/v2/pods/${podA2}/action`, { action: 'start' });
    assert.deepEqual([start.status, start.body.code], [409, 'HOST_UNAVAILABLE']);
    assert.equal((await api('DELETE', `/v2/pods/${podA2}`)).status, 204);
    assert.equal((await api<Pod>('GET', `/v2/pods/${podA2}`)).body.status, 'TERMINATED');
    assert.ok(await containerOf(daemons[0]!, podA2), 'its container waits for the host to be back');

    // Meanwhile a container with Gantry's labels that no record places anywhere appears on host A.
    const original = await daemons[0]!.client.inspectContainer((await containerOf(daemons[0]!, podA))!.Id);
    const labels: Record<string, string> = { ...original!.Config.Labels, 'gantry.instance': 'strayzz000001' };
    const namespace = labels['gantry.namespace']!;
    const stray = await daemons[0]!.client.createContainer(`gantry-${namespace}-strayzz000001`, {
      Image: image,
      Labels: labels,
    } as never);
    await daemons[0]!.client.startContainer(stray.Id);

    startAgent('host-a');
    await eventually(
      'the terminated pod’s container removed once its host is back',
      async () => (await containerOf(daemons[0]!, podA2)) === null,
      20_000,
    );
    await eventually(
      'the stray container removed after the orphan grace',
      async () => (await containerOf(daemons[0]!, 'strayzz000001')) === null,
      20_000,
    );
    await eventually(
      'pod A seen again',
      async () => {
        const r = await api<Pod>('GET', `/v2/pods/${podA}`);
        return r.body.status === 'RUNNING' && r.body.statusReason === null;
      },
      20_000,
    );
    const after = (await daemons[0]!.client.inspectContainer((await containerOf(daemons[0]!, podA))!.Id))!.State
      .StartedAt;
    assert.equal(after, before, 'adopted, not restarted');
    assert.equal((await offered('NVIDIA GeForce RTX 4090')).secure, true, 'offered again');
  });

  test('terminating a pod removes its container from its host', async () => {
    assert.equal((await api('DELETE', `/v2/pods/${podA}`)).status < 300, true);
    await eventually(
      'pod A’s container gone from host A',
      async () => (await containerOf(daemons[0]!, podA)) === null,
      20_000,
    );
  });

  test('a revoked host’s agent is refused and ends with status 3; the host is placed on and offered no more, its pod ends saying so and is deleted with 204', async () => {
    const host = hostsList().find((h) => h.name === 'host-b')!;
    const r = runGantry(['hosts', 'revoke', host.id, '--data-dir', dataDir]);
    assert.equal(r.status, 0, r.stderr);
    const exit = await Promise.race([
      agents.get('host-b')!.exited,
      new Promise<null>((r) => setTimeout(() => r(null), 20_000).unref()),
    ]);
    assert.equal(exit?.code, 3, agents.get('host-b')!.output());
    assert.equal(hostsList().find((h) => h.id === host.id)?.state, 'revoked');
    const ended = await eventually(
      'pod B to end saying its host was revoked',
      async () => {
        const p = (await api<Pod>('GET', `/v2/pods/${podB}`)).body;
        return p.status === 'EXITED' ? p : null;
      },
      15_000,
    );
    assert.match(ended.statusReason ?? '', new RegExp(`host ${host.id} was revoked at`));
    assert.deepEqual(
      await offered('NVIDIA RTX A6000'),
      { ...(await offered('NVIDIA RTX A6000')), availability: 'NONE', secure: false },
      'the catalog offers its GPUs no more',
    );
    const refused = await createPod('NVIDIA RTX A6000');
    assert.deepEqual([refused.status, refused.body.code], [400, 'NO_CAPACITY'], JSON.stringify(refused.body));
    const start = await api<{ code: string; detail: string }>('POST', `/v2/pods/${podB}/action`, { action: 'start' });
    assert.deepEqual([start.status, start.body.code], [409, 'HOST_UNAVAILABLE'], JSON.stringify(start.body));
    const deleted = await api('DELETE', `/v2/pods/${podB}`);
    assert.equal(deleted.status, 204, JSON.stringify(deleted.body));
    assert.equal((await api<Pod>('GET', `/v2/pods/${podB}`)).body.status, 'TERMINATED');
  });
});
