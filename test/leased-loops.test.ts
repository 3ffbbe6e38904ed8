/**
 * Control loops run only on the replica holding their lease (DESIGN "Scale-out"): the timekeeper,
 * the webhook dispatcher, the autoscaler and the pod sweep each check it at the top of every
 * scheduled pass. The loops run on real timers with short intervals; the tests wait for the loop
 * to have asked the lease a few times, never for a fixed time.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import pino from 'pino';
import { FakeClock } from '../src/domain/clock.js';
import { JobsService } from '../src/jobs/jobs-service.js';
import { Timekeeper } from '../src/jobs/timekeeper.js';
import { PodController } from '../src/pods/pod-controller.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { Autoscaler } from '../src/serverless/autoscaler.js';
import { WebhookDispatcher, type FetchLike } from '../src/serverless/webhook-dispatcher.js';
import { WorkersRegistry } from '../src/serverless/workers-registry.js';
import { openDatabase, type Db, type Session } from '../src/store/database.js';
import { PostgresLeases, type Lease } from '../src/store/leases.js';
import { createTestApp, openTestDb, postgresUrl, type TestApp, type TestDb } from './support/harness.js';
import { AccountStore } from '../src/store/account-store.js';
import { AutoscalerStore } from '../src/store/autoscaler-store.js';
import { PodStore } from '../src/store/pod-store.js';
import { WebhookStore } from '../src/store/webhook-store.js';
import { WorkerStore } from '../src/store/worker-store.js';
import { until } from './support/eventually.js';

const silent = pino({ level: 'silent' });

/** A lease a test turns on and off; counts how often the loop asked. */
class SwitchLease implements Lease {
  readonly name = 'test';
  term = 0;
  #held = false;
  #asked = 0;

