/**
 * Jobs a worker no longer holds, across two replicas sharing one PostgreSQL schema, each with its
 * own pool, services, HTTP app and clock — and the clocks disagree by a few seconds, as two
 * machines' do. A worker's takes and pings land on either replica. The order of takes comes from
 * the database, not from the replicas' clocks: a stale ping on one replica never gives back the
 * job a take on the other just handed out, even when that take's clock is behind.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config.js';
import { FakeClock } from '../src/domain/clock.js';
import { createServices } from '../src/main.js';
import type { Services } from '../src/services.js';
import { openDatabase } from '../src/store/database.js';
import { buildApp } from '../src/http/app.js';
import { openTestDb, postgresUrl, type TestDb } from './support/harness.js';

const T = Date.UTC(2026, 0, 1);
/** Replica B's clock runs this far ahead of A's (well under the heartbeat timeout). */
const SKEW = 5_000;

describe(
  'jobs a worker no longer holds, with takes and pings landing on two replicas',
  { skip: postgresUrl() ? false : 'GANTRY_TEST_DATABASE_URL is not set' },
  () => {
    let t: TestDb;
    const replicas: Array<{ services: Services; app: FastifyInstance; clock: FakeClock }> = [];
    const dirs: string[] = [];
    let key: string;
    let accountId: string;
    let ep: string;

    const replica = async (clock: FakeClock) => {
      const dataDir = mkdtempSync(join(tmpdir(), 'gantry-replica-'));
      dirs.push(dataDir);
      writeFileSync(
        join(dataDir, 'config.json'),
        JSON.stringify({ jobs: { takeWaitMs: 20, stopWaitMs: 20, heartbeatTimeoutMs: 30_000, retryBudget: 3 } }),
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
      const app = await buildApp(services, { logger: false });
      replicas.push({ services, app, clock });
      return { services, app, clock };
    };
    /** A worker call on replica `r`, the SDK's way (raw key). */
    const call = async (r: { app: FastifyInstance }, path: string) => {
      const res = await r.app.inject({ method: 'GET', url: `/v2/${ep}/${path}`, headers: { authorization: key } });
      assert.ok([200, 204].includes(res.statusCode), `${path}: ${res.statusCode} ${res.body}`);
      return res;
    };
    const take = async (r: { app: FastifyInstance }, worker: string, holds: boolean, batch = 1) => {
      const res = await call(
        r,
        batch > 1
          ? `job-take-batch/${worker}?batch_size=${batch}&job_in_progress=${holds ? 1 : 0}`
          : `job-take/${worker}?job_in_progress=${holds ? 1 : 0}`,
      );
      if (res.statusCode === 204) return [];
      const body = JSON.parse(res.body) as { id: string } | Array<{ id: string }>;
      return (Array.isArray(body) ? body : [body]).map((j) => j.id);
    };
    const ping = (r: { app: FastifyInstance }, worker: string, held: string[]) =>
      call(r, `ping/${worker}?${held.length ? `job_id=${held.join('%2C')}&` : ''}runpod_version=1.12.0`);
    const status = async (id: string) => {
      const res = await replicas[0]!.app.inject({
        method: 'GET',
        url: `/v2/${ep}/status/${id}`,
        headers: { authorization: `Bearer ${key}` },
      });
      const view = JSON.parse(res.body) as { status: string; workerId?: string; retries?: number };
      return [view.status, view.workerId ?? null, view.retries ?? 0];
    };

    before(async () => {
      t = await openTestDb('postgres');
      const a = await replica(new FakeClock(T));
      await replica(new FakeClock(T + SKEW));
      const account = await a.services.accounts.createAccount('two-replicas');
      accountId = account.id;
      key = (await a.services.accounts.createKey(account.id, { scope: 'write' })).key;
      const template = await a.services.templates.create(account.id, {
        name: 'tpl',
        imageName: 'worker:dev',
        isServerless: true,
      });
      ep = (await a.services.endpoints.create(account.id, { name: 'ep', templateId: template.id, gpuIds: 'ADA_24' }))
        .id;
    });
    after(async () => {
      for (const { services, app } of replicas) {
        await app.close();
        await services.jobs.flush();
        await services.runtime.close();
        await services.db.close();
      }
      await t?.cleanup();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    test("a take on one replica, a stale ping on the other: the job just taken stays, whatever the replicas' clocks say", async () => {
      const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
      const submit = async (n: number) => (await a.services.jobs.client.submit(ep, accountId, { input: { n } })).id;
      const [first, second] = [await submit(1), await submit(2)];

      // B (ahead) hands out the first job; A, whose clock is behind, the second one later: by
      // the clocks, the second take looks 5 s older than the first.
      assert.deepEqual(await take(b, 'pod', false), [first]);
      a.clock.advance(100);
      assert.deepEqual(await take(a, 'pod', true, 2), [second]);

      // The heartbeat's snapshot from before the second take (listing the first only) arrives now,
      // on either replica; so does the one from before any take (listing nothing).
      for (const r of [a, b]) {
        await ping(r, 'pod', [first]);
        await ping(r, 'pod', []);
      }
      assert.deepEqual(await status(first), ['IN_PROGRESS', 'pod', 0]);
      assert.deepEqual(await status(second), ['IN_PROGRESS', 'pod', 0]);

      // A fresh snapshot lists the second job only: the first, from an earlier take, is no longer held.
      await ping(b, 'pod', [second]);
      assert.deepEqual(await status(first), ['IN_QUEUE', null, 1]);
      assert.deepEqual(await status(second), ['IN_PROGRESS', 'pod', 0]);

      // Restarted, the worker asks replica A for work holding nothing: its last job goes back and
      // comes to it again, behind the first one at the head of the queue.
      assert.deepEqual(await take(a, 'pod', false), [first]);
      assert.deepEqual(await status(second), ['IN_QUEUE', null, 1]);
      assert.deepEqual(await take(b, 'pod', true), [second]);
    });
  },
);
