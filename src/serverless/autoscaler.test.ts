import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../test/support/harness.js';
import { FakeClock } from '../domain/clock.js';
import { FakeRuntime } from '../../test/support/fake-runtime/fake-runtime.js';
import pino, { type Logger } from 'pino';
import type { Endpoint } from '../domain/endpoint.js';
import { Autoscaler } from './autoscaler.js';
import { Inventory } from '../inventory/inventory.js';
import type { AttachedInstance } from '../runtime/runtime.js';
import { AutoscalerStore } from '../store/autoscaler-store.js';

const S = 1_000;
/** Lets the autoscaler's reaction to an instance event (a few store calls) run. */
async function until(what: string, cond: () => Promise<boolean> | boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await cond()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

describe('Autoscaler', () => {
  let t: TestApp;
  let clock: FakeClock;
  let runtime: FakeRuntime;
  let autoscaler: Autoscaler;
  let accountId: string;
  let templateId: string;

  const endpoint = (patch: Record<string, unknown> = {}): Promise<Endpoint> =>
    t.services.endpoints.create(accountId, {
      name: `ep-${Math.random()}`,
      templateId,
      gpuIds: 'ADA_24',
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 5,
      ...patch,
    });
  /** An endpoint of an account of its own: no GPU quota shared with the other tests' workers. */
  const endpointOfNewAccount = async (patch: Record<string, unknown> = {}): Promise<Endpoint> => {
    const owner = (await t.newAccount()).accountId;
    const template = await t.services.templates.create(owner, {
      name: 'worker',
      imageName: 'my-worker:dev',
      isServerless: true,
    });
    return t.services.endpoints.create(owner, {
      name: `ep-${Math.random()}`,
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 5,
      ...patch,
    });
  };
  const rows = (endpointId: string) =>
    t.services.db.kysely.selectFrom('workers').selectAll().where('endpoint_id', '=', endpointId).execute();

  before(async () => {
    clock = new FakeClock();
    runtime = new FakeRuntime();
    t = await createTestApp({
      clock,
      runtime,
      file: { serverless: { autoscaler: { crashThreshold: 2, backoffBaseMs: 60_000 } } },
    });
    autoscaler = t.services.autoscaler;
    await autoscaler.start({ loop: false });
    accountId = (await t.newAccount()).accountId;
    const template = await t.services.templates.create(accountId, {
      name: 'worker',
      imageName: 'my-worker:dev',
      isServerless: true,
      env: { FROM_TEMPLATE: '1', SHARED: 'template' },
    });
    templateId = template.id;
  });
  after(async () => {
    await autoscaler?.stop();
    await t?.close();
  });
  beforeEach(() => {
    runtime.failStart = false;
    runtime.unavailableReason = null;
  });

  test('a queued job on an endpoint without workers launches one, placed on a GPU of its pool, with the worker environment', async () => {
    const ep = await endpoint({ env: { SHARED: 'endpoint' }, locations: 'US' });
    await t.services.jobs.client.submit(ep.id, accountId, { input: {} });
    await autoscaler.tick(clock.now());
    const [row, ...more] = await rows(ep.id);
    assert.equal(more.length, 0);
    assert.equal(row?.status, 'initializing');
    const spec = runtime.specs.get(row.id)!;
    assert.equal(spec.image, 'my-worker:dev');
    assert.equal(spec.hostId, row?.host_id);
    assert.equal(spec.gpuIndices.length, 1);
    assert.equal(
      t.services.inventory.host(spec.hostId)?.gpuTypeId,
      'NVIDIA GeForce RTX 4090',
      'ADA_24 expands to its GPU types',
    );
    assert.equal(spec.env.FROM_TEMPLATE, '1');
    assert.equal(spec.env.SHARED, 'endpoint', 'endpoint env overrides the template');
    assert.equal(spec.platformEnv.RUNPOD_POD_ID, row?.id);
    assert.match(spec.platformEnv.RUNPOD_WEBHOOK_GET_JOB ?? '', new RegExp(`/v2/${ep.id}/job-take/\\$ID\\?gpu=`));
    const principal = await t.services.accounts.authenticate(spec.platformEnv.RUNPOD_AI_API_KEY!);
    assert.equal(principal?.accountId, accountId, 'the worker key belongs to the endpoint account');
    await autoscaler.tick(clock.now());
    assert.equal((await rows(ep.id)).length, 1, 'a starting worker is not doubled on the next pass');
  });

  test('a GPU worker gets the vCPUs and memory its GPU type comes with on its host: its limits, RUNPOD_CPU_COUNT, its reservation and its stored allocation', async () => {
    const ep = await endpointOfNewAccount({ gpuIds: 'AMPERE_48' }); // a pool no other test uses
    await t.services.jobs.client.submit(ep.id, ep.accountId, { input: {} });
    await autoscaler.tick(clock.now());
    const [row] = await rows(ep.id);
    const spec = runtime.specs.get(row!.id)!;
    // demo-ro-a6000-a: 48 vCPUs and 256 GB for 4 GPUs (12 and 64 each); an RTX A6000 comes with 8 and 64
    assert.equal(t.services.inventory.host(spec.hostId)?.id, 'demo-ro-a6000-a');
    assert.deepEqual([spec.vcpus, spec.memoryGb, spec.platformEnv.RUNPOD_CPU_COUNT], [8, 64, '8']);
    const held = t.services.inventory.allocationOf(row!.id);
    assert.deepEqual([held?.vcpus, held?.memoryGb], [8, 64]);
    const stored = JSON.parse(String(row!.allocation)) as { vcpus: number; memoryGb: number };
    assert.deepEqual([stored.vcpus, stored.memoryGb], [8, 64], 'a restarted server re-reserves it as it was');
  });

  test('an idle worker is stopped after idleTimeout: instance, reservation and row', async () => {
    const ep = await endpoint({ idleTimeout: 5 });
    await t.services.jobs.client.submit(ep.id, accountId, { input: {} });
    await autoscaler.tick(clock.now());
    const [row] = await rows(ep.id);
    const id = row!.id;
    const [taken] = await t.services.jobs.worker.take(ep.id, id);
    await t.services.workers.seen(ep.id, id, true);
    await autoscaler.tick(clock.now());
    await t.services.jobs.worker.complete(id, taken!.id, { output: 1 });
    await t.services.workers.seen(ep.id, id, false);
    clock.advance(4 * S);
    await autoscaler.tick(clock.now());
    assert.ok(runtime.specs.has(id), 'idle for less than idleTimeout: kept');
    clock.advance(1 * S);
    await autoscaler.tick(clock.now());
    assert.equal(runtime.specs.has(id), false);
    assert.equal(t.services.inventory.allocationOf(id), undefined);
    assert.equal((await rows(ep.id))[0]?.status, 'dead');
    assert.deepEqual(autoscaler.workerIds(ep.id), []);
  });

  test('workersMin workers are kept warm and never idled out', async () => {
    const ep = await endpoint({ workersMin: 1 });
    await autoscaler.tick(clock.now());
    const [row] = await rows(ep.id);
    await t.services.workers.seen(ep.id, row!.id, false);
    clock.advance(600 * S);
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), [row!.id]);
    await t.services.endpoints.update(accountId, ep.id, { workersMin: 0 });
    clock.advance(5 * S);
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), []);
  });

  test('with no capacity the worker is reported throttled with the reason, and nothing is recorded', async () => {
    const ep = await endpoint({ gpuCount: 8, locations: 'CZ' });
    await t.services.jobs.client.submit(ep.id, accountId, { input: {} });
    await autoscaler.tick(clock.now());
    assert.deepEqual(await rows(ep.id), []);
    const health = autoscaler.health(ep.id);
    assert.equal(health.throttled, 1);
    assert.ok(health.capacityError);
    assert.equal(health.unhealthy, 0);
  });

  test('a worker that exits on its own loses its job back to the queue and counts a crash; repeated crashes back the endpoint off', async () => {
    const ep = await endpoint({ workersMax: 1 });
    const { id: jobId } = await t.services.jobs.client.submit(ep.id, accountId, { input: {} });
    await autoscaler.tick(clock.now());
    const first = (await rows(ep.id))[0]!.id;
    await t.services.jobs.worker.take(ep.id, first);
    runtime.crash(first);
    await until(
      'the lost worker is cleaned up',
      () => autoscaler.workerIds(ep.id).length === 0 && t.services.inventory.allocationOf(first) === undefined,
    );
    await until(
      'its job is requeued',
      async () => (await t.services.jobs.client.status(accountId, ep.id, jobId)).status === 'IN_QUEUE',
    );
    assert.equal((await t.services.jobs.client.status(accountId, ep.id, jobId)).status, 'IN_QUEUE');
    assert.equal(autoscaler.health(ep.id).crashes, 1);
    clock.advance(S);
    await autoscaler.tick(clock.now());
    const second = autoscaler.workerIds(ep.id)[0]!;
    assert.notEqual(second, first, 'replaced');
    runtime.crash(second);
    await until('the second crash is counted', () => autoscaler.health(ep.id).crashes === 2);
    const health = autoscaler.health(ep.id);
    assert.equal(health.crashes, 2);
    assert.equal(health.backoffUntil, clock.now() + 60 * S);
    assert.match(health.lastCrash ?? '', /code 1/);
    for (let i = 0; i < 10; i++) {
      clock.advance(S);
      await autoscaler.tick(clock.now());
    }
    assert.deepEqual(autoscaler.workerIds(ep.id), [], 'no start while backed off');
    assert.equal(autoscaler.health(ep.id).unhealthy, 1);
    clock.advance(60 * S);
    await autoscaler.tick(clock.now());
    assert.equal(autoscaler.workerIds(ep.id).length, 1, 'tried again once the back-off ends');
  });

  test('a worker that asked to be recycled (stopPod) is stopped once idle and replaced', async () => {
    const ep = await endpoint({ workersMin: 1 });
    await autoscaler.tick(clock.now());
    const [old] = autoscaler.workerIds(ep.id);
    await t.services.workers.seen(ep.id, old!, false);
    t.services.workers.requestRecycle(ep.id, old!);
    await autoscaler.tick(clock.now());
    const now = autoscaler.workerIds(ep.id);
    assert.equal(now.length, 1);
    assert.notEqual(now[0], old);
    assert.equal(runtime.specs.has(old!), false);
  });

  test('after a restart, rows of launched workers whose instance is gone are marked dead and their jobs requeued', async () => {
    const ep = await endpoint();
    const { id: jobId } = await t.services.jobs.client.submit(ep.id, accountId, { input: {} });
    await t.services.db.kysely
      .insertInto('workers')
      .values({
        id: 'ghost',
        endpoint_id: ep.id,
        status: 'running',
        host_id: 'demo-tx-4090-a',
        last_ping_at: clock.now(),
        created_at: clock.now(),
        updated_at: clock.now(),
      })
      .execute();
    await t.services.jobs.worker.take(ep.id, 'ghost');
    const { cleaned } = await autoscaler.recover();
    assert.ok(cleaned.includes('ghost'));
    assert.equal((await t.services.jobs.client.status(accountId, ep.id, jobId)).status, 'IN_QUEUE');
    const ghost = await t.services.db.kysely
      .selectFrom('workers')
      .select('status')
      .where('id', '=', 'ghost')
      .executeTakeFirst();
    assert.equal(ghost?.status, 'dead');
  });

  test('a worker that cannot be launched at all counts as a crash, not as a hot loop', async () => {
    runtime.failStart = true;
    const ep = await endpoint({ workersMax: 1 });
    await t.services.jobs.client.submit(ep.id, accountId, { input: {} });
    for (let i = 0; i < 20; i++) {
      await autoscaler.tick(clock.now());
      clock.advance(S);
    }
    const health = autoscaler.health(ep.id);
    assert.equal(health.crashes, 2);
    assert.match(health.lastCrash ?? '', /image not found/);
    assert.equal((await rows(ep.id)).length, 2, 'two attempts, then backed off');
  });

  test('a worker of a template with registry credentials is started with them, for the runtime to pull its image', async () => {
    const registry = await t.services.registries.create(accountId, {
      name: `reg-${Math.random()}`,
      username: 'puller',
      password: 's3cret',
    });
    const template = await t.services.templates.create(accountId, {
      name: `private-${Math.random()}`,
      imageName: 'registry.example/private:1',
      isServerless: true,
      containerRegistryAuthId: registry.id,
    });
    const ep = await t.services.endpoints.create(accountId, {
      name: `ep-${Math.random()}`,
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMax: 1,
    });
    await t.services.jobs.client.submit(ep.id, accountId, { input: {} });
    await autoscaler.tick(clock.now());
    const [row] = await rows(ep.id);
    assert.deepEqual(runtime.specs.get(row!.id)?.registryAuth, { username: 'puller', password: 's3cret' });
    const spec = runtime.specs.get(row!.id)!;
    assert.equal(
      JSON.stringify([spec.env, spec.platformEnv]).includes('s3cret'),
      false,
      'the password is not in the environment',
    );
  });

  test('while the runtime is unavailable no worker is launched or stopped and nothing counts as a crash; once it is back the wanted workers launch', async () => {
    const idle = await endpointOfNewAccount({ idleTimeout: 5 });
    await t.services.jobs.client.submit(idle.id, idle.accountId, { input: {} });
    await autoscaler.tick(clock.now());
    const [kept] = autoscaler.workerIds(idle.id);
    const [taken] = await t.services.jobs.worker.take(idle.id, kept!);
    await t.services.workers.seen(idle.id, kept!, true);
    await autoscaler.tick(clock.now());
    await t.services.jobs.worker.complete(kept!, taken!.id, { output: 1 });
    await t.services.workers.seen(idle.id, kept!, false);
    const ep = await endpointOfNewAccount({ workersMin: 1 });
    const started = runtime.started.length;
    runtime.unavailableReason = 'the Docker Engine at unix:///var/run/docker.sock is unreachable';
    for (let i = 0; i < 5; i++) {
      clock.advance(10 * S);
      await autoscaler.tick(clock.now());
    }
    assert.equal(runtime.started.length, started, 'nothing launched');
    assert.deepEqual(await rows(ep.id), []);
    const health = autoscaler.health(ep.id);
    assert.equal(health.crashes, 0);
    assert.equal(health.throttled, 1);
    assert.match(health.capacityError ?? '', /unreachable/);
    assert.deepEqual(
      autoscaler.workerIds(idle.id),
      [kept],
      'an idle worker is not stopped while its instance cannot be removed',
    );
    assert.equal(runtime.removed.includes(kept!), false);
    runtime.unavailableReason = null;
    await autoscaler.tick(clock.now());
    assert.equal((await rows(ep.id)).length, 1, 'launched once the runtime is back');
    assert.deepEqual(autoscaler.workerIds(idle.id), [], 'and the idle worker stopped');
    assert.ok(runtime.removed.includes(kept!), 'a stopped worker keeps nothing: its instance is removed');
    assert.equal(autoscaler.health(ep.id).capacityError, null);
    await t.services.endpoints.update(ep.accountId, ep.id, { workersMin: 0, workersMax: 0 });
    await autoscaler.tick(clock.now());
  });

  test('a worker whose instance the runtime reports unknown is left alone: not stopped, not counted as crashed', async () => {
    const ep = await endpointOfNewAccount({ workersMin: 1 });
    await autoscaler.tick(clock.now());
    const [id] = autoscaler.workerIds(ep.id);
    runtime.report(id!, 'unknown', 'the Docker Engine is unreachable');
    await autoscaler.tick(clock.now());
    runtime.report(id!, 'running');
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), [id]);
    assert.equal(runtime.removed.includes(id!), false);
    assert.equal(autoscaler.health(ep.id).crashes, 0);
    await t.services.endpoints.update(ep.accountId, ep.id, { workersMin: 0, workersMax: 0 });
    await autoscaler.tick(clock.now());
    assert.ok(runtime.removed.includes(id!));
  });

  /** What the fleet does when a host goes away: out of placement, its instances' host away. */
  const hostAway = (hostId: string, reason: string) => {
    runtime.hostsAway.set(hostId, reason);
    t.services.inventory.setAvailable(hostId, false);
  };
  const hostBack = (hostId: string) => {
    runtime.hostsAway.delete(hostId);
    t.services.inventory.setAvailable(hostId, true);
  };
  const hostOfWorker = (id: string) => t.services.inventory.allocationOf(id)?.hostId ?? runtime.specs.get(id)?.hostId;

  test('a worker not heard from yet whose host goes away is stopped at once, not counted as a crash, and replaced on another host in the same pass', async () => {
    // AMPERE_24: GPU types on two hosts
    const ep = await endpointOfNewAccount({ workersMin: 1, gpuIds: 'AMPERE_24' });
    await autoscaler.tick(clock.now());
    const [first] = autoscaler.workerIds(ep.id);
    const hostId = hostOfWorker(first!)!;
    hostAway(hostId, `host ${hostId} unreachable since 2026-01-01T00:00:00.000Z`);
    try {
      clock.advance(S);
      await autoscaler.tick(clock.now());
      assert.ok(runtime.removed.includes(first!), 'its instance is removed (queued for the host, in a fleet)');
      const replacements = autoscaler.workerIds(ep.id);
      assert.equal(replacements.length, 1, 'replaced in the same pass, not after the start timeout');
      assert.notEqual(replacements[0], first);
      assert.ok(hostOfWorker(replacements[0]!), 'the replacement holds a place');
      assert.notEqual(hostOfWorker(replacements[0]!), hostId, 'the replacement is placed elsewhere');
      assert.equal((await rows(ep.id)).find((r) => r.id === first)?.status, 'dead');
      assert.equal(autoscaler.health(ep.id).crashes, 0);
    } finally {
      hostBack(hostId);
      await t.services.endpoints.update(ep.accountId, ep.id, { workersMin: 0, workersMax: 0 });
      await autoscaler.tick(clock.now());
    }
  });

  test('a worker heard from whose host goes away keeps serving while it pings; once it is lost it no longer counts and a replacement is placed elsewhere', async () => {
    const ep = await endpointOfNewAccount({ workersMin: 1, gpuIds: 'AMPERE_24' });
    await autoscaler.tick(clock.now());
    const [first] = autoscaler.workerIds(ep.id);
    await t.services.workers.seen(ep.id, first!, false);
    const hostId = hostOfWorker(first!)!;
    hostAway(hostId, `host ${hostId} unreachable since 2026-01-01T00:00:00.000Z`);
    try {
      clock.advance(S);
      await autoscaler.tick(clock.now());
      assert.deepEqual(autoscaler.workerIds(ep.id), [first], 'its container may run on with its agent away');
      assert.equal(runtime.removed.includes(first!), false);
      // Its pings stop: the registry declares it lost (the timekeeper's sweep).
      await t.services.workers.markDead(ep.id, [first!], clock.now());
      await autoscaler.tick(clock.now());
      const live = (await rows(ep.id)).filter((r) => r.status !== 'dead');
      assert.equal(live.length, 1, JSON.stringify(await rows(ep.id)));
      assert.notEqual(live[0]!.id, first);
      assert.notEqual(live[0]!.host_id, hostId, 'the replacement is placed elsewhere');
      assert.equal(autoscaler.health(ep.id).crashes, 0);
    } finally {
      hostBack(hostId);
      await t.services.endpoints.update(ep.accountId, ep.id, { workersMin: 0, workersMax: 0 });
      await autoscaler.tick(clock.now());
    }
  });

  test('a worker whose host is revoked ends with its instance: stopped, its key revoked and its job requeued, and no crash is counted', async () => {
    const ep = await endpointOfNewAccount({ workersMax: 1 });
    const { id: jobId } = await t.services.jobs.client.submit(ep.id, ep.accountId, { input: {} });
    await autoscaler.tick(clock.now());
    const [worker] = autoscaler.workerIds(ep.id);
    const key = runtime.specs.get(worker!)!.platformEnv.RUNPOD_AI_API_KEY!;
    await t.services.jobs.worker.take(ep.id, worker!);
    const hostId = hostOfWorker(worker!)!;
    hostAway(hostId, `host ${hostId} was revoked at 2026-01-01T00:00:00.000Z`);
    try {
      // The fleet runtime ends a revoked host's instances, saying why.
      runtime.crash(worker!, 0, `host ${hostId} was revoked at 2026-01-01T00:00:00.000Z`);
      await until('the worker is cleaned up', () => autoscaler.workerIds(ep.id).length === 0);
      await until(
        'its job is requeued',
        async () => (await t.services.jobs.client.status(ep.accountId, ep.id, jobId)).status === 'IN_QUEUE',
      );
      assert.equal(await t.services.accounts.authenticate(key), null, 'its key no longer works');
      assert.equal(autoscaler.health(ep.id).crashes, 0);
    } finally {
      hostBack(hostId);
      await t.services.endpoints.update(ep.accountId, ep.id, { workersMin: 0, workersMax: 0 });
      await autoscaler.tick(clock.now());
    }
  });

  test('a long queue launches workersMax workers under REQUEST_COUNT, the pass counting only what can change the decision', async () => {
    const ep = await endpoint({ scalerType: 'REQUEST_COUNT', scalerValue: 2, workersMax: 2 });
    for (let i = 0; i < 40; i++) await t.services.jobs.client.submit(ep.id, accountId, { input: { i } });
    const counted: number[] = [];
    const store = autoscaler.store;
    const urgentQueued = store.urgentQueued.bind(store);
    store.urgentQueued = async (id, cap, tx) => {
      if (id === ep.id) counted.push(cap);
      return urgentQueued(id, cap, tx);
    };
    try {
      await autoscaler.tick(clock.now());
    } finally {
      store.urgentQueued = urgentQueued;
    }
    assert.equal((await rows(ep.id)).length, 2);
    assert.deepEqual(counted, [5], 'workersMax × scalerValue + 1');
  });

  test('a launched worker records the endpoint version it was started with, its GPUs, placement and image', async () => {
    const created = await endpointOfNewAccount({ gpuIds: 'AMPERE_80' }); // pools the tests above leave free
    const ep = await t.services.endpoints.update(created.accountId, created.id, { env: { RELEASE: '2' } });
    assert.equal(ep.version, 2);
    await t.services.jobs.client.submit(ep.id, ep.accountId, { input: {} });
    await autoscaler.tick(clock.now());
    const [w, ...more] = await t.services.endpoints.workers(ep.accountId, ep.id);
    assert.equal(more.length, 0);
    const host = t.services.inventory.host(runtime.specs.get(w!.id)!.hostId);
    assert.ok(host?.gpuTypeId);
    assert.deepEqual(
      [w!.endpointVersion, w!.gpuCount, w!.gpuTypeId, w!.dataCenterId, w!.image],
      [2, 1, host?.gpuTypeId, host?.dataCenterId, 'my-worker:dev'],
    );
  });
});

