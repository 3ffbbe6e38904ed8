/**
 * A pod's own stop and termination times (`stopAfter`, `terminateAfter`; runpodctl's `pod create
 * --stop-after/--terminate-after`): accepted by REST v2, REST v1 and GraphQL creates, stored, and
 * acted on when the injected clock reaches them — also by a server started again over the same
 * database — on SQLite and on PostgreSQL. And runpodctl's `create pod --cost` (`deployCost`).
 */
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { FakeClock } from '../src/domain/clock.js';
import { createServices } from '../src/main.js';
import { buildApp } from '../src/http/app.js';
import { openDatabase } from '../src/store/database.js';
import { clientDocument } from './fixtures/client-graphql-documents.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { eventually } from './support/eventually.js';
import { dialects, json, openTestDb, startListeningServer } from './support/harness.js';
import { RTX_4090, startOrchestratorApp, type OrchestratorApp } from './support/orchestrator-app.js';

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

for (const { name: dialect, skip } of dialects()) {
  describe(`pods’ own stop and termination times on ${dialect}`, { skip }, () => {
    let o: OrchestratorApp;
    let alice: { accountId: string; key: string };

    before(async () => {
      o = await startOrchestratorApp(dialect);
      alice = await o.t.newAccount('deadline-alice');
    });
    after(() => o?.close());

    const status = async (id: string) => (await o.rest(alice.key, 'GET', `/v2/pods/${id}`)).body;
    const sweep = () => o.t.services.podDeadlines.sweep();

    test('a pod stops itself when the clock reaches stopAfter, saying why; started again it runs on; at terminateAfter it terminates', async () => {
      const now = o.clock.now();
      const created = await o.rest(alice.key, 'POST', '/v2/pods', {
        name: 'timed',
        image: 'ubuntu:22.04',
        gpu: { id: RTX_4090 },
        stopAfter: iso(now + HOUR),
        terminateAfter: iso(now + 3 * HOUR),
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const id = created.body.id as string;
      await o.t.services.podController.idle(id);
      o.clock.advance(HOUR - 1);
      await sweep();
      assert.equal((await status(id)).status, 'RUNNING', 'a millisecond early nothing happens');
      o.clock.advance(1);
      await sweep();
      const stopped = await status(id);
      assert.equal(stopped.status, 'EXITED');
      assert.equal(stopped.statusReason, `stopped at its stopAfter time ${iso(now + HOUR)}`);
      assert.equal(stopped.cost, 0);
      const started = await o.rest(alice.key, 'POST', `/v2/pods/${id}/action`, { action: 'start' });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      await o.t.services.podController.idle(id);
      o.clock.advance(HOUR);
      await sweep();
      assert.equal((await status(id)).status, 'RUNNING', 'a stop time acted on is not acted on again');
      o.clock.advance(HOUR);
      await sweep();
      assert.equal((await status(id)).status, 'TERMINATED');
      assert.deepEqual(
        o.runtime.removed.filter((r) => r === id),
        [id],
      );
    });

    test('terminateAfter terminates a stopped pod too; a pod terminated by hand before its time is left alone', async () => {
      const now = o.clock.now();
      const make = async (name: string) => {
        const res = await o.rest(alice.key, 'POST', '/v2/pods', {
          name,
          image: 'ubuntu:22.04',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          terminateAfter: iso(now + HOUR),
        });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        await o.t.services.podController.idle(res.body.id);
        return res.body.id as string;
      };
      const stoppedFirst = await make('stopped-first');
      const terminatedFirst = await make('terminated-first');
      assert.equal(
        (await o.rest(alice.key, 'POST', `/v2/pods/${stoppedFirst}/action`, { action: 'stop' })).status,
        200,
      );
      assert.equal((await o.rest(alice.key, 'DELETE', `/v2/pods/${terminatedFirst}`)).status, 204);
      const terminatedAt = (await status(terminatedFirst)).statusChangedAt;
      o.clock.advance(HOUR);
      await sweep();
      assert.equal((await status(stoppedFirst)).status, 'TERMINATED');
      assert.equal((await status(terminatedFirst)).statusChangedAt, terminatedAt);
    });

    test('runpodctl’s pod create sends stopAfter and terminateAfter over GraphQL; REST v1 takes them too; each is acted on', async () => {
      const now = o.clock.now();
      const gql = await o.gql(alice.key, clientDocument('runpodctl', 'create-pod-gql-client'), {
        input: {
          cloudType: 'SECURE',
          containerDiskInGb: 20,
          gpuCount: 1,
          gpuTypeId: RTX_4090,
          imageName: 'ubuntu:22.04',
          name: 'ctl-timed',
          startSsh: true,
          stopAfter: iso(now + HOUR).replace('.000Z', 'Z'),
          terminateAfter: iso(now + 2 * HOUR).replace('.000Z', 'Z'),
        },
      });
      assert.equal(gql.errors, undefined, JSON.stringify(gql.errors));
      const gqlId = gql.data.podFindAndDeployOnDemand.id as string;
      const v1 = await o.rest(alice.key, 'POST', '/v1/pods', {
        name: 'v1-timed',
        imageName: 'ubuntu:22.04',
        gpuTypeIds: [RTX_4090],
        stopAfter: iso(now + HOUR),
      });
      assert.equal(v1.status, 201, JSON.stringify(v1.body));
      for (const id of [gqlId, v1.body.id]) await o.t.services.podController.idle(id);
      o.clock.advance(HOUR);
      await sweep();
      assert.equal((await status(gqlId)).status, 'EXITED');
      assert.equal((await status(v1.body.id)).status, 'EXITED');
      o.clock.advance(HOUR);
      await sweep();
      assert.equal((await status(gqlId)).status, 'TERMINATED');
      assert.equal((await status(v1.body.id)).status, 'EXITED');
    });

    test('a time that has passed, or is not a date-time, is refused and nothing is created', async () => {
      const before = (await o.rest(alice.key, 'GET', '/v2/pods')).body.pods.length;
      const past = await o.rest(alice.key, 'POST', '/v2/pods', {
        name: 'late',
        image: 'ubuntu:22.04',
        gpu: { id: RTX_4090 },
        stopAfter: iso(o.clock.now() - 1000),
      });
      assert.equal(past.status, 400);
      assert.match(past.body.detail, /^stopAfter .* is not in the future \(the server's time is /);
      const notTime = await o.rest(alice.key, 'POST', '/v2/pods', {
        name: 'late',
        image: 'ubuntu:22.04',
        gpu: { id: RTX_4090 },
        terminateAfter: 'soon',
      });
      assert.equal(notTime.status, 422, JSON.stringify(notTime.body));
      const gql = await o.gql(alice.key, clientDocument('runpodctl', 'create-pod-gql-client'), {
        input: { gpuCount: 1, gpuTypeId: RTX_4090, imageName: 'ubuntu:22.04', terminateAfter: 'soon' },
      });
      assert.match(gql.errors?.[0]?.message ?? '', /^terminateAfter "soon" is not a date-time/);
      assert.equal((await o.rest(alice.key, 'GET', '/v2/pods')).body.pods.length, before);
    });

    test('runpodctl’s create pod --cost (deployCost): a pod within it is placed; one costing more is refused as no capacity is', async () => {
      const create = (deployCost: number) =>
        o.gql(alice.key, clientDocument('runpodctl', 'create-pod'), {
          input: { cloudType: 'SECURE', gpuCount: 2, gpuTypeId: RTX_4090, imageName: 'ubuntu:22.04', deployCost },
        });
      const refused = await create(1.37);
      assert.equal(refused.errors?.[0]?.extensions?.code, 'NO_CAPACITY');
      assert.match(refused.errors[0].message, /^No placement fits deployCost \$1\.37\/hr: the pod costs \$1\.38\/hr/);
      const placed = await create(1.38);
      assert.equal(placed.errors, undefined, JSON.stringify(placed.errors));
      assert.equal(placed.data.podFindAndDeployOnDemand.costPerHr, 1.38);
      const negative = await create(-1);
      assert.equal(negative.errors?.[0]?.extensions?.code, 'BAD_REQUEST');
    });

    test('the times are stored: a server started again over the same database acts on one that came while it was down', async () => {
      const testDb = await openTestDb(dialect);
      const configPath = join(testDb.dataDir, 'config.json');
      writeFileSync(configPath, '{}');
      const config = loadConfig({
        env: { GANTRY_DATA_DIR: testDb.dataDir, GANTRY_CONFIG: configPath, GANTRY_LOG_LEVEL: 'silent' },
      });
      const clock = new FakeClock(Date.parse('2026-07-01T10:00:00Z'));
      const logger = pino({ level: 'silent' });
      const first = await createServices(config, { db: testDb.db, runtime: new FakeRuntime(), clock, logger });
      const account = await first.accounts.createAccount('restart');
      const { key } = await first.accounts.createKey(account.id, { scope: 'write' });
      const app = await buildApp(first, { logger: false });
      const res = await app.inject({
        method: 'POST',
        url: '/v2/pods',
        headers: { authorization: `Bearer ${key}` },
        payload: { name: 'outlives', image: 'ubuntu:22.04', gpu: { id: RTX_4090 }, stopAfter: iso(clock.now() + HOUR) },
      });
      assert.equal(res.statusCode, 201, res.body);
      const id = json(res).id as string;
      await first.podController.idle(id);
      // the server goes away before the time comes
      await app.close();
      await first.podController.stop();
      clock.advance(2 * HOUR);
      const db = await openDatabase({ url: testDb.url, dataDir: testDb.dataDir, schema: testDb.schema });
      try {
        const second = await createServices(config, { db, runtime: new FakeRuntime(), clock, logger });
        await second.leases.start();
        await second.podDeadlines.sweep();
        const pod = await second.pods.get(account.id, id);
        assert.equal(pod.status, 'EXITED');
        assert.equal(pod.statusReason, `stopped at its stopAfter time ${iso(clock.now() - HOUR)}`);
        await second.podController.stop();
        await second.leases.close();
      } finally {
        await db.close();
        await testDb.cleanup();
      }
    });
  });
}

test('a started server runs the sweep on its own: the injected clock past stopAfter stops the pod', async () => {
  const clock = new FakeClock(Date.now());
  const server = await startListeningServer({ pods: { reconcileIntervalMs: 100 } }, { clock });
  try {
    const { accounts } = server.server.services;
    const account = await accounts.createAccount('sweeper');
    const { key } = await accounts.createKey(account.id, { scope: 'write' });
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return (await res.json()) as Record<string, any>;
    };
    const pod = await call('POST', '/v2/pods', {
      name: 'swept',
      image: 'ubuntu:22.04',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      stopAfter: iso(clock.now() + HOUR),
    });
    assert.equal(typeof pod.id, 'string', JSON.stringify(pod));
    clock.advance(HOUR);
    await eventually(
      'the pod to stop at its time',
      async () => (await call('GET', `/v2/pods/${pod.id}`)).status === 'EXITED',
    );
  } finally {
    await server.close();
  }
});
