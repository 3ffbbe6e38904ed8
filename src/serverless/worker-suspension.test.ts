import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { FakeClock } from '../domain/clock.js';
import { WorkerStore } from '../store/worker-store.js';
import { AutoscalerStore } from '../store/autoscaler-store.js';
import { WorkersRegistry } from './workers-registry.js';
import { GATE_CLOSE, GATE_OPEN, SuspendGate } from './suspend-gate.js';
import { WorkerSuspension } from './worker-suspension.js';
import type { LaunchedWorker } from './launched-workers.js';
import { Inventory } from '../inventory/inventory.js';
import { defaultCatalog } from '../domain/catalog.js';
import { suspendedHold } from '../domain/reclaim-ladder.js';
import { gpuPlacementRequest } from '../../test/support/placement.js';

for (const { name, skip } of dialects()) {
  describe(`suspended workers on ${name}`, { skip }, () => {
    let t: TestDb;
    let clock: FakeClock;
    let registry: WorkersRegistry;
    const row = (id: string) => t.db.kysely.selectFrom('workers').selectAll().where('id', '=', id).executeTakeFirst();

    before(async () => {
      t = await openTestDb(name);
    });
    after(() => t?.cleanup());
    beforeEach(async () => {
      await t.db.kysely.deleteFrom('workers').execute();
      clock = new FakeClock();
      registry = new WorkersRegistry({ store: new WorkerStore(t.db), clock });
    });

    test('a suspended worker is exempt from the heartbeat-loss rule and counted apart by health', async () => {
      await registry.seen('ep1', 'frozen');
      await registry.seen('ep1', 'quiet');
      assert.equal(await registry.suspended('ep1', 'frozen'), true);
      const r = await row('frozen');
      assert.equal(r?.status, 'suspended');
      assert.equal(Number(r?.suspended_at), clock.now());
      clock.advance(120_000);
      await registry.flush();
      const lost = await registry.expire(clock.now() - 30_000);
      assert.deepEqual(lost, [{ id: 'quiet', endpointId: 'ep1' }], 'only the silent live worker is lost');
      assert.equal((await row('frozen'))?.status, 'suspended');
      const health = await registry.healthCounts('ep1');
      assert.equal(health.suspended, 1);
      assert.equal(health.idle, 0);
      assert.equal(health.ready, 0);
    });

    test('a request the worker sent before it was frozen leaves it suspended; once resumed it is idle and heard from then', async () => {
      await registry.seen('ep1', 'w1');
      await registry.suspended('ep1', 'w1');
      clock.advance(5_000);
      await registry.seen('ep1', 'w1', true);
      await registry.flush();
      assert.equal((await row('w1'))?.status, 'suspended');
      clock.advance(600_000);
      assert.equal(await registry.resumed('ep1', 'w1'), true);
      const r = await row('w1');
      assert.equal(r?.status, 'idle');
      assert.equal(r?.suspended_at, null);
      assert.equal(Number(r?.last_ping_at), clock.now(), 'its heartbeat counts from its resumption');
      assert.deepEqual(await registry.expire(clock.now() - 30_000), []);
      assert.equal(await registry.resumed('ep1', 'w1'), false, 'resuming a worker not suspended changes nothing');
    });

    test("a launched worker's row tells the autoscaler when it was suspended (kept over a restart)", async () => {
      await t.db.kysely
        .insertInto('workers')
        .values({
          id: 'l1',
          endpoint_id: 'ep1',
          status: 'idle',
          host_id: 'h1',
          last_ping_at: clock.now(),
          created_at: clock.now(),
          updated_at: clock.now(),
          allocation: null,
          endpoint_version: null,
          suspended_at: null,
        })
        .execute();
      clock.advance(1_000);
      await registry.suspended('ep1', 'l1');
      const [launched] = await new AutoscalerStore(t.db).launchedWorkers();
      assert.equal(launched?.status, 'suspended');
      assert.equal(launched?.suspendedAt, clock.now());
      await registry.markDead('ep1', ['l1']);
      assert.equal(await registry.suspended('ep1', 'l1'), false, 'a dead worker is not suspended again');
    });
  });
}

