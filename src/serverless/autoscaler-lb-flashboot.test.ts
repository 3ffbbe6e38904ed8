import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { createTestApp, type TestApp } from '../../test/support/harness.js';
import { FakeClock } from '../domain/clock.js';
import { FakeRuntime } from '../../test/support/fake-runtime/fake-runtime.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { Autoscaler } from './autoscaler.js';
import type { LbPool } from './lb-pool.js';
import { eventually } from '../../test/support/eventually.js';

const S = 1_000;
const MIN = 60 * S;

/**
 * FlashBoot on a load-balancing endpoint, its time rules on the injected clock: idle timeout →
 * suspended (out of the balancer's ready set, no health check sent), a request with no ready worker
 * → the same worker resumed (no launch), keep time → removed; worker affinity `strict` to a
 * suspended worker is refused, `strict-resume` resumes it, a soft one has it resumed first when
 * no worker is ready. The fake runtime suspends as the real
 * ones report it; a worker's port is a real HTTP server (its health path answers 200), reached
 * through the runtime's `connect`, which counts the connections made per worker.
 */
describe('the autoscaler with FlashBoot on a load-balancing endpoint (injected clock)', () => {
  let t: TestApp;
  let clock: FakeClock;
  let runtime: FakeRuntime;
  let autoscaler: Autoscaler;
  let lb: LbPool;
  let accountId: string;
  let templateId: string;
  let http: Server;
  const connects = new Map<string, number>();

  const endpoint = (patch: Record<string, unknown> = {}): Promise<Endpoint> =>
    t.services.endpoints.create(accountId, {
      name: `ep-${Math.random()}`,
      type: 'LB',
      templateId,
      gpuIds: 'ADA_24',
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 5,
      scalerType: 'REQUEST_COUNT',
      scalerValue: 1,
      flashboot: true,
      ...patch,
    });
  const status = async (id: string) =>
    (await t.services.db.kysely.selectFrom('workers').select('status').where('id', '=', id).executeTakeFirst())?.status;
  /** A request's lease, the autoscaler passing once while it waits. */
  const served = async (ep: Endpoint, options: { preferred?: string; strict?: boolean; resume?: boolean } = {}) => {
    const pending = lb.acquire(ep.id, { waitMs: 60_000, ...options });
    await autoscaler.tick(clock.now());
    const lease = await pending;
    assert.ok(lease && typeof lease === 'object', `a worker took the request (${JSON.stringify(lease)})`);
    return lease;
  };
  /** Lets the health checks a `checkAll` started reach the runtime (none should, for a frozen worker). */
  const checksSent = async (): Promise<void> => {
    lb.checkAll();
    for (let i = 0; i < 4; i++) await new Promise((r) => setImmediate(r));
  };

  before(async () => {
    http = createServer((req, res) => res.writeHead(req.url === '/ping' ? 200 : 404).end());
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    const port = (http.address() as AddressInfo).port;
    clock = new FakeClock();
    runtime = new FakeRuntime();
    Object.assign(runtime, {
      suspend: async (id: string) => runtime.report(id, 'suspended'),
      resume: async (id: string) => runtime.report(id, 'running'),
      connect: async (id: string) => {
        connects.set(id, (connects.get(id) ?? 0) + 1);
        return connect(port, '127.0.0.1');
      },
    });
    t = await createTestApp({ clock, runtime, file: { serverless: { flashboot: { maxKeepMs: 20 * MIN } } } });
    autoscaler = t.services.autoscaler;
    lb = t.services.lb;
    await autoscaler.start({ loop: false });
    accountId = (await t.newAccount()).accountId;
    templateId = (
      await t.services.templates.create(accountId, { name: 'lb-worker', imageName: 'my-lb:dev', isServerless: true })
    ).id;
  });
  after(async () => {
    await autoscaler?.stop();
    await t?.close();
    http?.close();
  });

  test('at its idle timeout the worker is suspended and leaves the ready set, unchecked; the next request resumes the same worker with no launch; its keep time over, it is removed', async () => {
    const ep = await endpoint();
    const first = await served(ep);
    const id = first.workerId;
    first.release();
    await autoscaler.tick(clock.now());
    clock.advance(5 * S - 1);
    await autoscaler.tick(clock.now());
    assert.equal(lb.workerState(id)?.ready, true, 'not idle for its timeout yet');
    clock.advance(1);
    await autoscaler.tick(clock.now());
    assert.equal(await status(id), 'suspended');
    assert.equal((await runtime.inspect(id))?.state, 'suspended');
    assert.deepEqual(autoscaler.workerIds(ep.id), [id], 'kept, not stopped');
    assert.equal(lb.workerState(id)?.ready, false, 'out of the ready set');
    const asked = connects.get(id);
    await checksSent();
    assert.equal(connects.get(id), asked, 'no health check is sent to a frozen worker');

    const starts = autoscaler.decisions.starts;
    const resumes = autoscaler.decisions.resumes;
    clock.advance(9 * MIN);
    const again = await served(ep);
    assert.equal(again.workerId, id, 'the same worker took it');
    assert.equal(autoscaler.decisions.starts, starts, 'no launch');
    assert.equal(autoscaler.decisions.resumes, resumes + 1);
    assert.equal((await runtime.inspect(id))?.state, 'running');
    assert.equal(await status(id), 'idle');
    again.release();

    clock.advance(5 * S);
    await autoscaler.tick(clock.now());
    assert.equal(await status(id), 'suspended', 'suspended again at its idle timeout');
    clock.advance(10 * MIN - 1);
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), [id]);
    clock.advance(1);
    await autoscaler.tick(clock.now());
    assert.deepEqual(autoscaler.workerIds(ep.id), [], 'removed once its keep time is over');
    assert.equal(lb.has(id), false, 'and from the balancer');
    assert.equal(await status(id), 'dead');
    assert.equal(await runtime.inspect(id), null);
  });

  test('a worker holding a request is not suspended, and one a request waits for by name is not either', async () => {
    const ep = await endpoint();
    const lease = await served(ep);
    const id = lease.workerId;
    const busy = await autoscaler.suspendWorker(id);
    assert.equal(busy.ok, false);
    assert.equal(!busy.ok && busy.busy, true, JSON.stringify(busy));
    assert.notEqual(await status(id), 'suspended');
    assert.equal((await runtime.inspect(id))?.state, 'running');
    assert.equal(lb.workerState(id)?.ready, true, 'still in the ready set');
    lease.release();
    // idle past its timeout while a request holds it through another path: the pass keeps it up
    const held = await served(ep);
    clock.advance(5 * S);
    await autoscaler.tick(clock.now());
    assert.notEqual(await status(id), 'suspended', 'busy: not suspended');
    assert.deepEqual(autoscaler.workerIds(ep.id), [id], 'nor stopped');
    held.release();
    assert.ok((await autoscaler.suspendWorker(id)).ok, 'idle again: suspended');
  });

  test('strict affinity to a suspended worker answers "suspended" at once; strict-resume resumes that worker for the request, though another is ready', async () => {
    // two workers up and ready, then none wanted: one is suspended, the other stays ready
    let ep = await endpoint({ workersMin: 2 });
    await autoscaler.tick(clock.now());
    const [one, otherId] = await eventually('two ready workers', async () => {
      const ids = autoscaler.workerIds(ep.id);
      return ids.length === 2 && ids.every((w) => lb.workerState(w)?.ready) ? ids : null;
    });
    const id = one!;
    ep = await t.services.endpoints.update(accountId, ep.id, { workersMin: 0 });
    assert.ok((await autoscaler.suspendWorker(id)).ok);

    assert.equal(await lb.acquire(ep.id, { waitMs: 60_000, preferred: id, strict: true }), 'suspended');
    assert.equal(await status(id), 'suspended', 'strict does not resume it');
    const soft = await served(ep, { preferred: id });
    assert.equal(soft.workerId, otherId, 'soft affinity: the ready worker takes it');
    soft.release();
    assert.equal(await status(id), 'suspended');

    const resumes = autoscaler.decisions.resumes;
    const pending = lb.acquire(ep.id, { waitMs: 60_000, preferred: id, strict: true, resume: true });
    assert.equal(lb.resumeWanted(id), 1, 'the waiting request asks for that worker');
    await autoscaler.tick(clock.now());
    const lease = await pending;
    assert.ok(lease && typeof lease === 'object');
    assert.equal(lease.workerId, id, 'strict-resume: that worker, resumed');
    assert.equal(autoscaler.decisions.resumes, resumes + 1);
    assert.equal(await status(id), 'idle');
    lease.release();
  });

  test('with no worker ready, a request naming a suspended worker softly has that one resumed, not the most recently suspended', async () => {
    let ep = await endpoint({ workersMin: 2 });
    await autoscaler.tick(clock.now());
    const [older, newer] = await eventually('two ready workers', async () => {
      const ids = autoscaler.workerIds(ep.id);
      return ids.length === 2 && ids.every((w) => lb.workerState(w)?.ready) ? ids : null;
    });
    ep = await t.services.endpoints.update(accountId, ep.id, { workersMin: 0 });
    assert.ok((await autoscaler.suspendWorker(older!)).ok);
    clock.advance(S);
    assert.ok((await autoscaler.suspendWorker(newer!)).ok);

    const resumes = autoscaler.decisions.resumes;
    const pending = lb.acquire(ep.id, { waitMs: 60_000, preferred: older! });
    assert.equal(lb.preferredWaiting(older!), 1, 'the waiting request names that worker');
    assert.equal(lb.resumeWanted(older!), 0, 'softly: it does not force a resume');
    await autoscaler.tick(clock.now());
    const lease = await pending;
    assert.ok(lease && typeof lease === 'object');
    assert.equal(lease.workerId, older, 'the worker it names, resumed');
    assert.equal(autoscaler.decisions.resumes, resumes + 1, 'one resume: demand wanted one worker');
    assert.equal(await status(newer!), 'suspended', 'the most recently suspended stays suspended');
    lease.release();
  });

  test('a worker a strict-resume request waits for when its keep time ends is resumed for it, not removed', async () => {
    const ep = await endpoint();
    const first = await served(ep);
    const id = first.workerId;
    first.release();
    assert.ok((await autoscaler.suspendWorker(id)).ok);
    clock.advance(10 * MIN);
    const lease = await served(ep, { preferred: id, strict: true, resume: true });
    assert.equal(lease.workerId, id);
    assert.deepEqual(autoscaler.workerIds(ep.id), [id]);
    lease.release();
  });
});
