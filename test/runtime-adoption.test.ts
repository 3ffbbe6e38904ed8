// A server killed without a shutdown, and a new one started over the same database with a runtime
// that still runs the instances (as a container runtime does): what the first server recorded is
// adopted, what it should not run is stopped, and what nobody claims is removed after the grace
// period. The in-memory runtime plays the engine; the clock is a fake one.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { FakeClock } from '../src/domain/clock.js';
import { bootstrapAdmin, createServices, startServer, type RunningServer } from '../src/main.js';
import { buildApp } from '../src/http/app.js';
import { openDatabase } from '../src/store/database.js';
import type { AttachedInstance, InstanceOwner } from '../src/runtime/runtime.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { json } from './support/harness.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const GRACE = 60_000;
const silent = pino({ level: 'silent' });
const dataDir = mkdtempSync(join(tmpdir(), 'gantry-adoption-'));
const configPath = join(dataDir, 'config.json');
writeFileSync(
  configPath,
  JSON.stringify({
    server: { port: 0 },
    runtime: { orphanGraceMs: GRACE },
    pods: { reconcileIntervalMs: 50 },
    serverless: { autoscaler: { intervalMs: 600_000 } },
  }),
);
const config = loadConfig({ env: { GANTRY_DATA_DIR: dataDir, GANTRY_CONFIG: configPath, GANTRY_LOG_LEVEL: 'silent' } });
let second: RunningServer | null = null;

after(async () => {
  await second?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const live = (id: string, owner: InstanceOwner): AttachedInstance => ({
  id,
  owner,
  status: { id, state: 'running', startedAt: 0, exitCode: null, reason: null, stats: null },
});

test('a restarted server adopts running pods and workers without starting them, stops the instance of a stopped pod, restarts what no longer runs, and removes unclaimed instances after the grace', async () => {
  const clock = new FakeClock(Date.now());
  // ── the first server: pods and a worker, then killed (nothing stopped, no shutdown) ──
  const first = new FakeRuntime();
  const db = await openDatabase({ url: null, dataDir });
  const services = await createServices(config, { db, runtime: first, clock, logger: silent });
  const key = (await bootstrapAdmin(services))!;
  const app = await buildApp(services, { logger: false });
  await services.podController.start();
  await services.autoscaler.start({ loop: false });
  const accountId = (await services.accounts.authenticate(key))!.accountId;
  const create = async (name: string) => {
    const res = await app.inject({
      method: 'POST',
      url: '/v2/pods',
      headers: { authorization: `Bearer ${key}` },
      payload: { name, image: 'ubuntu:22.04', gpu: { id: GPU } },
    });
    assert.equal(res.statusCode, 201, res.body);
    const pod = json(res);
    await services.podController.idle(pod.id);
    return pod.id as string;
  };
  const adopted = await create('adopted');
  const stopped = await create('stopped');
  const vanished = await create('vanished');
  const terminated = await create('terminated');
  for (const [id, action] of [
    [stopped, 'stop'],
    [terminated, 'terminate'],
  ] as const)
    assert.ok(
      (
        await app.inject({
          method: 'POST',
          url: `/v2/pods/${id}/action`,
          headers: { authorization: `Bearer ${key}` },
          payload: { action },
        })
      ).statusCode < 300,
    );
  const allocation = services.inventory.allocationOf(adopted);
  const template = await services.templates.create(accountId, {
    name: 'worker',
    imageName: 'my-worker:dev',
    isServerless: true,
  });
  const endpoint = await services.endpoints.create(accountId, {
    name: 'warm',
    templateId: template.id,
    gpuIds: 'ADA_24',
    workersMin: 1,
    workersMax: 1,
  });
  await services.autoscaler.tick(clock.now());
  const [worker] = services.autoscaler.workerIds(endpoint.id);
  const workerKey = first.specs.get(worker!)!.platformEnv.RUNPOD_AI_API_KEY!;
  await app.close();
  await services.podController.stop();
  await db.close();

  // ── the second server: the engine still runs what the first one left ──
  clock.advance(5_000);
  const runtime = new FakeRuntime();
  const pod: InstanceOwner = { kind: 'pod', accountId };
  runtime.attached = [
    live(adopted, pod),
    live(stopped, pod),
    live(terminated, pod),
    live('stray', pod),
    live(worker!, { kind: 'worker', accountId, endpointId: endpoint.id }),
  ];
  second = await startServer(config, { runtime, clock, logger: silent, print: () => {} });
  const s = second.services;
  const get = async (id: string) =>
    json(
      await second!.app.inject({ method: 'GET', url: `/v2/pods/${id}`, headers: { authorization: `Bearer ${key}` } }),
    );

  // the running pod is adopted: not started again, RUNNING, its usage interval still open
  await s.podController.idle(adopted);
  assert.equal(runtime.started.includes(adopted), false);
  assert.equal((await get(adopted)).status, 'RUNNING');
  assert.deepEqual(s.inventory.allocationOf(adopted), allocation);
  const usage = await s.podController.store.listUsage(adopted);
  assert.equal(usage.length, 1);
  assert.equal(usage[0]!.endedAt, null);
  // the pod the user stopped: its live instance is stopped, its storage kept
  assert.ok(runtime.stopped.includes(stopped));
  assert.equal(runtime.removed.includes(stopped), false);
  assert.equal((await get(stopped)).status, 'EXITED');
  // the pod whose instance is gone starts again
  await s.podController.idle(vanished);
  assert.ok(runtime.started.includes(vanished));
  assert.equal((await get(vanished)).status, 'RUNNING');
  // the worker is adopted, its key still valid
  assert.deepEqual(s.autoscaler.workerIds(endpoint.id), [worker]);
  assert.equal(runtime.started.includes(worker!), false);
  assert.equal((await s.accounts.authenticate(workerKey))?.accountId, accountId);

  // what nobody claims (a terminated pod's instance, an unknown one) goes after the grace, not before
  assert.deepEqual(await second.orphans.collect(), []);
  clock.advance(GRACE - 1);
  assert.deepEqual(await second.orphans.collect(), []);
  assert.equal(runtime.removed.includes('stray'), false);
  clock.advance(1);
  assert.deepEqual((await second.orphans.collect()).sort(), ['stray', terminated].sort());
  assert.deepEqual(runtime.removed.sort(), ['stray', terminated].sort());
  assert.deepEqual(second.orphans.pending, []);
});
