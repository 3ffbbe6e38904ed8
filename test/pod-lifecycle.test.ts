// The pod lifecycle with real processes: the controller drives instances of the process runtime,
// stop/start keep the machine assignment, terminate frees it, and a restarted server brings its
// pods back. Waits poll the pod with a deadline; nothing depends on a fixed sleep.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { loadConfig } from '../src/config.js';
import { FakeClock } from '../src/domain/clock.js';
import { bootstrapAdmin, createServices } from '../src/main.js';
import { buildApp } from '../src/http/app.js';
import { openDatabase } from '../src/store/database.js';
import type { Services } from '../src/services.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const images = {
  'sleeper:1': { command: [process.execPath, '-e', 'setInterval(()=>{},1000)'] },
  'exit3:1': { command: [process.execPath, '-e', 'setTimeout(()=>process.exit(3),50)'] },
  'broken:1': { command: ['/nonexistent/gantry-test-binary'] },
};
// One small GPU host so that taking and freeing GPUs is visible, one roomy host for the rest.
const fleet = [
  {
    id: 'small',
    dataCenterId: 'US-CA-2',
    gpuTypeId: 'NVIDIA RTX A5000',
    gpuCount: 2,
    cudaVersion: '12.1',
    portRange: [31000, 31099],
  },
  {
    id: 'big',
    dataCenterId: 'US-TX-3',
    gpuTypeId: GPU,
    gpuCount: 64,
    cudaVersion: '12.4',
    vcpus: 256,
    memoryGb: 2048,
    portRange: [32000, 32999],
  },
];
const file = {
  images,
  fleet,
  pods: { reconcileIntervalMs: 50, stopGraceMs: 1000 },
  rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
};

type Req = (
  key: string | null,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  body?: unknown,
) => Promise<LightMyRequestResponse>;

/** Polls the pod until it has `status`, failing after a bounded deadline. */
async function waitForStatus(request: Req, key: string, id: string, status: string, timeoutMs = 10_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < deadline) {
    last = json(await request(key, 'GET', `/v2/pods/${id}`));
    if (last.status === status) return last;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(
    `pod ${id} did not reach ${status} within ${timeoutMs} ms (last: ${last?.status} ${last?.statusReason ?? ''})`,
  );
}