describe('Autoscaler wake-ups', () => {
  test('after a quiet spell a submission wakes a pass at once; a flood within the nudge gap wakes no more', async () => {
    const clock = new FakeClock();
    const t = await createTestApp({
      clock,
      runtime: new FakeRuntime(),
      file: { serverless: { autoscaler: { intervalMs: 600_000, nudgeGapMs: 100 } } },
    });
    const autoscaler = t.services.autoscaler;
    const store = autoscaler.store;
    const launchedWorkers = store.launchedWorkers.bind(store);
    let passes = 0;
    store.launchedWorkers = async (tx) => {
      passes++;
      return launchedWorkers(tx);
    };
    const turns = async () => {
      for (let i = 0; i < 100; i++) await new Promise((r) => setImmediate(r));
    };
    try {
      await autoscaler.start();
      // The start-up pass runs on a real 0 ms timer, which a hundred event-loop turns may outrun.
      await until('the start-up pass', () => passes === 1);
      await turns();
      clock.advance(101);
      passes = 0;
      for (let i = 0; i < 1000; i++) autoscaler.nudge();
      await until('the woken pass', () => passes === 1);
      for (let i = 0; i < 1000; i++) autoscaler.nudge();
      await turns();
      assert.equal(passes, 1, 'nudges within the gap wait for it');
      clock.advance(100);
      autoscaler.nudge();
      await until('the pass after the gap', () => passes === 2);
    } finally {
      store.launchedWorkers = launchedWorkers;
      await autoscaler.stop();
      await t.close();
    }
  });
});

