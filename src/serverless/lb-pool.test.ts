import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../domain/clock.js';
import { LbPool, type LbLease } from './lb-pool.js';

/** A pool whose health checks answer what `health` holds per worker; checks run when the test calls `checkAll`. */
function poolOf() {
  const clock = new FakeClock();
  const health = new Map<string, number | Error>();
  const lines: string[] = [];
  const wanted: string[] = [];
  const pool = new LbPool({
    probe: async (w) => health.get(w.workerId) ?? new Error('nothing listens yet'),
    now: () => clock.now(),
    log: (id, line) => lines.push(`${id} ${line}`),
    wanted: (endpointId) => wanted.push(endpointId),
    logger: { info: () => {}, warn: () => {} },
    healthIntervalMs: 60_000,
  });
  const add = (workerId: string, endpointId = 'ep'): void =>
    pool.add({ workerId, endpointId, accountId: 'acc', port: 80, healthPort: 80, healthPath: '/ping' });
  const check = async (): Promise<void> => {
    pool.checkAll();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
  };
  return { pool, clock, health, lines, wanted, add, check };
}

test('a worker takes requests only once its health path answers 200; 204 and no answer before it keep it initializing', async () => {
  const t = poolOf();
  t.add('w1');
  await t.check();
  assert.equal(t.pool.workerState('w1')!.ready, false, 'nothing listens yet: still starting');
  t.health.set('w1', 204);
  await t.check();
  assert.equal(t.pool.workerState('w1')!.ready, false);
  t.health.set('w1', 200);
  await t.check();
  assert.equal(t.pool.workerState('w1')!.ready, true);
  assert.ok(
    t.lines.some((l) => l.startsWith('w1 health: ready (GET /ping on port 80 answered 200)')),
    t.lines.join('\n'),
  );
  // once ready, anything but 200/204 (or no answer) is unhealthy: no requests
  t.health.set('w1', 500);
  await t.check();
  assert.equal(t.pool.workerState('w1')!.ready, false);
  assert.ok(t.lines.some((l) => l.includes('health: unhealthy')));
  const lease = await t.pool.acquire('ep', { waitMs: 100 });
  assert.equal(lease, null, 'an unhealthy worker takes no request');
  t.pool.close();
});

test('requests go to the ready worker holding the fewest, ties in turn, and a named ready worker first', async () => {
  const t = poolOf();
  for (const id of ['a', 'b', 'c', 'other']) t.health.set(id, 200);
  for (const id of ['a', 'b', 'c']) t.add(id);
  t.add('other', 'ep2');
  await t.check();
  const leases: LbLease[] = [];
  for (let i = 0; i < 3; i++) leases.push((await t.pool.acquire('ep', { waitMs: 100 })) as LbLease);
  assert.deepEqual(leases.map((l) => l.workerId).sort(), ['a', 'b', 'c'], 'one each before any gets a second');
  leases[1]!.release();
  const next = (await t.pool.acquire('ep', { waitMs: 100 })) as LbLease;
  assert.equal(next.workerId, leases[1]!.workerId, 'the one that finished holds the fewest');
  assert.equal(t.pool.inFlight('ep'), 3);
  const named = (await t.pool.acquire('ep', { waitMs: 100, preferred: 'a' })) as LbLease;
  assert.equal(named.workerId, 'a', 'affinity: the named worker although it is busier');
  const elsewhere = (await t.pool.acquire('ep', { waitMs: 100, preferred: 'other' })) as LbLease;
  assert.notEqual(elsewhere.workerId, 'other', "another endpoint's worker is never taken");
  named.release();
  named.release();
  assert.equal(t.pool.inFlight('ep'), 4, 'a release counts once');
  t.pool.close();
});

test('a request with no ready worker waits, asks for a worker at once, and goes as soon as one is ready', async () => {
  const t = poolOf();
  const waiting = t.pool.acquire('ep', { waitMs: 30_000 });
  assert.deepEqual(t.wanted, ['ep'], 'the autoscaler is asked at once');
  assert.equal(t.pool.waiting('ep'), 1);
  t.health.set('w1', 200);
  t.add('w1');
  await t.check();
  const lease = (await waiting) as LbLease;
  assert.equal(lease.workerId, 'w1');
  assert.equal(t.pool.waiting('ep'), 0);
  t.pool.close();
});

