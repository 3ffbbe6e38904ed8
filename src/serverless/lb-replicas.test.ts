/**
 * Load balancing across replicas (lb-replicas.ts) over a real LbPool. The store is an in-memory
 * stand-in recording what the replica wrote (the store itself is tested on both dialects in
 * src/store/lb-demand-store.test.ts); health answers are set by the test; time is a FakeClock.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../domain/clock.js';
import type { BalancedWorkerRow, LbEndpointDemand } from '../store/lb-demand-store.js';
import { LbPool } from './lb-pool.js';
import { LbReplicas, ReplicaTraffic } from './lb-replicas.js';

function replicaOf() {
  const clock = new FakeClock();
  const health = new Map<string, number>();
  const probed: Array<{ workerId: string; hostPort: number | undefined }> = [];
  const pool = new LbPool({
    probe: async (w) => {
      probed.push({ workerId: w.workerId, hostPort: w.hostPorts?.[w.healthPort] });
      return health.get(w.workerId) ?? new Error('nothing listens yet');
    },
    now: () => clock.now(),
    log: () => {},
    wanted: () => {},
    logger: { info: () => {}, warn: () => {} },
    healthIntervalMs: 60_000,
  });
  const rows: BalancedWorkerRow[] = [];
  /** What the other replicas last wrote (their demand rows). */
  let othersRows: LbEndpointDemand[] = [];
  const writes: Array<{ at: number; demand: LbEndpointDemand[] }> = [];
  const local = new Set<string>();
  const replicas = new LbReplicas({
    store: {
      balancedWorkers: async () => [...rows],
      publish: async (_replica, demand, at) => void writes.push({ at, demand: structuredClone([...demand]) }),
      read: async () => structuredClone(othersRows),
      prune: async () => 0,
      withdraw: async () => {},
    },
    pool,
    replicaId: 'r1',
    launchedHere: (id) => local.has(id),
    portsOf: async (_account, endpointId) =>
      endpointId === 'gone' ? null : { port: 8000, healthPort: 8001, healthPath: '/ping' },
    now: () => clock.now(),
    logger: { info: () => {}, warn: () => {}, debug: () => {} },
  });
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 4; i++) await new Promise((r) => setImmediate(r));
  };
  const readOthers = (next: LbEndpointDemand[]): void => void (othersRows = next);
  return { clock, health, probed, pool, rows, writes, local, replicas, settle, readOthers };
}

test('a worker another replica launched joins the pool with the host ports its row records, is health-checked here, and leaves when its row goes', async () => {
  const t = replicaOf();
  t.rows.push({ id: 'w1', endpointId: 'ep', accountId: 'acc', publicPorts: [31000, 31001], suspended: false });
  t.rows.push({ id: 'w-gone-endpoint', endpointId: 'gone', accountId: 'acc', publicPorts: [31002], suspended: false });
  t.health.set('w1', 200);
  await t.replicas.refresh();
  await t.settle();
  assert.deepEqual(t.pool.learntIds(), ['w1'], 'the endpoint that is gone brings none');
  assert.equal(t.pool.hostPortOf('w1', 8000), 31000);
  assert.deepEqual(t.probed, [{ workerId: 'w1', hostPort: 31001 }], 'PORT_HEALTH at its own host port');
  assert.equal(t.pool.workerState('w1')?.ready, true);
  const lease = await t.pool.acquire('ep', { waitMs: 10 });
  assert.ok(lease && typeof lease === 'object');
  assert.equal(lease.workerId, 'w1');
  t.rows.length = 0;
  await t.replicas.refresh();
  assert.equal(t.pool.has('w1'), false, 'its row went: it leaves the pool');
  // a read that still listed it (older than its removal) does not bring it back
  t.rows.push({ id: 'w1', endpointId: 'ep', accountId: 'acc', publicPorts: [31000, 31001], suspended: false });
  await t.replicas.refresh();
  assert.equal(t.pool.has('w1'), false);
  lease.release();
});

test("a worker this replica's autoscaler launched is left to the autoscaler: never added or removed from the store's rows", async () => {
  const t = replicaOf();
  t.local.add('mine');
  t.rows.push({ id: 'mine', endpointId: 'ep', accountId: 'acc', publicPorts: [31000], suspended: false });
  await t.replicas.refresh();
  assert.equal(t.pool.has('mine'), false, 'not learnt: the autoscaler adds it itself');
  t.pool.add({
    workerId: 'mine',
    endpointId: 'ep',
    accountId: 'acc',
    port: 8000,
    healthPort: 8000,
    healthPath: '/ping',
  });
  t.rows.length = 0;
  await t.replicas.refresh();
  assert.equal(t.pool.has('mine'), true, 'its row lagging behind does not remove it');
});

