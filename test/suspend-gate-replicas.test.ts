/**
 * FlashBoot's suspend gate across two replicas sharing one PostgreSQL schema (issue 30): a worker
 * being suspended is handed nothing on any replica, whichever one its takes land on. Replica A
 * closes the worker's gate (as the suspension does before freezing it): the take the worker holds
 * open on replica B ends empty at once, and its next takes there answer empty while a job waits;
 * opened again (resumed), B hands it the job. A replica whose relay session dropped (words from
 * others may be lost) opens the gates it closed on others' word rather than starve the worker, and
 * keeps its own. Each replica is built by the composition root with its own pool and relay.
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
import { until } from './support/eventually.js';

/** How long a take long-polls: an answer well before it was not a wait running out. */
const TAKE_WAIT_MS = 20_000;

describe(
  "FlashBoot's suspend gate across replicas",
  { skip: postgresUrl() ? false : 'GANTRY_TEST_DATABASE_URL is not set' },
  () => {
    let t: TestDb;
    const replicas: Array<{ services: Services; app: FastifyInstance }> = [];
    const dirs: string[] = [];
    let key: string;
    let accountId: string;
    let ep: string;

    const replica = async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'gantry-replica-'));
      dirs.push(dataDir);
      writeFileSync(join(dataDir, 'config.json'), JSON.stringify({ jobs: { takeWaitMs: TAKE_WAIT_MS } }));
      const config = loadConfig({
        env: {
          GANTRY_DATA_DIR: dataDir,
          GANTRY_CONFIG: join(dataDir, 'config.json'),
          GANTRY_LOG_LEVEL: 'silent',
          GANTRY_SECRET_KEY: 'ab'.repeat(32),
        },
      });
      const db = await openDatabase({ url: postgresUrl(), dataDir, schema: t.schema });
      const services = await createServices(config, {
        db,
        clock: new FakeClock(Date.now()),
        logger: pino({ level: 'silent' }),
      });
      await services.relay!.start();
      const app = await buildApp(services, { logger: false });
      replicas.push({ services, app });
      return { services, app };
    };
    /** A worker's take on replica `r`, the SDK's way: the job ids it was handed, and how long it took. */
    const take = async (r: { app: FastifyInstance }, worker: string) => {
      const started = performance.now();
      const res = await r.app.inject({
        method: 'GET',
        url: `/v2/${ep}/job-take/${worker}?job_in_progress=0`,
        headers: { authorization: key },
      });
      assert.ok([200, 204].includes(res.statusCode), `${res.statusCode} ${res.body}`);
      const ids = res.statusCode === 204 ? [] : [(JSON.parse(res.body) as { id: string }).id];
      return { ids, ms: performance.now() - started };
    };
    const status = async (id: string) => {
      const res = await replicas[0]!.app.inject({
        method: 'GET',
        url: `/v2/${ep}/status/${id}`,
        headers: { authorization: `Bearer ${key}` },
      });
      return (JSON.parse(res.body) as { status: string }).status;
    };

    before(async () => {
      t = await openTestDb('postgres');
      const a = await replica();
      await replica();
      const account = await a.services.accounts.createAccount('gate-replicas');
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
        await services.relay?.close();
        await services.runtime.close();
        await services.db.close();
      }
      await t?.cleanup();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    test("a worker's gate closed on one replica ends the take it holds open on another and gates its takes there until opened", async () => {
      const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
      const held = take(b, 'w1');
      await until('the take to wait on replica B', () => b.services.jobs.signals.waiting('work', ep) > 0);
      a.services.workers.gate.close(ep, 'w1');
      await a.services.workers.gate.sent();
      const ended = await held;
      assert.deepEqual(ended.ids, [], 'the open take ended empty');
      assert.ok(ended.ms < TAKE_WAIT_MS / 2, `ended by the closing, not its wait (${Math.round(ended.ms)} ms)`);

      const { id } = await a.services.jobs.client.submit(ep, accountId, { input: { n: 1 } });
      const gated = await take(b, 'w1');
      assert.deepEqual(gated.ids, [], 'gated on B: nothing handed out');
      assert.ok(gated.ms < TAKE_WAIT_MS / 2, 'answered at once');
      assert.equal(await status(id), 'IN_QUEUE');

      a.services.workers.gate.open(ep, 'w1');
      await a.services.workers.gate.sent();
      await until('the gate to open on replica B', () => !b.services.workers.gate.isClosed(ep, 'w1'));
      assert.deepEqual((await take(b, 'w1')).ids, [id], 'opened again: B hands it the job');
    });

    test("a replica that may have missed words opens the gates it closed on others' word, and keeps its own", async () => {
      const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
      a.services.workers.gate.close(ep, 'w2');
      b.services.workers.gate.close(ep, 'w3');
      await a.services.workers.gate.sent();
      await b.services.workers.gate.sent();
      await until('A’s word to reach B', () => b.services.workers.gate.isClosed(ep, 'w2'));
      await until('B’s word to reach A', () => a.services.workers.gate.isClosed(ep, 'w3'));
      // a word from A that B might have missed: B re-reads rather than trust its closed gates
      b.services.workers.gate.forgetRelayed();
      assert.equal(b.services.workers.gate.isClosed(ep, 'w2'), false, 'closed on A’s word: opened');
      assert.equal(b.services.workers.gate.isClosed(ep, 'w3'), true, 'its own: kept');
      b.services.workers.gate.open(ep, 'w3');
      a.services.workers.gate.open(ep, 'w2');
      await b.services.workers.gate.sent();
      await until('B’s opening to reach A', () => !a.services.workers.gate.isClosed(ep, 'w3'));
    });
  },
);