describe('the suspend gate', () => {
  const client = () => {
    const listeners: Array<() => void> = [];
    return {
      aborted: false,
      addEventListener: (_: 'abort', l: () => void) => void listeners.push(l),
      removeEventListener: () => {},
    };
  };

  test("closing a worker's gate ends the take it holds open, and only its own; it stays closed until opened", () => {
    const gate = new SuspendGate();
    const mine = gate.takeSignal('ep1', 'w1', client());
    const other = gate.takeSignal('ep1', 'w2', client());
    const sameIdElsewhere = gate.takeSignal('ep2', 'w1', client());
    let ended = 0;
    mine.addEventListener('abort', () => ended++);
    assert.equal(gate.isClosed('ep1', 'w1'), false);
    gate.close('ep1', 'w1');
    assert.equal(mine.aborted, true);
    assert.equal(ended, 1);
    assert.equal(other.aborted, false);
    assert.equal(sameIdElsewhere.aborted, false);
    assert.equal(gate.isClosed('ep1', 'w1'), true);
    assert.equal(gate.isClosed('ep2', 'w1'), false);
    gate.open('ep1', 'w1');
    assert.equal(gate.isClosed('ep1', 'w1'), false);
    for (const s of [mine, other, sameIdElsewhere]) s.done();
  });

  test("the gate tells other replicas of its own closes and opens only, and another's opening never opens a gate it closed itself", async () => {
    const said: Array<[string, string]> = [];
    const gate = new SuspendGate();
    let flushed = 0;
    gate.relayTo({ publish: (topic, key) => void said.push([topic, key]), flush: async () => void flushed++ });
    gate.close('ep1', 'w1');
    gate.open('ep1', 'w9');
    await gate.sent();
    assert.deepEqual(said, [[GATE_CLOSE, 'ep1/w1']], 'its close is told; opening a gate not closed says nothing');
    assert.equal(flushed, 1);
    // another replica's words
    const held = gate.takeSignal('ep1', 'w2', client());
    assert.equal(gate.deliver(GATE_CLOSE, 'ep1/w2'), true);
    assert.equal(held.aborted, true, "another's close ends the take held open here");
    assert.equal(gate.isClosed('ep1', 'w2'), true);
    assert.equal(gate.deliver(GATE_OPEN, 'ep1/w1'), true);
    assert.equal(gate.isClosed('ep1', 'w1'), true, 'closed here: only this replica opens it');
    assert.equal(gate.deliver(GATE_OPEN, 'ep1/w2'), true);
    assert.equal(gate.isClosed('ep1', 'w2'), false);
    assert.equal(gate.deliver('work', 'ep1'), false, 'not its topic');
    assert.deepEqual(said, [[GATE_CLOSE, 'ep1/w1']], 'words delivered are not told on');
    held.done();
  });
});

