import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../test/support/harness.js';
import { FakeClock } from '../domain/clock.js';
import { FakeRuntime } from '../../test/support/fake-runtime/fake-runtime.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { Autoscaler } from './autoscaler.js';

const S = 1_000;
const MIN = 60 * S;

/**
 * FlashBoot's time rules on the injected clock: idle timeout → suspended, keep time (the
 * endpoint's `flashBootKeepSeconds`, 10 min by default, or `serverless.flashboot.maxKeepMs` if
 * shorter, here 20 min) → removed, demand → resumed before any launch.
 * The fake runtime suspends as the real ones report it (`suspended`, then `running`).
 */
describe('the autoscaler with FlashBoot (injected clock)', () => {
  let t: TestApp;
  let clock: FakeClock;
  let runtime: FakeRuntime;
  let autoscaler: Autoscaler;
  let accountId: string;
  let templateId: string;
  const suspendedIds: string[] = [];

  const endpoint = (patch: Record<string, unknown> = {}): Promise<Endpoint> =>
    t.services.endpoints.create(accountId, {
      name: `ep-${Math.random()}`,
      templateId,
      gpuIds: 'ADA_24',
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 5,
      flashboot: true,
      ...patch,
    });
  const rows = (endpointId: string) =>
    t.services.db.kysely.selectFrom('workers').selectAll().where('endpoint_id', '=', endpointId).execute();

  /** A job through the endpoint's one worker, which then reports itself idle. */
  const runJob = async (ep: Endpoint): Promise<string> => {
    await t.services.jobs.client.submit(ep.id, accountId, { input: {} });
    await autoscaler.tick(clock.now());
    const live = (await rows(ep.id)).filter((r) => r.status !== 'dead');
    assert.equal(live.length, 1, JSON.stringify(live));
    const id = live[0]!.id;
    const [taken] = await t.services.jobs.worker.take(ep.id, id);
    assert.ok(taken, 'the worker takes the job');
    await t.services.workers.seen(ep.id, id, true);
    await autoscaler.tick(clock.now());
    await t.services.jobs.worker.complete(id, taken.id, { output: 1 });
    await t.services.workers.seen(ep.id, id, false);
    return id;
  };

  before(async () => {
    clock = new FakeClock();
    runtime = new FakeRuntime();
    Object.assign(runtime, {
      suspend: async (id: string) => {
        suspendedIds.push(id);
        runtime.report(id, 'suspended');
      },
      resume: async (id: string) => runtime.report(id, 'running'),
    });
    t = await createTestApp({ clock, runtime, file: { serverless: { flashboot: { maxKeepMs: 20 * MIN } } } });
    autoscaler = t.services.autoscaler;
    await autoscaler.start({ loop: false });
    accountId = (await t.newAccount()).accountId;
    templateId = (
      await t.services.templates.create(accountId, { name: 'worker', imageName: 'my-worker:dev', isServerless: true })
    ).id;
  });
  after(async () => {
    await autoscaler?.stop();
    await t?.close();
  });

  test('at its idle timeout the worker is suspended, kept 10 minutes, resumed by the next job before any launch, and removed when its keep time is over', async () => {
    const ep = await endpoint();
    const id = await runJob(ep);
    clock.advance(5 * S);
    await autoscaler.tick(clock.now());
    assert.equal((await rows(ep.id))[0]?.status, 'suspended');
    assert.equal((await runtime.inspect(id))?.state, 'suspended');
    assert.deepEqual(autoscaler.workerIds(ep.id), [id], 'kept, not stopped');
    assert.ok(t.services.inventory.allocationOf(id), 'it holds its allocation');

    clock.advance(9 * MIN);
    await autoscaler.tick(clock.now());
    assert.equal((await rows(ep.id))[0]?.status, 'suspended', 'within its keep time');
    assert.equal((await t.services.workers.expire(clock.now() - 30 * S)).length, 0, 'not lost for its silence');

    const starts = autoscaler.decisions.starts;
    assert.equal(await runJob(ep), id, 'the next job resumed the same worker');
    assert.equal(autoscaler.decisions.starts, starts, 'no launch');
    assert.equal((await runtime.inspect(id))?.state, 'running');

    clock.advance(5 * S);
    await autoscaler.tick(clock.now());
    assert.equal((await rows(ep.id))[0]?.status, 'suspended', 'suspended again at its idle timeout');
    clock.advance(10 * MIN - 1);
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), [id]);
    clock.advance(1);
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), [], 'removed once its keep time is over');
    assert.equal((await rows(ep.id))[0]?.status, 'dead');
    assert.equal(await runtime.inspect(id), null);
    assert.equal(t.services.inventory.allocationOf(id), undefined);
  });

  /** Runs a job, lets the worker idle out into suspension, and answers its id. */
  const suspendOne = async (ep: Endpoint): Promise<string> => {
    const id = await runJob(ep);
    clock.advance(5 * S);
    await autoscaler.tick(clock.now());
    assert.equal((await rows(ep.id))[0]?.status, 'suspended');
    return id;
  };
  /** The pass at `ms` after now minus a millisecond keeps the worker; the pass at `ms` removes it. */
  const removedAt = async (ep: Endpoint, id: string, ms: number) => {
    clock.advance(ms - 1);
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), [id], `kept ${ms - 1} ms`);
    clock.advance(1);
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), [], `removed at ${ms} ms`);
    assert.equal(await runtime.inspect(id), null);
  };

  test("an endpoint's own keep time decides how long its worker stays suspended, to the millisecond", async () => {
    const short = await endpoint({ flashBootKeepSeconds: 90 });
    await removedAt(short, await suspendOne(short), 90 * S);
    const long = await endpoint({ flashBootKeepSeconds: 15 * 60 });
    await removedAt(long, await suspendOne(long), 15 * MIN);
  });

  test("the operator's maxKeepMs bounds a longer stored keep time at use, the stored value kept", async () => {
    const ep = await endpoint({ flashBootKeepSeconds: 3_600 });
    await removedAt(ep, await suspendOne(ep), 20 * MIN);
    assert.equal((await t.services.endpoints.get(accountId, ep.id)).flashBootKeepSeconds, 3_600);
  });

  test('a keep time shortened while a worker is suspended applies at the next pass', async () => {
    const ep = await endpoint({ flashBootKeepSeconds: 600 });
    const id = await suspendOne(ep);
    clock.advance(2 * MIN);
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), [id]);
    await t.services.endpoints.update(accountId, ep.id, { flashBootKeepSeconds: 60 });
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), [], 'suspended 2 min, past its new 1 min');
  });

  test('suspended workers count against workersMax: lowering it under them removes the longest suspended', async () => {
    const ep = await endpoint({ workersMax: 1 });
    const id = await runJob(ep);
    clock.advance(5 * S);
    await autoscaler.tick(clock.now());
    assert.equal((await rows(ep.id))[0]?.status, 'suspended');
    await t.services.endpoints.update(accountId, ep.id, { workersMax: 0 });
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), []);
    assert.equal(await runtime.inspect(id), null);
  });

  test('a suspended worker whose host goes away is lost at the next pass: stopped, its row dead, its allocation freed; another host away changes nothing', async () => {
    const ep = await endpoint({ workersMax: 1 });
    const id = await runJob(ep);
    clock.advance(5 * S);
    await autoscaler.tick(clock.now());
    assert.equal((await rows(ep.id))[0]?.status, 'suspended');
    const hostId = t.services.inventory.allocationOf(id)!.hostId;
    try {
      runtime.hostsAway.set('some-other-host', 'host some-other-host unreachable since then');
      await autoscaler.tick(clock.now());
      assert.equal((await rows(ep.id))[0]?.status, 'suspended', 'another host away changes nothing');
      runtime.hostsAway.set(hostId, `host ${hostId} unreachable since then`);
      await autoscaler.tick(clock.now());
      assert.deepEqual(autoscaler.workerIds(ep.id), [], 'lost, not kept for its keep time');
      assert.equal((await rows(ep.id))[0]?.status, 'dead');
      assert.equal(t.services.inventory.allocationOf(id), undefined);
    } finally {
      runtime.hostsAway.clear();
    }
  });

  test('an endpoint without FlashBoot stops its idle worker; it is never suspended', async () => {
    const ep = await endpoint({ flashboot: false });
    const id = await runJob(ep);
    clock.advance(5 * S);
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), []);
    assert.equal((await rows(ep.id))[0]?.status, 'dead');
    assert.ok(!suspendedIds.includes(id));
  });
});