describe('lifecycle on one server', () => {
  let t: TestApp;
  let key: string;
  let clock: FakeClock;
  const req: Req = (k, m, u, b) => t.request(k, m, u, b);
  const create = async (body: Record<string, unknown>) => {
    const res = await t.request(key, 'POST', '/v2/pods', {
      name: 'life',
      image: 'sleeper:1',
      gpu: { id: GPU },
      ...body,
    });
    assert.equal(res.statusCode, 201, res.body);
    return json(res);
  };
  const act = (id: string, action: string) => t.request(key, 'POST', `/v2/pods/${id}/action`, { action });

  before(async () => {
    clock = new FakeClock(Date.now());
    t = await createTestApp({ clock, file });
    key = (await t.newAccount('life')).key;
  });
  after(() => t.close());

  test('a mapped image runs as a real process: PROVISIONING → STARTING → RUNNING, with pod:status events', async () => {
    const seen: string[] = [];
    const off = t.services.events.on('pod:status', (e) => seen.push(`${e.from}→${e.to}`));
    const pod = await create({});
    assert.equal(pod.status, 'PROVISIONING');
    const running = await waitForStatus(req, key, pod.id, 'RUNNING');
    off();
    assert.equal(running.statusReason, null);
    assert.equal((await t.services.runtime.inspect(pod.id))?.state, 'running');
    assert.deepEqual(seen.filter((s) => s.endsWith('STARTING') || s.endsWith('RUNNING')).slice(0, 2), [
      'PROVISIONING→STARTING',
      'STARTING→RUNNING',
    ]);
  });

  test('a process that exits on its own leaves the pod EXITED with the reason, not restarted, its GPUs released', async () => {
    const pod = await create({ image: 'exit3:1' });
    const exited = await waitForStatus(req, key, pod.id, 'EXITED');
    assert.match(exited.statusReason, /code 3/);
    assert.equal(exited.cost, 0);
    assert.equal(exited.cudaVersion, '12.4');
    assert.deepEqual(exited.actions, ['start', 'terminate']);
    assert.equal(t.services.inventory.allocationOf(pod.id), undefined);
    // several reconcile periods later it is still EXITED (no automatic restart)
    await t.services.podController.idle(pod.id);
    assert.equal(json(await t.request(key, 'GET', `/v2/pods/${pod.id}`)).status, 'EXITED');
  });

  test('an image whose command cannot be spawned puts the pod in ERROR with the reason', async () => {
    const pod = await create({ image: 'broken:1' });
    const failed = await waitForStatus(req, key, pod.id, 'ERROR');
    assert.match(failed.statusReason, /nonexistent|ENOENT|not found/i);
    assert.deepEqual(failed.actions, ['start', 'terminate']);
    assert.equal(failed.cost, 0);
    assert.equal(t.services.inventory.allocationOf(pod.id), undefined);
  });

  test('stop then start resumes on the same host with the same GPU indices and public ports', async () => {
    const pod = await create({ gpu: { id: 'NVIDIA RTX A5000', count: 1 }, ports: ['22/tcp'] });
    await waitForStatus(req, key, pod.id, 'RUNNING');
    const before = (await t.services.pods.store.get(pod.id))!;
    const stopped = await act(pod.id, 'stop');
    assert.equal(stopped.statusCode, 200, stopped.body);
    assert.equal(json(stopped).status, 'EXITED');
    assert.equal(await t.services.runtime.inspect(pod.id), null);
    assert.equal(t.services.inventory.allocationOf(pod.id), undefined, 'a stopped pod holds no reservation');
    assert.equal((await act(pod.id, 'start')).statusCode, 200);
    const running = await waitForStatus(req, key, pod.id, 'RUNNING');
    const after = (await t.services.pods.store.get(pod.id))!;
    assert.equal(after.hostId, before.hostId);
    assert.deepEqual(after.gpuIndices, before.gpuIndices);
    assert.deepEqual(after.portMappings, before.portMappings);
    assert.deepEqual(t.services.inventory.allocationOf(pod.id)?.gpuIndices, before.gpuIndices);
    assert.equal(running.ssh.direct.port, before.portMappings[0]!.public);
    await act(pod.id, 'terminate');
  });

  test("a pod's persistent volume keeps its data across stop and start, and goes with terminate", async () => {
    const pod = await create({ mounts: { persistent: { size: 10, path: '/workspace' } } });
    await waitForStatus(req, key, pod.id, 'RUNNING');
    const folder = join(t.config.dataDir, 'pods', pod.id, 'persistent');
    assert.ok(existsSync(folder), 'the runtime made the volume when the instance mounted it');
    writeFileSync(join(folder, 'checkpoint.bin'), 'x');
    assert.equal((await act(pod.id, 'stop')).statusCode, 200);
    assert.ok(existsSync(join(folder, 'checkpoint.bin')), 'stop keeps it');
    assert.equal((await act(pod.id, 'start')).statusCode, 200);
    await waitForStatus(req, key, pod.id, 'RUNNING');
    assert.ok(existsSync(join(folder, 'checkpoint.bin')), 'start finds it again');
    assert.equal((await act(pod.id, 'terminate')).statusCode, 204);
    assert.ok(!existsSync(join(t.config.dataDir, 'pods', pod.id)), 'terminate removes it');
  });

  test("start is refused with 400 HOST_FULL when the host's GPUs were taken meanwhile", async () => {
    const first = await create({ gpu: { id: 'NVIDIA RTX A5000', count: 2 } });
    await waitForStatus(req, key, first.id, 'RUNNING');
    await act(first.id, 'stop');
    const second = await create({ gpu: { id: 'NVIDIA RTX A5000', count: 2 } });
    const refused = await act(first.id, 'start');
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal(json(refused).code, 'HOST_FULL');
    assert.match(json(refused).detail, /GPUs \[0,1\]/);
    assert.equal(json(await t.request(key, 'GET', `/v2/pods/${first.id}`)).status, 'EXITED');
    await act(second.id, 'terminate');
    await act(first.id, 'terminate');
  });

  test('terminate stops the process and releases the GPUs: a new pod can take them', async () => {
    const holder = await create({ gpu: { id: 'NVIDIA RTX A5000', count: 2 } });
    await waitForStatus(req, key, holder.id, 'RUNNING');
    const blocked = await t.request(key, 'POST', '/v2/pods', {
      name: 'x',
      image: 'sleeper:1',
      gpu: { id: 'NVIDIA RTX A5000' },
    });
    assert.equal(blocked.statusCode, 400);
    assert.equal(json(blocked).code, 'NO_CAPACITY');
    assert.equal((await act(holder.id, 'terminate')).statusCode, 204);
    assert.equal(await t.services.runtime.inspect(holder.id), null);
    const next = await create({ gpu: { id: 'NVIDIA RTX A5000', count: 2 } });
    assert.deepEqual((await t.services.pods.store.get(next.id))!.gpuIndices, [0, 1]);
    await act(next.id, 'terminate');
  });

  test('restart replaces the instance on the same allocation: STARTING, then RUNNING with a new startedAt', async () => {
    const pod = await create({});
    const first = await waitForStatus(req, key, pod.id, 'RUNNING');
    const allocation = t.services.inventory.allocationOf(pod.id);
    clock.advance(60_000);
    const res = await act(pod.id, 'restart');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(json(res).status, 'STARTING');
    const again = await waitForStatus(req, key, pod.id, 'RUNNING');
    assert.ok(Date.parse(again.startedAt) > Date.parse(first.startedAt));
    assert.deepEqual(t.services.inventory.allocationOf(pod.id), allocation);
  });

  test('stop of a STARTING or PROVISIONING pod is accepted and the instance does not come up afterwards', async () => {
    const pod = await create({});
    const res = await act(pod.id, 'stop');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(json(res).status, 'EXITED');
    await t.services.podController.idle(pod.id);
    assert.equal(json(await t.request(key, 'GET', `/v2/pods/${pod.id}`)).status, 'EXITED');
    assert.equal(await t.services.runtime.inspect(pod.id), null);
  });

  test('the periodic reconcile restarts the instance of a RUNNING pod that vanished from the runtime', async () => {
    await t.services.podController.start();
    const pod = await create({});
    await waitForStatus(req, key, pod.id, 'RUNNING');
    const seen: string[] = [];
    const off = t.services.events.on('pod:status', (e) => e.podId === pod.id && seen.push(e.to));
    await t.services.runtime.stop(pod.id);
    const deadline = Date.now() + 10_000;
    while (!seen.includes('RUNNING') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    off();
    assert.deepEqual(seen.slice(0, 2), ['STARTING', 'RUNNING']);
    assert.equal((await t.services.runtime.inspect(pod.id))?.state, 'running');
  });
});

describe('lifecycle across a server restart', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gantry-restart-'));
  const configPath = join(dataDir, 'config.json');
  let current: { app: FastifyInstance; services: Services } | null = null;

  async function boot(fleetFile: unknown[]): Promise<{ app: FastifyInstance; services: Services }> {
    writeFileSync(configPath, JSON.stringify({ ...file, fleet: fleetFile }));
    const config = loadConfig({
      env: { GANTRY_DATA_DIR: dataDir, GANTRY_CONFIG: configPath, GANTRY_LOG_LEVEL: 'silent' },
    });
    const db = await openDatabase({ url: null, dataDir });
    const services = await createServices(config, { db, logger: pino({ level: 'silent' }) });
    await services.podController.start();
    const app = await buildApp(services, { logger: false });
    current = { app, services };
    return current;
  }

  async function shutDown(): Promise<void> {
    if (!current) return;
    await current.app.close();
    await current.services.podController.stop();
    await current.services.runtime.close();
    await current.services.db.close();
    current = null;
  }

  after(async () => {
    await shutDown();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('RUNNING pods run again after a restart, stopped pods stay stopped, and a pod whose host is gone goes to ERROR', async () => {
    let { app, services } = await boot(fleet);
    const key = (await bootstrapAdmin(services))!;
    const req: Req = (k, method, url, body) =>
      app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${k}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      });
    const create = async (body: Record<string, unknown>) => {
      const res = await req(key, 'POST', '/v2/pods', {
        name: 'survivor',
        image: 'sleeper:1',
        gpu: { id: GPU },
        ...body,
      });
      assert.equal(res.statusCode, 201, res.body);
      return json(res);
    };
    const running = await create({});
    const stopped = await create({});
    const onSmallHost = await create({ gpu: { id: 'NVIDIA RTX A5000' } });
    await waitForStatus(req, key, running.id, 'RUNNING');
    await waitForStatus(req, key, stopped.id, 'RUNNING');
    await waitForStatus(req, key, onSmallHost.id, 'RUNNING');
    assert.equal((await req(key, 'POST', `/v2/pods/${stopped.id}/action`, { action: 'stop' })).statusCode, 200);
    const allocation = services.inventory.allocationOf(running.id);

    await shutDown();
    // The small host is no longer in the fleet after the restart.
    ({ app, services } = await boot(fleet.filter((h) => h.id !== 'small')));

    const back = await waitForStatus(req, key, running.id, 'RUNNING');
    assert.equal((await services.runtime.inspect(running.id))?.state, 'running');
    assert.deepEqual(services.inventory.allocationOf(running.id), allocation);
    assert.ok(back.runtime);
    const still = json(await req(key, 'GET', `/v2/pods/${stopped.id}`));
    assert.equal(still.status, 'EXITED');
    assert.equal(await services.runtime.inspect(stopped.id), null);
    const orphan = await waitForStatus(req, key, onSmallHost.id, 'ERROR');
    assert.match(orphan.statusReason, /small/);
  });
});