describe('suspending a worker', () => {
  const worker = (): LaunchedWorker => ({
    endpointId: 'ep1',
    accountId: 'acct1',
    hostId: 'h1',
    startedAt: 0,
    lastActiveAt: 0,
    ready: true,
    proven: true,
    recycle: false,
    stopping: false,
    suspension: null,
    suspendedAt: null,
  });
  const suspension = (
    runtime: ConstructorParameters<typeof WorkerSuspension>[0]['runtime'],
    m: LaunchedWorker,
    inventory: Pick<Inventory, 'setReclaimable'> = { setReclaimable: () => true },
    clock = new FakeClock(),
  ) => {
    const gate = new SuspendGate();
    return {
      gate,
      s: new WorkerSuspension({
        clock,
        runtime,
        workers: { get: (id) => (id === 'w1' ? m : undefined) },
        registry: { gate, suspended: async () => true, resumed: async () => true },
        jobs: { worker: { workerReleased: async () => ({ requeued: [], failed: [] }) } },
        instances: { log: async () => {} },
        inventory,
        logger: { info: () => {}, warn: () => {} },
      }),
    };
  };

  test('a runtime without the capability refuses it clearly, and the worker runs on untouched', async () => {
    const m = worker();
    const { s, gate } = suspension({}, m);
    assert.deepEqual(await s.suspend('w1'), { ok: false, reason: 'the runtime cannot suspend instances' });
    assert.equal(m.suspension, null);
    assert.equal(gate.isClosed('ep1', 'w1'), false);
  });

  test("a fleet host that cannot suspend is refused by name; a runtime's failure reopens the worker's takes", async () => {
    const m = worker();
    const refusing = suspension({ suspend: async () => {}, resume: async () => {}, canSuspend: () => false }, m);
    assert.deepEqual(await refusing.s.suspend('w1'), { ok: false, reason: 'host h1 cannot suspend instances' });
    const failing = suspension(
      {
        suspend: async () => {
          throw new Error('engine said no');
        },
        resume: async () => {},
      },
      m,
    );
    assert.deepEqual(await failing.s.suspend('w1'), { ok: false, reason: 'suspending failed: engine said no' });
    assert.equal(failing.gate.isClosed('ep1', 'w1'), false);
    assert.equal(m.suspension, null);
  });

  test("a suspended worker's GPUs are on the ladder until it resumes; a resume after placement took them is refused and never continues the instance", async () => {
    const inventory = new Inventory({
      hosts: [
        {
          id: 'h1',
          dataCenterId: 'US-TX-3',
          cloud: 'SECURE',
          cudaVersion: '12.4',
          gpuTypeId: 'NVIDIA GeForce RTX 4090',
          gpuCount: 1,
          cpuFlavors: [],
          vcpus: 6,
          memoryGb: 48,
          diskGb: 1000,
          portRange: [20000, 20099],
          publicIp: '127.0.0.1',
        },
      ],
      catalog: defaultCatalog(),
    });
    const pod = gpuPlacementRequest({ gpuCount: 1, reclaim: { kind: 'on-demand', accountId: 'acct2' } });
    assert.ok(inventory.placeAndReserve('w1', gpuPlacementRequest({ gpuCount: 1 })).ok);
    const clock = new FakeClock(1_000);
    let resumed = 0;
    const m = worker();
    const { s } = suspension(
      {
        suspend: async () => {},
        resume: async () => {
          resumed++;
        },
      },
      m,
      inventory,
      clock,
    );
    assert.equal(inventory.allocationOf('w1')?.reclaimable, undefined, 'a running worker is not on the ladder');
    assert.deepEqual(await s.suspend('w1'), { ok: true });
    assert.deepEqual(inventory.allocationOf('w1')?.reclaimable, suspendedHold('ep1', 'acct1', 1_000));
    assert.deepEqual(await s.resume('w1'), { ok: true });
    assert.equal(inventory.allocationOf('w1')?.reclaimable, undefined, 'resumed: off the ladder');
    assert.equal(inventory.placeAndReserve('pod-1', pod).ok, false);

    clock.advance(5);
    assert.deepEqual(await s.suspend('w1'), { ok: true });
    const taken = inventory.placeAndReserve('pod-2', pod);
    assert.ok(taken.ok && taken.reclaimed?.[0]?.holderId === 'w1');
    assert.deepEqual(await s.resume('w1'), {
      ok: false,
      reason: 'worker w1 was reclaimed: its GPUs were taken back for another placement',
    });
    assert.equal(resumed, 1, 'the instance was not continued: its GPU is the pod’s');
    assert.equal(m.suspension, 'suspended');
    assert.equal(inventory.allocationOf('w1'), undefined);
  });
});
