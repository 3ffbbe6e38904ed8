/**
 * FlashBoot on the fleet when a host is lost (issue 30): a control plane with `runtime: fleet` (a
 * whole listening server) and two real `gantry agent` processes over a real Docker Engine
 * (DOCKER_HOST, a namespace each), a real worker container (test/fixtures/container-echo-worker.mjs
 * over dist/worker). A FlashBoot endpoint's idle worker is suspended on host A (its container
 * paused); A's agent is killed with SIGKILL. Once A is unreachable the suspended worker is lost as
 * a worker whose pings stopped: its row leaves `suspended`, the next job is answered by a new
 * worker on host B, no job is lost; when A's agent comes back, the lost worker's container is
 * removed (nothing leaked). Skipped, saying why, without an engine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { dockerEngine, noEngine, removeNamespace, uniqueNamespace } from './support/docker.js';
import { buildImage } from './support/docker-images.js';
import { eventually, freePortRange } from './support/eventually.js';
import { startFleetServer, type FleetServer } from './support/fleet.js';
import { spawnAgent, type SpawnedAgent } from './support/spawn-agent.js';

const ROOT = resolve(import.meta.dirname, '..');
const engine = await dockerEngine();
after(() => engine?.client.close());

interface Job {
  id: string;
  status: string;
  output?: { echoed: unknown; podId: string | null };
}
interface Health {
  workers: { idle: number; running: number; suspended: number; initializing: number };
  jobs: { inQueue: number; inProgress: number; failed: number; completed: number };
}

describe(
  'FlashBoot on the fleet: a host lost while its worker is suspended',
  { skip: engine ? false : noEngine() },
  () => {
    const e = engine!;
    const dir = mkdtempSync(join(tmpdir(), 'gantry-flashboot-lost-host-'));
    const hosts = {
      a: { namespace: uniqueNamespace(), args: [] as string[], agent: null as SpawnedAgent | null, id: '' },
      b: { namespace: uniqueNamespace(), args: [] as string[], agent: null as SpawnedAgent | null, id: '' },
    };
    let s: FleetServer;
    let key = '';
    let endpointId = '';

    const api = async <T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
      const res = await fetch(`${s.url}${path}`, {
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
    const health = async () => (await api<Health>('GET', `/v2/${endpointId}/health`)).body;
    const containersOf = (host: keyof typeof hosts) =>
      e.client.listContainers({
        all: true,
        filters: { label: [`gantry.namespace=${hosts[host].namespace}`, `gantry.endpoint=${endpointId}`] },
      });
    const startAgent = (host: keyof typeof hosts, extra: string[] = []) => {
      hosts[host].agent = spawnAgent([...hosts[host].args, ...extra], { GANTRY_LOG_LEVEL: 'warn' });
      return hosts[host].agent;
    };
    /** Joins host `host` and waits for it in the inventory. */
    const join_ = async (host: keyof typeof hosts) => {
      const before = new Set(s.server.services.inventory.snapshot().hosts.map((h) => h.id));
      const { token } = await s.server.services.fleet.createJoinToken();
      const agent = startAgent(host, ['--token', token]);
      await eventually(
        () => `host ${host} to join; its agent said:\n${agent.output()}`,
        async () => {
          const joined = s.server.services.inventory.snapshot().hosts.find((h) => !before.has(h.id));
          if (joined) hosts[host].id = joined.id;
          return joined !== undefined && s.server.services.inventory.isAvailable(joined.id);
        },
        60_000,
      );
    };
    const job = async (input: unknown) => {
      const sent = await api<Job>('POST', `/v2/${endpointId}/run`, { input });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      const done = await eventually(
        async () => `job ${sent.body.id} to finish; health ${JSON.stringify(await health())}`,
        async () => {
          const j = (await api<Job>('GET', `/v2/${endpointId}/status/${sent.body.id}`)).body;
          return j.status === 'COMPLETED' || j.status === 'FAILED' ? j : null;
        },
        120_000,
      );
      assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
      assert.deepEqual(done.output?.echoed, input);
      return done.output!.podId!;
    };

    before(async () => {
      s = await startFleetServer({
        file: {
          runtime: { kind: 'fleet' },
          fleet: { heartbeatMs: 500, heartbeatTimeoutMs: 4_000, pollWaitMs: 5_000 },
          pods: { stopGraceMs: 1_000 },
          jobs: { timekeeperIntervalMs: 200, pingIntervalMs: 1_000 },
          serverless: { autoscaler: { intervalMs: 200 }, flashboot: { prepull: { intervalMs: 0 } } },
        },
      });
      for (const [name, host] of Object.entries(hosts)) {
        const ports = await freePortRange(10);
        host.args = [
          '--server',
          s.url,
          '--data-dir',
          join(dir, name),
          '--name',
          `lost-host-${name}`,
          '--namespace',
          host.namespace,
          '--public-ip',
          '127.0.0.1',
          '--port-range',
          `${ports[0]}-${ports[1]}`,
          '--docker-host',
          e.dockerHost,
          '--nvidia-smi',
          join(dir, 'no-nvidia-smi'),
        ];
      }
      const workerDir = join(ROOT, 'dist', 'worker');
      const image = await buildImage(e.client, {
        name: 'echo-worker',
        node: true,
        files: [
          { from: join(ROOT, 'test', 'fixtures', 'container-echo-worker.mjs'), to: '/app/handler.mjs' },
          ...readdirSync(workerDir)
            .filter((f) => f.endsWith('.js'))
            .map((f) => ({ from: join(workerDir, f), to: `/app/worker/${f}` })),
        ],
        changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/handler.mjs"]'],
      });
      const services = s.server.services;
      const account = await services.accounts.createAccount('lost-host');
      key = (await services.accounts.createKey(account.id, { scope: 'write' })).key;
      const template = await services.templates.create(account.id, {
        name: `lost-host-${Date.now()}`,
        imageName: image,
        isServerless: true,
        containerDiskInGb: 5,
      });
      endpointId = (
        await services.endpoints.create(account.id, {
          name: 'lost-host',
          templateId: template.id,
          instanceIds: ['cpu3c-2-4'],
          workersMin: 0,
          workersMax: 1,
          idleTimeout: 1,
          flashboot: true,
        })
      ).id;
    });
    after(async () => {
      await Promise.all(Object.values(hosts).flatMap((h) => (h.agent ? [h.agent.stop('SIGKILL')] : [])));
      await s?.close();
      for (const h of Object.values(hosts)) await removeNamespace(e.client, h.namespace);
      rmSync(dir, { recursive: true, force: true });
    });

    test('a suspended worker whose fleet host is lost is a lost worker: it leaves suspended, the next job gets a new worker on another host, and its container goes once the host is back', async () => {
      await join_('a');
      const first = await job({ n: 1 });
      await eventually(
        async () => `the idle worker suspended; health ${JSON.stringify(await health())}`,
        async () => (await health()).workers.suspended === 1,
        60_000,
      );
      const [paused] = await containersOf('a');
      assert.ok(paused, 'its container is on host A');
      assert.equal((await e.client.inspectContainer(paused.Id))?.State.Paused, true, 'paused');

      await join_('b');
      assert.equal((await hosts.a.agent!.stop('SIGKILL')).signal, 'SIGKILL');
      await eventually(
        async () => `host A unreachable, the worker no longer suspended; health ${JSON.stringify(await health())}`,
        async () => {
          const h = await health();
          return !s.server.services.inventory.isAvailable(hosts.a.id) && h.workers.suspended === 0;
        },
        60_000,
      );
      const w = await health();
      assert.equal(w.workers.idle + w.workers.running + w.workers.initializing, 0, 'not counted as up either');

      const second = await job({ n: 2 });
      assert.notEqual(second, first, 'answered by a new worker');
      assert.equal((await containersOf('b')).length, 1, 'on host B');
      const end = await health();
      assert.equal(end.jobs.failed, 0, 'no job lost');
      assert.equal(end.jobs.completed, 2);

      startAgent('a');
      await eventually(
        async () => `the lost worker's container removed from host A: ${JSON.stringify(await containersOf('a'))}`,
        async () => (await containersOf('a')).length === 0,
        60_000,
      );
    });
  },
);