test('a wait ends with no worker when its client leaves or the pool closes', async () => {
  const t = poolOf();
  const gone = new AbortController();
  const first = t.pool.acquire('ep', { waitMs: 30_000, signal: gone.signal });
  const second = t.pool.acquire('ep', { waitMs: 30_000 });
  gone.abort();
  assert.equal(await first, null);
  assert.equal(t.pool.waiting('ep'), 1);
  t.pool.close();
  assert.equal(await second, null);
  assert.equal(t.pool.waiting('ep'), 0);
});

test('a removed worker takes no more requests and its listeners are told', async () => {
  const t = poolOf();
  const removed: string[] = [];
  t.pool.onRemove((id) => removed.push(id));
  t.health.set('w1', 200);
  t.add('w1');
  await t.check();
  t.pool.remove('w1');
  t.pool.remove('w1');
  assert.deepEqual(removed, ['w1']);
  assert.equal(t.pool.workerState('w1'), null);
  assert.equal(await t.pool.acquire('ep', { waitMs: 100 }), null);
  t.pool.close();
});

test("strict affinity takes the named worker only: it waits while that one is not ready, and is gone when it is not the endpoint's", async () => {
  const t = poolOf();
  t.health.set('a', 200);
  t.add('a');
  t.add('b');
  t.add('x', 'ep2');
  t.health.set('x', 200);
  await t.check();
  assert.equal(await t.pool.acquire('ep', { waitMs: 100, preferred: 'nobody', strict: true }), 'gone');
  assert.equal(await t.pool.acquire('ep', { waitMs: 100, preferred: 'x', strict: true }), 'gone', "another endpoint's");
  const pinned = t.pool.acquire('ep', { waitMs: 30_000, preferred: 'b', strict: true });
  assert.deepEqual(t.wanted, [], 'a pinned wait asks for no new worker');
  t.health.set('b', 200);
  await t.check();
  assert.equal(((await pinned) as LbLease).workerId, 'b', 'not a, although a was ready all along');
  const lost = t.pool.acquire('ep', { waitMs: 30_000, preferred: 'a', strict: true });
  assert.equal(((await lost) as LbLease).workerId, 'a');
  t.health.set('b', 500);
  await t.check();
  const waitingForB = t.pool.acquire('ep', { waitMs: 30_000, preferred: 'b', strict: true });
  t.pool.remove('b');
  assert.equal(await waitingForB, 'gone', 'the pinned worker stopped while it waited');
  t.pool.close();
});

test('FlashBoot: a frozen worker takes no request; freezing is refused while it holds one or one waits for it by name; a strict-resume request asks for a pass, and the worker thawed is checked at once and takes it', async () => {
  const t = poolOf();
  t.health.set('w1', 200);
  t.add('w1');
  await t.check();
  const held = (await t.pool.acquire('ep', { waitMs: 100 })) as LbLease;
  assert.equal(t.pool.freeze('w1', 'idle'), 'busy', 'it holds a request');
  held.release();
  assert.equal(t.pool.freeze('nobody', 'idle'), 'unknown');
  assert.equal(t.pool.freeze('w1', 'idle'), 'frozen');
  assert.equal(t.pool.workerState('w1')!.ready, false);
  assert.equal(await t.pool.acquire('ep', { waitMs: 100 }), null, 'a frozen worker takes no request');
  assert.equal(await t.pool.acquire('ep', { waitMs: 100, preferred: 'w1', strict: true }), 'suspended');
  t.wanted.length = 0;
  const pending = t.pool.acquire('ep', { waitMs: 30_000, preferred: 'w1', strict: true, resume: true });
  assert.deepEqual(t.wanted, ['ep'], 'strict-resume asks the autoscaler for a pass at once');
  assert.equal(t.pool.resumeWanted('w1'), 1);
  t.pool.thaw('w1', 'resumed');
  assert.equal(t.pool.freeze('w1', 'idle'), 'busy', 'a request waits for it by name');
  await t.check();
  const lease = await pending;
  assert.equal((lease as LbLease).workerId, 'w1');
  assert.ok(
    t.lines.some((l) => l.startsWith('w1 health: suspended (idle)')),
    t.lines.join('\n'),
  );
  assert.ok(
    t.lines.some((l) => l.startsWith('w1 health: initializing (resumed)')),
    t.lines.join('\n'),
  );
  t.pool.close();
});
