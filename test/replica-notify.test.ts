/**
 * Two replicas sharing one PostgreSQL schema, each built by the composition root with its own
 * pool: long-polls on one are woken by events on the other (DESIGN "Scale-out").
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { FakeClock } from '../src/domain/clock.js';
import { createServices } from '../src/main.js';
import { stopKey, type JobChannel } from '../src/jobs/job-signals.js';
import type { Services } from '../src/services.js';
import { openDatabase } from '../src/store/database.js';
import { buildApp } from '../src/http/app.js';
import { openTestDb, postgresUrl, type TestDb } from './support/harness.js';
import { until } from './support/eventually.js';

/** Far longer than a relayed wake-up takes; a long-poll answering near it was not woken. */
const WAIT_MS = 10_000;
/** What "promptly" means here: a wake-up crosses two connections and the server. */
const PROMPT_MS = 2_000;

describe(
  'replicas on one PostgreSQL database',
  { skip: postgresUrl() ? false : 'GANTRY_TEST_DATABASE_URL is not set' },
  () => {
    let t: TestDb;
    let a: Services;
    let b: Services;
    const dirs: string[] = [];
    const clock = new FakeClock(Date.now());

    /** A replica: its own data dir, pool and services, on the shared schema; relay and leases started as `startServer` does. */
    const replica = async (): Promise<Services> => {
      const dataDir = mkdtempSync(join(tmpdir(), 'gantry-replica-'));
      dirs.push(dataDir);
      // webhook retries polled once a minute: a prompt delivery can only come from a wake-up
      writeFileSync(
        join(dataDir, 'config.json'),
        JSON.stringify({ serverless: { webhooks: { pollIntervalMs: 60_000 } } }),
      );
      const config = loadConfig({
        env: {
          GANTRY_DATA_DIR: dataDir,
          GANTRY_CONFIG: join(dataDir, 'config.json'),
          GANTRY_LOG_LEVEL: 'silent',
          GANTRY_SECRET_KEY: 'ab'.repeat(32),
        },
      });
      const db = await openDatabase({ url: postgresUrl(), dataDir, schema: t.schema });
      const services = await createServices(config, { db, clock, logger: pino({ level: 'silent' }) });
      await services.leases.start();
      await services.relay!.start();
      return services;
    };
    /** Resolves once `services` has a long-poll waiting on (channel, key). */
    const waiting = (services: Services, channel: JobChannel, key: string): Promise<void> =>
      until(`a waiter on ${channel} ${key}`, () => services.jobs.signals.waiting(channel, key) > 0);

    before(async () => {
      t = await openTestDb('postgres');
      a = await replica();
      b = await replica();
    });
    after(async () => {
      for (const s of [a, b]) {
        if (!s) continue;
        await s.jobs.flush();
        await s.relay?.close();
        await s.leases.close();
        await s.runtime.close();
        await s.db.close();
      }
      await t?.cleanup();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    test('the composition root wires a relay and database leases on PostgreSQL, and exactly one replica holds each loop', () => {
      assert.ok(a.relay && b.relay);
      for (const name of ['timekeeper', 'autoscaler', 'webhooks', 'pods']) {
        assert.equal(Number(a.leases.lease(name).isHeld()) + Number(b.leases.lease(name).isHeld()), 1, name);
      }
    });

    test('a job submitted on replica A wakes a take long-polling on replica B promptly', async () => {
      const started = performance.now();
      const take = b.jobs.worker.take('ep-take', 'w1', { waitMs: WAIT_MS });
      await waiting(b, 'work', 'ep-take');
      const { id } = await a.jobs.client.submit('ep-take', 'acct1', { input: { n: 1 } });
      const taken = await take;
      const elapsed = performance.now() - started;
      assert.deepEqual(
        taken.map((j) => j.id),
        [id],
      );
      assert.ok(elapsed < PROMPT_MS, `took ${Math.round(elapsed)} ms`);
    });

    test('a job completed on replica A wakes a status-sync waiting on replica B promptly', async () => {
      const { id } = await a.jobs.client.submit('ep-sync', 'acct1', { input: { n: 2 } });
      assert.equal((await a.jobs.worker.take('ep-sync', 'w2'))[0]?.id, id);
      const started = performance.now();
      const sync = b.jobs.client.waitForTerminal('acct1', 'ep-sync', id, { waitMs: WAIT_MS });
      await waiting(b, 'job', id);
      await a.jobs.worker.complete('w2', id, { output: { ok: true } });
      const view = await sync;
      const elapsed = performance.now() - started;
      assert.equal(view.status, 'COMPLETED');
      assert.ok(elapsed < PROMPT_MS, `took ${Math.round(elapsed)} ms`);
    });

    test('a job cancelled on replica B tells its worker, long-polling job-stop on replica A, promptly', async () => {
      const { id } = await b.jobs.client.submit('ep-stop', 'acct1', { input: { n: 3 } });
      assert.equal((await a.jobs.worker.take('ep-stop', 'w3'))[0]?.id, id);
      const started = performance.now();
      const stops = a.jobs.worker.stopRequests('ep-stop', 'w3', { waitMs: WAIT_MS });
      await waiting(a, 'stop', stopKey('ep-stop', 'w3'));
      await b.jobs.client.cancel('acct1', 'ep-stop', id);
      assert.deepEqual(await stops, [id]);
      const elapsed = performance.now() - started;
      assert.ok(elapsed < PROMPT_MS, `took ${Math.round(elapsed)} ms`);
    });

    test("a cancel on replica B of another endpoint's job, run by a worker of the same id, never wakes that worker id's job-stop poll on replica A", async () => {
      const mine = (await a.jobs.client.submit('ep-stop-a', 'acct1', { input: {} })).id;
      const theirs = (await b.jobs.client.submit('ep-stop-b', 'acct2', { input: {} })).id;
      assert.equal((await a.jobs.worker.take('ep-stop-a', 'w4'))[0]?.id, mine);
      assert.equal((await b.jobs.worker.take('ep-stop-b', 'w4'))[0]?.id, theirs);
      const reads: string[] = [];
      const store = a.jobs.store.claims;
      const takeStopRequests = store.takeStopRequests.bind(store);
      store.takeStopRequests = (workerId, endpointId, ...rest) => {
        reads.push(endpointId);
        return takeStopRequests(workerId, endpointId, ...rest);
      };
      const delivered: string[] = [];
      const signals = a.jobs.signals;
      const deliver = signals.deliver.bind(signals);
      signals.deliver = (channel, key, count) => {
        if (channel === 'stop') delivered.push(key);
        deliver(channel, key, count);
      };
      try {
        const stops = a.jobs.worker.stopRequests('ep-stop-a', 'w4', { waitMs: WAIT_MS });
        await waiting(a, 'stop', stopKey('ep-stop-a', 'w4'));
        await b.jobs.client.cancel('acct2', 'ep-stop-b', theirs);
        await until(
          "B's stop notice reached A",
          () => delivered.includes(stopKey('ep-stop-b', 'w4')) || delivered.includes('w4'),
        );
        for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
        assert.deepEqual(reads, ['ep-stop-a'], 'a woken poll would have read its stop requests again');
        await b.jobs.client.cancel('acct1', 'ep-stop-a', mine);
        assert.deepEqual(await stops, [mine]);
      } finally {
        store.takeStopRequests = takeStopRequests;
        signals.deliver = deliver;
      }
    });

    test('a webhook job finished on the replica without the webhooks lease is delivered by the holder promptly, not at its next poll', async () => {
      const received: string[] = [];
      const receiver = createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          received.push(body);
          res.end('ok');
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const holder = a.leases.lease('webhooks').isHeld() ? a : b;
      const other = holder === a ? b : a;
      // The holder's start delivers what is due at once; here nothing is, and once it has looked a
      // prompt delivery can only come from a wake-up (its next poll is a minute away).
      const looked: string[][] = [];
      const store = holder.webhooks.store;
      const dueAccounts = store.dueAccounts.bind(store);
      store.dueAccounts = async (...args) => {
        const due = await dueAccounts(...args);
        looked.push(due);
        return due;
      };
      holder.webhooks.start();
      other.webhooks.start();
      try {
        await until("the holder's start looked for due deliveries", () => looked.length > 0);
        assert.deepEqual(looked[0], [], 'the start delivers nothing: nothing is due yet');
        const { id } = await other.jobs.client.submit('ep-hook', 'acct1', { input: { n: 4 }, webhook: url });
        assert.equal((await other.jobs.worker.take('ep-hook', 'w4'))[0]?.id, id);
        const started = performance.now();
        await other.jobs.worker.complete('w4', id, { output: 'done' });
        await until('the webhook arrived', () => received.length === 1);
        const elapsed = performance.now() - started;
        assert.equal(JSON.parse(received[0]!).id, id);
        assert.ok(elapsed < PROMPT_MS, `took ${Math.round(elapsed)} ms`);
      } finally {
        store.dueAccounts = dueAccounts;
        await holder.webhooks.stop();
        await other.webhooks.stop();
        receiver.close();
      }
    });

    test("a user's job API rate counts on every replica: requests admitted on A count against the same window on B", async () => {
      const account = await a.accounts.createAccount(`limits-${Date.now()}`);
      const { key } = await a.accounts.createKey(account.id, { scope: 'write' });
      const template = await a.templates.create(account.id, { name: 'w', imageName: 'worker:dev', isServerless: true });
      const endpoint = await a.endpoints.create(account.id, {
        name: 'limited',
        templateId: template.id,
        gpuIds: 'ADA_24',
      });
      const [appA, appB] = [await buildApp(a), await buildApp(b)];
      try {
        let heard = 0;
        const off = b.jobRequestCounts!.subscribe((k, n) => {
          if (k.includes(endpoint.id)) heard += n;
        });
        const purge = (app: typeof appA) =>
          app.inject({
            method: 'POST',
            url: `/v2/${endpoint.id}/purge-queue`,
            headers: { authorization: `Bearer ${key}` },
          });
        // purge-queue allows 2 per 10 s (spec 8.1)
        assert.equal((await purge(appA)).statusCode, 200);
        assert.equal((await purge(appA)).statusCode, 200);
        await until("B heard of A's two requests", () => heard >= 2);
        off();
        const refused = await purge(appB);
        assert.equal(refused.statusCode, 429, refused.body);
        assert.match(JSON.parse(refused.body).detail, /2 requests per 10 seconds \(all your keys together\)/);
      } finally {
        await appA.close();
        await appB.close();
      }
    });
  },
);
