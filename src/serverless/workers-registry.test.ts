import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { FakeClock } from '../domain/clock.js';
import { WorkersRegistry } from './workers-registry.js';
import { WorkerStore } from '../store/worker-store.js';

for (const { name, skip } of dialects()) {
  describe(`WorkersRegistry on ${name}`, { skip }, () => {
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
      await t.db.kysely.deleteFrom('jobs').execute();
      clock = new FakeClock();
      registry = new WorkersRegistry({ store: new WorkerStore(t.db), clock });
    });

    test('a worker is written on first sight; later signs of life wait for the flush', async () => {
      await registry.seen('ep1', 'w1');
      const first = await row('w1');
      assert.equal(first?.status, 'idle');
      assert.equal(Number(first?.last_ping_at), clock.now());
      clock.advance(5000);
      await registry.seen('ep1', 'w1', true);
      assert.equal(Number((await row('w1'))?.last_ping_at), clock.now() - 5000, 'not written yet');
      assert.equal(await registry.flush(), 1);
      const flushed = await row('w1');
      assert.equal(flushed?.status, 'running');
      assert.equal(Number(flushed?.last_ping_at), clock.now());
      assert.equal(await registry.flush(), 0, 'nothing new, nothing written');
    });

    test('workers silent since the cutoff are marked dead and answered once', async () => {
      await registry.seen('ep1', 'quiet');
      await registry.seen('ep1', 'chatty');
      clock.advance(20_000);
      await registry.seen('ep1', 'chatty');
      await registry.flush();
      clock.advance(15_000);
      const lost = await registry.expire(clock.now() - 30_000);
      assert.deepEqual(lost, [{ id: 'quiet', endpointId: 'ep1' }]);
      assert.equal((await row('quiet'))?.status, 'dead');
      assert.deepEqual(await registry.expire(clock.now() - 30_000), []);
    });

    test('an open long-poll keeps a worker alive without pings', async () => {
      await registry.seen('ep1', 'poller');
      const close = registry.pollOpened('ep1', 'poller');
      clock.advance(60_000);
      await registry.flush();
      assert.deepEqual(await registry.expire(clock.now() - 30_000), []);
      close();
      clock.advance(31_000);
      await registry.flush();
      assert.deepEqual(await registry.expire(clock.now() - 30_000), [{ id: 'poller', endpointId: 'ep1' }]);
    });

    test('a dead worker that calls again is alive again', async () => {
      await registry.seen('ep1', 'phoenix');
      await registry.markDead('ep1', ['phoenix']);
      await registry.seen('ep1', 'phoenix');
      assert.equal((await row('phoenix'))?.status, 'idle');
    });

    test('rows of workers dead for longer than the retention are pruned by the sweep; live and recently dead rows stay', async () => {
      registry = new WorkersRegistry({ store: new WorkerStore(t.db), clock, deadRetentionMs: 3_600_000 });
      await registry.seen('ep1', 'gone-long');
      await registry.seen('ep1', 'gone-lately');
      await registry.seen('ep1', 'alive');
      await registry.markDead('ep1', ['gone-long']);
      clock.advance(3_000_000);
      await registry.markDead('ep1', ['gone-lately']);
      await registry.seen('ep1', 'alive');
      await registry.flush();
      assert.equal(await registry.prune(), 0, 'nobody dead for an hour yet');
      clock.advance(600_001);
      await registry.seen('ep1', 'alive');
      await registry.flush();
      assert.deepEqual(await registry.expire(clock.now() - 30_000), []);
      assert.equal(await row('gone-long'), undefined, 'dead for over an hour: pruned');
      assert.equal((await row('gone-lately'))?.status, 'dead', 'dead for 10 minutes: kept');
      assert.equal((await row('alive'))?.status, 'idle');
      clock.advance(3_000_000);
      await registry.seen('ep1', 'alive');
      await registry.flush();
      await registry.expire(clock.now() - 30_000);
      assert.equal(await row('gone-lately'), undefined);
      assert.equal((await row('alive'))?.status, 'idle');
    });

    test('the sweep prunes at most once a minute', async () => {
      registry = new WorkersRegistry({ store: new WorkerStore(t.db), clock, deadRetentionMs: 3_600_000 });
      await registry.seen('ep1', 'brief');
      await registry.markDead('ep1', ['brief']);
      clock.advance(3_599_990);
      await registry.expire(clock.now() - 30_000);
      assert.equal((await row('brief'))?.status, 'dead', 'not dead for an hour yet');
      clock.advance(30_000);
      await registry.expire(clock.now() - 30_000);
      assert.equal((await row('brief'))?.status, 'dead', 'past the retention, but the last prune was 30 s ago');
      clock.advance(30_000);
      await registry.expire(clock.now() - 30_000);
      assert.equal(await row('brief'), undefined);
    });

    test('a pruned worker that calls again is recorded afresh', async () => {
      registry = new WorkersRegistry({ store: new WorkerStore(t.db), clock, deadRetentionMs: 1_000 });
      await registry.seen('ep1', 'lazarus');
      await registry.markDead('ep1', ['lazarus']);
      clock.advance(2_000);
      assert.equal(await registry.prune(), 1);
      await registry.seen('ep1', 'lazarus', true);
      assert.equal((await row('lazarus'))?.status, 'running');
    });

    test('health counts live workers as idle or running by the jobs they hold, and unhealthy ones apart', async () => {
      await registry.seen('ep1', 'a');
      await registry.seen('ep1', 'b');
      await registry.unhealthy('ep1', 'c');
      await t.db.kysely
        .insertInto('workers')
        .values({
          id: 'd',
          endpoint_id: 'ep1',
          status: 'initializing',
          host_id: null,
          last_ping_at: null,
          created_at: 0,
          updated_at: 0,
        })
        .execute();
      const now = clock.now();
      await t.db.kysely
        .insertInto('jobs')
        .values({
          id: 'j1',
          endpoint_id: 'ep1',
          account_id: 'acct',
          status: 'IN_PROGRESS',
          seq: 1,
          input: '{}',
          webhook: null,
          s3_config: null,
          execution_timeout_ms: 600_000,
          low_priority: 0,
          ttl_ms: 86_400_000,
          sync: 0,
          created_at: now,
          queued_at: now,
          started_at: now,
          completed_at: null,
          expires_at: now + 86_400_000,
          retain_until: null,
          timeout_at: now + 600_000,
          output: null,
          error: null,
          worker_id: 'b',
          retries: 0,
          delay_ms: 0,
          execution_ms: null,
          stop_requested: 0,
        })
        .execute();
      assert.deepEqual(await registry.healthCounts('ep1'), {
        idle: 1,
        running: 1,
        initializing: 1,
        ready: 2,
        throttled: 0,
        unhealthy: 1,
        suspended: 0,
      });
    });

    test('only running workers the platform launched count toward the dynamic rate limit, never ids made up in pings', async () => {
      await t.db.kysely
        .insertInto('workers')
        .values({
          id: 'launched',
          endpoint_id: 'ep1',
          status: 'initializing',
          host_id: 'host-1',
          last_ping_at: null,
          created_at: 0,
          updated_at: 0,
        })
        .execute();
      for (let i = 0; i < 50; i++) await registry.seen('ep1', `made-up-${i}`, true);
      await registry.refreshLiveCounts();
      assert.equal(registry.liveWorkers('ep1'), 0, 'initializing launched workers and hand-attached ids do not count');
      await registry.seen('ep1', 'launched');
      assert.equal(registry.liveWorkers('ep1'), 1, 'seen here: counts at once');
      await registry.flush();
      const elsewhere = new WorkersRegistry({ store: new WorkerStore(t.db), clock });
      await elsewhere.refreshLiveCounts();
      assert.equal(elsewhere.liveWorkers('ep1'), 1, 'another replica reads the same count from the table');
      assert.equal(elsewhere.liveWorkers('ep2'), 0);
    });

    test('the same worker id through two endpoints is two workers: neither sighting, death nor recycle request crosses over', async () => {
      await registry.seen('ep-a', 'shared', true);
      await registry.seen('ep-b', 'shared');
      const rows = await t.db.kysely
        .selectFrom('workers')
        .select(['endpoint_id', 'status'])
        .where('id', '=', 'shared')
        .orderBy('endpoint_id')
        .execute();
      assert.deepEqual(rows, [
        { endpoint_id: 'ep-a', status: 'running' },
        { endpoint_id: 'ep-b', status: 'idle' },
      ]);
      registry.requestRecycle('ep-b', 'shared');
      assert.equal(registry.takeRecycleRequest('ep-a', 'shared'), false);
      await registry.markDead('ep-b', ['shared']);
      await registry.unhealthy('ep-b', 'shared');
      const after = await t.db.kysely
        .selectFrom('workers')
        .select(['endpoint_id', 'status'])
        .where('id', '=', 'shared')
        .orderBy('endpoint_id')
        .execute();
      assert.deepEqual(after, [
        { endpoint_id: 'ep-a', status: 'running' },
        { endpoint_id: 'ep-b', status: 'unhealthy' },
      ]);
      const close = registry.pollOpened('ep-b', 'shared');
      clock.advance(60_000);
      await registry.flush();
      const lost = await registry.expire(clock.now() - 30_000);
      close();
      assert.deepEqual(
        lost,
        [{ id: 'shared', endpointId: 'ep-a' }],
        "a poll through ep-b keeps only ep-b's worker alive",
      );
    });

    test('hand-attached worker rows per endpoint are capped: a new id past the cap is refused with 429, dead rows make room first', async () => {
      registry = new WorkersRegistry({
        store: new WorkerStore(t.db),
        clock,
        maxAttachedWorkers: 3,
        heartbeatTimeoutMs: 30_000,
      });
      await t.db.kysely
        .insertInto('workers')
        .values({
          id: 'launched',
          endpoint_id: 'ep1',
          status: 'idle',
          host_id: 'host-1',
          last_ping_at: 0,
          created_at: 0,
          updated_at: 0,
        })
        .execute();
      for (const id of ['h1', 'h2', 'h3']) await registry.seen('ep1', id);
      await assert.rejects(
        registry.seen('ep1', 'h4'),
        (err: { code?: string; status?: number; headers?: Record<string, string> }) => {
          assert.equal(err.code, 'RATE_LIMITED');
          assert.equal(err.status, 429);
          assert.equal(err.headers?.['Retry-After'], '30');
          return true;
        },
      );
      await registry.seen('ep1', 'h2', true);
      await registry.seen('ep1', 'launched');
      await registry.seen('ep2', 'h4');
      await registry.markDead('ep1', ['h1']);
      await registry.seen('ep1', 'h4');
      const rows = await t.db.kysely
        .selectFrom('workers')
        .select(['id', 'status'])
        .where('endpoint_id', '=', 'ep1')
        .orderBy('id')
        .execute();
      assert.deepEqual(
        rows.map((r) => r.id),
        ['h2', 'h3', 'h4', 'launched'],
        'the dead row went to make room; the launched worker never counts',
      );
    });
  });
}