describe('Autoscaler after a restart', () => {
  let t: TestApp;
  let clock: FakeClock;
  let runtime: FakeRuntime;
  const silent = pino({ level: 'silent' });
  const running = (id: string) => ({
    id,
    state: 'running' as const,
    startedAt: 0,
    exitCode: null,
    reason: null,
    stats: null,
  });

  before(async () => {
    clock = new FakeClock();
    runtime = new FakeRuntime();
    t = await createTestApp({ clock, runtime });
    await t.services.autoscaler.start({ loop: false });
  });
  after(async () => {
    await t?.services.autoscaler.stop();
    await t?.close();
  });

  /** An endpoint of a new account, and its launched workers (the first server's). */
  async function launched(
    workers: number,
    type: 'QB' | 'LB' = 'QB',
  ): Promise<{ accountId: string; ep: Endpoint; ids: string[] }> {
    const { accountId } = await t.newAccount();
    const template = await t.services.templates.create(accountId, {
      name: 'worker',
      imageName: 'my-worker:dev',
      isServerless: true,
    });
    const ep = await t.services.endpoints.create(accountId, {
      name: `ep-${Math.random()}`,
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMin: workers,
      workersMax: workers,
      ...(type === 'LB' ? { type, scalerType: 'REQUEST_COUNT' as const, scalerValue: 4 } : {}),
    });
    await t.services.autoscaler.tick(clock.now());
    const ids = t.services.autoscaler.workerIds(ep.id);
    assert.equal(ids.length, workers);
    // The first server now dies (kill -9): it stops nothing, and no longer scales this endpoint.
    await t.services.endpoints.update(accountId, ep.id, { workersMin: 0, workersMax: 0 });
    return { accountId, ep, ids };
  }

  /** A second server over the same database: a fresh inventory, a runtime that finds `attached`. */
  function restarted(attached: AttachedInstance[], logger: Pick<Logger, 'info' | 'warn' | 'error' | 'debug'> = silent) {
    const s = t.services;
    const runtime = new FakeRuntime();
    runtime.attached = attached;
    const inventory = new Inventory({ hosts: t.config.fleet, catalog: t.config.catalog });
    const autoscaler = new Autoscaler({
      store: new AutoscalerStore(s.db),
      clock,
      runtime,
      inventory,
      jobs: s.jobs,
      workers: s.workers,
      endpoints: s.endpoints,
      accounts: s.accounts,
      logger,
      config: { catalog: t.config.catalog, publicUrl: 'http://127.0.0.1:1' },
    });
    return { runtime, inventory, autoscaler };
  }

  const statusOf = async (id: string) =>
    (await t.services.db.kysely.selectFrom('workers').select('status').where('id', '=', id).executeTakeFirst())?.status;

  test('a worker whose row, key and container survived the server is adopted: not started again, its key valid, its allocation reserved again', async () => {
    const { accountId, ep, ids } = await launched(1);
    const id = ids[0]!;
    const key = runtime.specs.get(id)!.platformEnv.RUNPOD_AI_API_KEY!;
    const allocation = t.services.inventory.allocationOf(id);
    await t.services.endpoints.update(accountId, ep.id, { workersMin: 1, workersMax: 1 });
    const next = restarted([{ id, owner: { kind: 'worker', accountId, endpointId: ep.id }, status: running(id) }]);
    try {
      const { adopted, cleaned } = await next.autoscaler.adopt(await next.runtime.attach());
      assert.deepEqual(adopted, [id]);
      assert.equal(cleaned.includes(id), false);
      assert.deepEqual(next.inventory.allocationOf(id), allocation);
      assert.equal((await t.services.accounts.authenticate(key))?.accountId, accountId, 'its key is still valid');
      await next.autoscaler.start({ loop: false });
      await next.autoscaler.tick(clock.now());
      assert.deepEqual(next.runtime.started, [], 'workersMin is met by the adopted worker');
      assert.deepEqual(next.autoscaler.workerIds(ep.id), [id]);
      assert.deepEqual(next.runtime.removed, []);
      assert.notEqual(await statusOf(id), 'dead');
    } finally {
      await t.services.endpoints.update(accountId, ep.id, { workersMin: 0, workersMax: 0 });
      await next.autoscaler.stop();
    }
    assert.deepEqual(next.runtime.removed, [id], 'a stopped worker is removed');
  });

  test('a load-balancing worker adopted after a restart holds its host ports again, so no later launch is given them', async () => {
    const { accountId, ep, ids } = await launched(1, 'LB');
    const id = ids[0]!;
    const allocation = t.services.inventory.allocationOf(id);
    assert.ok(allocation && allocation.publicPorts.length > 0, 'a load-balancing worker publishes its PORT');
    const next = restarted([{ id, owner: { kind: 'worker', accountId, endpointId: ep.id }, status: running(id) }]);
    try {
      const { adopted } = await next.autoscaler.adopt(await next.runtime.attach());
      assert.deepEqual(adopted, [id]);
      assert.deepEqual(next.inventory.allocationOf(id)?.publicPorts, allocation.publicPorts);
    } finally {
      await next.autoscaler.stop();
    }
  });

  test('a worker whose key was revoked, whose container is stopped, or whose row predates allocations is removed, its row dead and its job requeued', async () => {
    const { accountId, ep, ids } = await launched(3);
    const [revoked, stopped, old] = ids as [string, string, string];
    await t.services.accounts.revokeKey((await t.services.accounts.liveWorkerKeyId(ep.id, revoked))!);
    await t.services.db.kysely.updateTable('workers').set({ allocation: null }).where('id', '=', old).execute();
    const { id: jobId } = await t.services.jobs.client.submit(ep.id, accountId, { input: {} });
    await t.services.jobs.worker.take(ep.id, old);
    const owner = { kind: 'worker' as const, accountId, endpointId: ep.id };
    const next = restarted([
      { id: revoked, owner, status: running(revoked) },
      { id: stopped, owner, status: null },
      { id: old, owner, status: running(old) },
    ]);
    try {
      const { adopted, cleaned } = await next.autoscaler.adopt(await next.runtime.attach());
      assert.deepEqual(adopted, []);
      for (const id of ids) {
        assert.ok(cleaned.includes(id), id);
        assert.ok(next.runtime.removed.includes(id), id);
        assert.equal(await statusOf(id), 'dead');
        assert.equal(next.inventory.allocationOf(id), undefined);
      }
      assert.equal((await t.services.jobs.client.status(accountId, ep.id, jobId)).status, 'IN_QUEUE');
    } finally {
      await next.autoscaler.stop();
    }
  });

  test('an unavailable runtime is logged once while it lasts, and its return once', async () => {
    const lines: string[] = [];
    const record = (level: string) => (_obj: unknown, msg?: string) =>
      void lines.push(`${level}: ${msg ?? String(_obj)}`);
    const next = restarted([], { info: record('info'), warn: record('warn'), error: record('error'), debug: () => {} });
    await next.autoscaler.start({ loop: false });
    try {
      next.runtime.unavailableReason = 'the Docker Engine is unreachable';
      for (let i = 0; i < 3; i++) await next.autoscaler.tick(clock.now());
      next.runtime.unavailableReason = null;
      for (let i = 0; i < 3; i++) await next.autoscaler.tick(clock.now());
      assert.deepEqual(
        lines.filter((l) => /runtime/.test(l)),
        [
          'warn: the runtime is unavailable: no worker is launched or stopped until it is back',
          'info: the runtime is available again; scaling resumes',
        ],
      );
    } finally {
      await next.autoscaler.stop();
    }
  });
});