  isHeld(): boolean {
    this.#asked++;
    return this.#held;
  }
  set(held: boolean): void {
    if (held && !this.#held) this.term++;
    this.#held = held;
  }
  /** Resolves once the loop has asked `n` more times. */
  asked(n: number): Promise<void> {
    const target = this.#asked + n;
    return until(`the loop asked the lease ${n} times`, () => this.#asked >= target);
  }
  async acquire(): Promise<boolean> {
    this.set(true);
    return true;
  }
  async renew(): Promise<boolean> {
    return this.#held;
  }
  async release(): Promise<void> {
    this.set(false);
  }
}

test('a timekeeper without the lease only writes its workers’ signs of life; with it, it keeps job time', async () => {
  const calls = { flush: 0, tick: 0, expire: 0, refresh: 0 };
  const lease = new SwitchLease();
  const timekeeper = new Timekeeper({
    jobs: {
      sweeper: { tick: async () => (calls.tick++, { timedOut: 0, expired: 0, purged: 0 }) },
      worker: { workerLost: async () => ({ requeued: [], failed: [] }) },
    },
    workers: {
      flush: async () => (calls.flush++, 0),
      expire: async () => (calls.expire++, []),
      refreshLiveCounts: async () => void calls.refresh++,
    },
    clock: new FakeClock(),
    lease,
    config: { timekeeperIntervalMs: 2, heartbeatTimeoutMs: 30_000 },
  });
  timekeeper.start();
  try {
    await lease.asked(5);
    assert.equal(calls.tick, 0);
    assert.equal(calls.expire, 0);
    assert.ok(calls.flush >= 4 && calls.refresh >= 4, JSON.stringify(calls));
    lease.set(true);
    await until('a full pass', () => calls.tick > 0 && calls.expire > 0);
  } finally {
    await timekeeper.stop();
  }
});

describe('loops on SQLite services, with a lease they do not hold', () => {
  let t: TestApp;
  const clock = new FakeClock(Date.now());

  before(async () => {
    t = await createTestApp({ clock });
  });
  after(() => t?.close());

  test('a webhook dispatcher without the lease delivers nothing; once it holds it, it delivers', async () => {
    const calls: string[] = [];
    const fetch: FetchLike = async (url) => {
      calls.push(url);
      return { status: 200, body: null };
    };
    const lease = new SwitchLease();
    const dispatcher = new WebhookDispatcher({
      store: new WebhookStore(t.services.db),
      accounts: new AccountStore(t.services.db),
      clock,
      logger: silent,
      fetch,
      lease,
      config: { pollIntervalMs: 2 },
    });
    const { id } = await t.services.jobs.client.submit('ep-hook', 'acct1', {
      input: {},
      webhook: 'http://hook.test/done',
    });
    await t.services.jobs.worker.take('ep-hook', 'w1');
    await t.services.jobs.worker.complete('w1', id, { output: 1 });
    dispatcher.start();
    try {
      await lease.asked(5);
      assert.deepEqual(calls, []);
      lease.set(true);
      await until('the delivery', () => calls.length === 1);
      assert.equal(calls[0], 'http://hook.test/done');
    } finally {
      await dispatcher.stop();
    }
  });

  test('an autoscaler launches workers only while it holds the lease, and stops them when it loses it', async () => {
    const runtime = new FakeRuntime();
    const lease = new SwitchLease();
    const { accountId } = await t.newAccount();
    const template = await t.services.templates.create(accountId, {
      name: 'worker',
      imageName: 'my-worker:dev',
      isServerless: true,
    });
    const endpoint = await t.services.endpoints.create(accountId, {
      name: 'ep-min',
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMin: 1,
      workersMax: 1,
    });
    const s = t.services;
    const autoscaler = new Autoscaler({
      store: new AutoscalerStore(s.db),
      clock,
      runtime,
      inventory: s.inventory,
      jobs: s.jobs,
      workers: s.workers,
      endpoints: s.endpoints,
      accounts: s.accounts,
      logger: silent,
      lease,
      config: { autoscaler: { intervalMs: 2 }, catalog: t.config.catalog, publicUrl: 'http://127.0.0.1:1' },
    });
    const rows = () =>
      s.db.kysely.selectFrom('workers').select(['id', 'status']).where('endpoint_id', '=', endpoint.id).execute();
    await autoscaler.start();
    try {
      await lease.asked(5);
      assert.equal(runtime.specs.size, 0);
      assert.deepEqual(await rows(), []);
      lease.set(true);
      await until('a worker launched', () => runtime.specs.size === 1);
      lease.set(false);
      await until('the worker stopped', () => runtime.specs.size === 0);
      await until('its row dead', async () => (await rows()).every((r) => r.status === 'dead'));
    } finally {
      await autoscaler.stop();
    }
  });

  test('a pod controller without the lease does not sweep; with it, it does', async () => {
    const runtime = new FakeRuntime();
    const lease = new SwitchLease();
    const s = t.services;
    const controller = new PodController({
      store: new PodStore(s.db),
      runtime,
      inventory: s.inventory,
      registries: s.registries,
      clock,
      events: s.events,
      logger: silent,
      lease,
      config: { pods: { reconcileIntervalMs: 1 }, networking: t.config.networking },
    });
    await controller.start();
    try {
      await lease.asked(3);
      assert.equal(runtime.lists, 0);
      lease.set(true);
      await until('a sweep', () => runtime.lists > 0);
    } finally {
      await controller.stop();
    }
  });
});

describe(
  'timekeepers of two replicas on PostgreSQL',
  { skip: postgresUrl() ? false : 'GANTRY_TEST_DATABASE_URL is not set' },
  () => {
    let t: TestDb;
    let dbB: Db;
    const leases: PostgresLeases[] = [];

    before(async () => {
      t = await openTestDb('postgres');
      dbB = await openDatabase({ url: postgresUrl(), dataDir: t.dataDir, schema: t.schema });
    });
    after(async () => {
      for (const l of leases) await l.close();
      await dbB?.close();
      await t?.cleanup();
    });

    test('only the holder of the lease times jobs out; when its connection drops, the other replica takes over', async () => {
      const clock = new FakeClock(Date.now());
      const sessionsOfA: Session[] = [];
      const leasesA = new PostgresLeases({
        sessions: {
          namespace: t.schema,
          open: async () => (sessionsOfA.push(await t.db.sessions!.open()), sessionsOfA.at(-1)!),
        },
        renewIntervalMs: 20,
      });
      const leasesB = new PostgresLeases({ sessions: dbB.sessions!, renewIntervalMs: 20 });
      leases.push(leasesA, leasesB);
      const leaseA = leasesA.lease('timekeeper');
      await leasesA.start();
      await leasesB.start();
      assert.equal(leaseA.isHeld(), true);

      const jobsA = new JobsService({ db: t.db, clock });
      const jobsB = new JobsService({ db: dbB, clock });
      const { id } = await jobsA.client.submit('ep1', 'acct1', { input: {}, policy: { executionTimeout: 5_000 } });
      await jobsA.worker.take('ep1', 'w1');
      clock.advance(10_000);

      // B runs its loop; A holds the lease but (busy elsewhere) runs no pass.
      const leaseB = leasesB.lease('timekeeper');
      let askedB = 0;
      const countingB: Lease = {
        name: leaseB.name,
        term: 0,
        isHeld: () => (askedB++, leaseB.isHeld()),
        acquire: () => leaseB.acquire(),
        renew: () => leaseB.renew(),
        release: () => leaseB.release(),
      };
      const timekeeperB = new Timekeeper({
        jobs: jobsB,
        workers: new WorkersRegistry({ store: new WorkerStore(dbB), clock }),
        clock,
        lease: countingB,
        config: { timekeeperIntervalMs: 5, heartbeatTimeoutMs: 30_000 },
      });
      timekeeperB.start();
      try {
        await until('B passes a few times', () => askedB >= 5);
        assert.equal((await jobsB.client.status('acct1', 'ep1', id)).status, 'IN_PROGRESS');
        await sql`SELECT pg_terminate_backend(${sessionsOfA[0]!.pid})`.execute(t.db.kysely);
        await until(
          'B takes over and times the job out',
          async () => (await jobsB.client.status('acct1', 'ep1', id)).status === 'TIMED_OUT',
        );
        assert.equal(leaseA.isHeld(), false);
      } finally {
        await timekeeperB.stop();
        await jobsA.flush();
        await jobsB.flush();
      }
    });
  },
);