test('demand is written when it changes, once per publish however many requests came between, and a standing demand is written again at each heartbeat; no traffic writes nothing', async () => {
  const t = replicaOf();
  let woken = 0;
  t.replicas.onWaiting(() => woken++);
  await t.replicas.publish();
  assert.equal(t.writes.length, 0, 'a replica without traffic writes nothing');
  // one waiting request (no worker yet)
  const waiting = t.pool.acquire('ep', { waitMs: 60_000 });
  await t.replicas.publish();
  assert.deepEqual(t.writes.at(-1)!.demand, [{ endpointId: 'ep', waiting: 1, inFlight: 0, workers: {} }]);
  assert.equal(woken, 1, 'a waiting request written wakes the autoscaler’s replica');
  await t.replicas.publish();
  assert.equal(t.writes.length, 1, 'nothing changed: no write');
  // a worker learnt and ready takes it; many requests come and go between two publishes: one write
  t.rows.push({ id: 'w1', endpointId: 'ep', accountId: 'acc', publicPorts: [31000, 31001], suspended: false });
  t.health.set('w1', 200);
  await t.replicas.refresh();
  await t.settle();
  const held = await waiting;
  assert.ok(held && typeof held === 'object');
  t.clock.advance(100);
  for (let i = 0; i < 50; i++) {
    const l = await t.pool.acquire('ep', { waitMs: 10 });
    assert.ok(l && typeof l === 'object');
    l.release();
  }
  await t.replicas.publish();
  assert.equal(t.writes.length, 2);
  assert.deepEqual(t.writes.at(-1)!.demand, [
    { endpointId: 'ep', waiting: 0, inFlight: 1, workers: { w1: { outstanding: 1, lastActiveAt: t.clock.now() } } },
  ]);
  t.clock.advance(t.replicas.settings.heartbeatMs);
  await t.replicas.publish();
  assert.equal(t.writes.length, 3, 'the heartbeat');
  assert.equal(t.writes.at(-1)!.at, t.clock.now());
  held.release();
  t.rows.length = 0;
  await t.replicas.refresh();
  await t.replicas.publish();
  assert.deepEqual(t.writes.at(-1)!.demand, [], 'its worker gone and nothing held: an empty picture, written once');
  t.clock.advance(t.replicas.settings.heartbeatMs);
  await t.replicas.publish();
  assert.equal(t.writes.length, 4, 'no heartbeat for nothing');
  assert.equal(woken, 1, 'only writes with requests waiting wake it');
});

test("the autoscaler's view adds the other replicas' waiting and held requests, and a worker's requests and last finish there, to its own pool's", async () => {
  const t = replicaOf();
  t.pool.add({ workerId: 'w1', endpointId: 'ep', accountId: 'acc', port: 8000, healthPort: 8000, healthPath: '/ping' });
  const reads: number[] = [];
  const traffic = new ReplicaTraffic({
    pool: t.pool,
    store: {
      read: async (since, except) => {
        reads.push(since);
        assert.equal(except, 'r1', 'its own rows are not read back');
        return [
          { endpointId: 'ep', waiting: 2, inFlight: 3, workers: { w1: { outstanding: 3, lastActiveAt: 5_000 } } },
        ];
      },
      prune: async () => 0,
    },
    replicaId: 'r1',
    ttlMs: 15_000,
  });
  assert.equal(traffic.waiting('ep'), 0, 'before the first read: its own only');
  await traffic.refresh(100_000);
  assert.deepEqual(reads, [85_000], 'rows fresher than the TTL');
  assert.equal(traffic.waiting('ep'), 2);
  assert.equal(traffic.inFlight('ep'), 3);
  assert.equal(traffic.workerState('w1')?.outstanding, 3, 'busy with another replica’s requests: not idle');
  assert.equal(traffic.workerState('w1')?.lastActiveAt, Math.max(5_000, t.pool.workerState('w1')!.lastActiveAt));
  assert.equal(traffic.workerState('unknown'), null);
});

