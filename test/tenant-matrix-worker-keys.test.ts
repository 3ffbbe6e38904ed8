// The key a launched worker finds in its environment is read by the tenant's own code. It may call
// only its endpoint's worker protocol, as its own worker, under the worker-protocol limits; it dies
// with the worker, with the endpoint, and with the server that minted it.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { FakeClock } from '../src/domain/clock.js';
import { Autoscaler } from '../src/serverless/autoscaler.js';
import { AutoscalerStore } from '../src/store/autoscaler-store.js';

for (const { name, skip } of dialects()) {
  describe(`a launched worker's key, on ${name}`, { skip }, () => {
    let t: TestApp;
    let clock: FakeClock;
    let runtime: FakeRuntime;
    let a: { accountId: string; key: string };
    let b: { accountId: string; key: string };
    let templateA: string;

    const call = (key: string, method: 'GET' | 'POST', path: string, body?: unknown) =>
      t.request(null, method, path, body === undefined ? undefined : JSON.stringify(body), {
        authorization: key,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      });
    const endpoint = async (accountId: string, templateId: string, workersMin = 1) =>
      (
        await t.services.endpoints.create(accountId, {
          name: `ep-${Math.random()}`,
          templateId,
          gpuIds: 'ADA_24',
          workersMin,
          workersMax: 2,
          idleTimeout: 5,
        })
      ).id;
    /** An endpoint of A with one launched worker: its id and the key in its environment. */
    async function launched(): Promise<{ ep: string; workerId: string; workerKey: string }> {
      const ep = await endpoint(a.accountId, templateA);
      await t.services.autoscaler.tick(clock.now());
      const [workerId] = t.services.autoscaler.workerIds(ep);
      assert.ok(workerId);
      return { ep, workerId, workerKey: runtime.specs.get(workerId)!.platformEnv.RUNPOD_AI_API_KEY! };
    }

    before(async () => {
      clock = new FakeClock(Date.UTC(2026, 0, 1));
      runtime = new FakeRuntime();
      t = await createTestApp({ dialect: name, clock, runtime, file: { jobs: { takeWaitMs: 20, stopWaitMs: 20 } } });
      await t.services.autoscaler.start({ loop: false });
      a = await t.newAccount('keys-a');
      b = await t.newAccount('keys-b');
      templateA = (
        await t.services.templates.create(a.accountId, { name: 'tpl-a', imageName: 'worker:dev', isServerless: true })
      ).id;
    });
    after(async () => {
      await t?.services.autoscaler.stop();
      await t?.close();
    });

    test("it calls its own endpoint's worker protocol as its own worker, and is not rate-limit exempt", async () => {
      const { ep, workerId, workerKey } = await launched();
      const principal = await t.services.accounts.authenticate(workerKey);
      assert.deepEqual(
        {
          scope: principal?.scope,
          endpointId: principal?.endpointId,
          workerId: principal?.workerId,
          exempt: principal?.rateLimitExempt,
        },
        { scope: 'worker', endpointId: ep, workerId, exempt: false },
      );
      assert.equal((await call(workerKey, 'GET', `/v2/${ep}/ping/${workerId}`)).statusCode, 200);
      assert.equal((await call(workerKey, 'GET', `/v2/${ep}/job-take/${workerId}?job_in_progress=0`)).statusCode, 204);
      assert.equal((await call(workerKey, 'GET', `/v2/${ep}/job-stop/${workerId}`)).statusCode, 204);
    });

    test('anything else answers 403: REST, GraphQL, the job API, another endpoint of its account, another account, another worker id', async () => {
      const { ep, workerId, workerKey } = await launched();
      const sibling = await endpoint(a.accountId, templateA, 0);
      const templateB = (
        await t.services.templates.create(b.accountId, { name: 'tpl-b', imageName: 'worker:dev', isServerless: true })
      ).id;
      const foreign = await endpoint(b.accountId, templateB, 0);
      const refused = {
        'GET /v2/pods': await call(workerKey, 'GET', '/v2/pods'),
        'GET /v2/serverless': await call(workerKey, 'GET', '/v2/serverless'),
        'POST /v2/pods': await call(workerKey, 'POST', '/v2/pods', {
          name: 'x',
          image: 'ubuntu:22.04',
          gpu: { id: 'NVIDIA GeForce RTX 4090' },
        }),
        'POST /graphql': await call(workerKey, 'POST', '/graphql', { query: '{ myself { id endpoints { id } } }' }),
        'GET /graphql?api_key=': await t.request(
          null,
          'GET',
          `/graphql?api_key=${workerKey}&query=${encodeURIComponent('{ myself { id } }')}`,
        ),
        'own /run': await call(workerKey, 'POST', `/v2/${ep}/run`, { input: {} }),
        'own /health': await call(workerKey, 'GET', `/v2/${ep}/health`),
        'own /purge-queue': await call(workerKey, 'POST', `/v2/${ep}/purge-queue`),
        'sibling /run': await call(workerKey, 'POST', `/v2/${sibling}/run`, { input: {} }),
        'sibling job-take': await call(workerKey, 'GET', `/v2/${sibling}/job-take/${workerId}`),
        'foreign job-take': await call(workerKey, 'GET', `/v2/${foreign}/job-take/${workerId}`),
        'own job-take as another worker': await call(workerKey, 'GET', `/v2/${ep}/job-take/someone-else`),
        'own ping as another worker': await call(workerKey, 'GET', `/v2/${ep}/ping/someone-else`),
      };
      for (const [what, res] of Object.entries(refused)) {
        assert.equal(res.statusCode, 403, `${what}: ${res.body}`);
        assert.equal(json(res).code, 'FORBIDDEN', what);
        assert.match(json(res).detail, /worker/, what);
      }
    });

    test('it is revoked when its worker stops', async () => {
      const { ep, workerId, workerKey } = await launched();
      await t.services.endpoints.update(a.accountId, ep, { workersMin: 0 });
      await t.services.workers.seen(ep, workerId, false);
      await t.services.autoscaler.tick(clock.now()); // ready: idle time counts from here
      clock.advance(6_000);
      await t.services.autoscaler.tick(clock.now());
      assert.deepEqual(t.services.autoscaler.workerIds(ep), [], 'idled out');
      assert.equal((await call(workerKey, 'GET', `/v2/${ep}/ping/${workerId}`)).statusCode, 401);
    });

    test('every key bound to an endpoint is revoked when the endpoint is deleted, before any autoscaler pass', async () => {
      const { ep, workerId, workerKey } = await launched();
      const attached = await t.services.accounts.createKey(a.accountId, { scope: 'worker', endpointId: ep });
      assert.equal(
        (await call(attached.key, 'GET', `/v2/${ep}/ping/local-1`)).statusCode,
        200,
        'a key bound to the endpoint only serves any worker id there',
      );
      await t.services.endpoints.update(a.accountId, ep, { workersMin: 0, workersMax: 0 });
      assert.equal((await t.request(a.key, 'DELETE', `/v2/serverless/${ep}`)).statusCode, 204);
      assert.equal((await call(workerKey, 'GET', `/v2/${ep}/ping/${workerId}`)).statusCode, 401);
      assert.equal((await call(attached.key, 'GET', `/v2/${ep}/ping/local-1`)).statusCode, 401);
      await t.services.autoscaler.tick(clock.now());
      assert.equal(runtime.specs.has(workerId), false, 'the deleted endpoint’s worker is stopped at the next pass');
    });

    test('a server starting over the same database revokes the keys of workers a crashed server launched', async () => {
      const { ep, workerId, workerKey } = await launched();
      // The crashed server's autoscaler never ran its stop: a new one starts with nothing running.
      const { services } = t;
      const restarted = new Autoscaler({
        store: new AutoscalerStore(services.db),
        clock,
        runtime: new FakeRuntime(),
        inventory: services.inventory,
        jobs: services.jobs,
        workers: services.workers,
        endpoints: services.endpoints,
        accounts: services.accounts,
        logger: pino({ level: 'silent' }),
        config: { catalog: services.config.catalog, publicUrl: 'http://127.0.0.1:1' },
      });
      await restarted.start({ loop: false });
      try {
        assert.equal((await call(workerKey, 'GET', `/v2/${ep}/ping/${workerId}`)).statusCode, 401);
        const live = await services.db.kysely
          .selectFrom('api_keys')
          .select('id')
          .where('scope', '=', 'worker')
          .where('worker_id', 'is not', null)
          .where('revoked_at', 'is', null)
          .execute();
        assert.deepEqual(live, [], 'no launched worker key is left valid');
      } finally {
        await restarted.stop();
      }
    });
  });
}