test("FlashBoot: a learnt worker whose row says suspended takes no request and is not checked; a strict-resume request for it is written for the autoscaler's replica; its row resumed, it is checked at once and serves", async () => {
  const t = replicaOf();
  t.rows.push({ id: 'w1', endpointId: 'ep', accountId: 'acc', publicPorts: [31000, 31001], suspended: false });
  t.health.set('w1', 200);
  await t.replicas.refresh();
  await t.settle();
  assert.equal(t.pool.workerState('w1')?.ready, true);
  // a strict request waiting for it (not ready just then) is answered as one sent after the freeze
  t.health.set('w1', 500);
  t.pool.checkAll();
  await t.settle();
  const strictWaiting = t.pool.acquire('ep', { waitMs: 10_000, preferred: 'w1', strict: true });
  t.rows[0] = { ...t.rows[0]!, suspended: true };
  await t.replicas.refresh();
  assert.equal(await strictWaiting, 'suspended');
  t.health.set('w1', 200);
  assert.equal(t.pool.workerState('w1')?.ready, false, 'suspended by the autoscaler of another replica');
  const probes = t.probed.length;
  t.pool.checkAll();
  await t.settle();
  assert.equal(t.probed.length, probes, 'no health check to a frozen worker');
  assert.equal(await t.pool.acquire('ep', { waitMs: 10_000, preferred: 'w1', strict: true }), 'suspended');

  const pending = t.pool.acquire('ep', { waitMs: 10_000, preferred: 'w1', strict: true, resume: true });
  await t.replicas.publish();
  const written = t.writes.at(-1)!.demand;
  assert.equal(written[0]?.waiting, 1);
  assert.equal(written[0]?.workers.w1?.resumeWanted, 1, 'the worker the request waits for, by name');

  t.rows[0] = { ...t.rows[0], suspended: false };
  await t.replicas.refresh();
  await t.settle();
  const lease = await pending;
  assert.ok(lease && typeof lease === 'object');
  assert.equal(lease.workerId, 'w1');
  assert.equal(t.probed.length, probes + 1, 'checked once, at its resumption');
  lease.release();
  // a worker first learnt while suspended is added frozen: not checked
  t.rows.push({ id: 'w2', endpointId: 'ep', accountId: 'acc', publicPorts: [31002], suspended: true });
  await t.replicas.refresh();
  await t.settle();
  assert.equal(t.pool.has('w2'), true);
  assert.equal(
    t.probed.some((p) => p.workerId === 'w2'),
    false,
  );
});

test("the autoscaler's view counts strict-resume requests waiting for a worker on every replica", async () => {
  const t = replicaOf();
  t.pool.add({ workerId: 'w1', endpointId: 'ep', accountId: 'acc', port: 8000, healthPort: 8000, healthPath: '/ping' });
  const traffic = new ReplicaTraffic({
    pool: t.pool,
    store: {
      read: async () => [
        {
          endpointId: 'ep',
          waiting: 2,
          inFlight: 0,
          workers: { w1: { outstanding: 0, lastActiveAt: 0, resumeWanted: 2 } },
        },
      ],
      prune: async () => 0,
    },
    replicaId: 'r1',
    ttlMs: 15_000,
  });
  void t.pool.acquire('ep', { waitMs: 10_000, preferred: 'w1', strict: true, resume: true });
  await traffic.refresh(100_000);
  assert.equal(traffic.resumeWanted('w1'), 3);
  assert.equal(traffic.resumeWanted('w2'), 0);
  t.pool.close();
});

test('a replica told of a change to the workers table reads it at once, and once more when a read under way may have read before the change', async () => {
  const t = replicaOf();
  t.rows.push({ id: 'w1', endpointId: 'ep', accountId: 'acc', publicPorts: [31000, 31001], suspended: false });
  t.replicas.told();
  await t.settle();
  assert.deepEqual(t.pool.learntIds(), ['w1'], 'read at once, with no timer');

  // a read starts (it lists w1 only), then w2's launch is told while it runs
  const under = t.replicas.refresh();
  t.rows.push({ id: 'w2', endpointId: 'ep', accountId: 'acc', publicPorts: [31002, 31003], suspended: false });
  t.replicas.told();
  await under;
  await t.settle();
  assert.deepEqual(t.pool.learntIds().sort(), ['w1', 'w2'], 'read once more after the read under way');
});

test('a request goes to the worker holding the fewest requests on every replica together, as the others last wrote them', async () => {
  const t = replicaOf();
  for (const id of ['w1', 'w2'])
    t.rows.push({ id, endpointId: 'ep', accountId: 'acc', publicPorts: [31000, 31001], suspended: false });
  t.health.set('w1', 200);
  t.health.set('w2', 200);
  await t.replicas.refresh();
  await t.settle();
  // another replica holds two requests on w1
  const others: LbEndpointDemand[] = [
    { endpointId: 'ep', waiting: 0, inFlight: 2, workers: { w1: { outstanding: 2, lastActiveAt: 0 } } },
  ];
  t.readOthers(others);
  await t.replicas.refresh();
  const picked: string[] = [];
  const leases = [];
  for (let i = 0; i < 3; i++) {
    const lease = await t.pool.acquire('ep', { waitMs: 10 });
    assert.ok(lease && typeof lease === 'object');
    picked.push(lease.workerId);
    leases.push(lease);
  }
  assert.deepEqual(picked, ['w2', 'w2', 'w1'], 'w2 until it holds as many as w1 does in all, then by turns');
  for (const l of leases) l.release();
  // the other replica's requests ended: its next write says so
  t.readOthers([]);
  await t.replicas.refresh();
  const next = await t.pool.acquire('ep', { waitMs: 10 });
  assert.ok(next && typeof next === 'object');
  next.release();
});
