import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';

let t: TestApp;
let alice: { accountId: string; key: string; readKey: string };
let bob: { accountId: string; key: string; readKey: string };
let workerTemplate: string;
let podTemplate: string;
let volumeId: string;

before(async () => {
  t = await createTestApp();
  alice = await t.newAccount('alice');
  bob = await t.newAccount('bob');
  workerTemplate = (
    await t.services.templates.create(alice.accountId, {
      name: 'worker',
      imageName: 'my-worker:dev',
      args: 'python -u handler.py',
      ports: ['8000/http'],
      env: { MODEL: 'small', LEVEL: 'info' },
      isServerless: true,
    })
  ).id;
  podTemplate = (await t.services.templates.create(alice.accountId, { name: 'pod tpl', imageName: 'ubuntu:22.04' })).id;
  volumeId = (await t.services.volumes.create(alice.accountId, { name: 'data', size: 10, dataCenterId: 'EU-RO-1' })).id;
});
after(() => t.close());

const create = (key: string, body: Record<string, unknown>) => t.request(key, 'POST', '/v2/serverless', body);
const minimal = () => ({ name: 'ep', templateId: workerTemplate, gpuIds: 'ADA_24' });

describe('REST serverless endpoints', () => {
  test('a created endpoint is listed with the spec 2.10 fields, its template’s container settings and its request URLs', async () => {
    const res = await create(alice.key, {
      ...minimal(),
      name: 'sdxl',
      gpuIds: 'ADA_24,AMPERE_24',
      gpuCount: 2,
      workersMax: 5,
      locations: 'RO',
      networkVolumeId: volumeId,
      env: { LEVEL: 'debug' },
      allowedCudaVersions: ['12.4'],
    });
    assert.equal(res.statusCode, 201, res.body);
    const created = json(res);
    const list = json(await t.request(alice.key, 'GET', '/v2/serverless'));
    assert.equal(list.endpoints.length, 1);
    const e = list.endpoints[0];
    assert.deepEqual(e, created);
    const base = `${t.config.server.publicUrl}/v2/${e.id}`;
    assert.deepEqual(e.requestUrls, {
      run: `${base}/run`,
      runSync: `${base}/runsync`,
      status: `${base}/status/{job_id}`,
      stream: `${base}/stream/{job_id}`,
      cancel: `${base}/cancel/{job_id}`,
      retry: `${base}/retry/{job_id}`,
      purgeQueue: `${base}/purge-queue`,
      health: `${base}/health`,
    });
    assert.equal(e.name, 'sdxl');
    assert.equal(e.type, 'QUEUE');
    assert.equal(e.image, 'my-worker:dev');
    assert.equal(e.args, 'python -u handler.py');
    assert.equal(e.disk, 20);
    assert.deepEqual(e.ports, ['8000/http']);
    assert.deepEqual(e.env, { MODEL: 'small', LEVEL: 'debug' });
    assert.equal(e.registry, null);
    assert.deepEqual(e.gpu, { pools: ['ADA_24', 'AMPERE_24'], count: 2 });
    assert.deepEqual(e.workers, { min: 0, max: 5, idleTimeout: 5 });
    assert.deepEqual(e.scaling, { type: 'QUEUE_DELAY', queueDelay: 4 });
    assert.deepEqual(e.dataCenterIds, ['EU-RO-1']);
    assert.deepEqual(e.networkVolumes, [volumeId]);
    assert.equal(e.timeout, 600000);
    assert.equal(e.flashboot, 'OFF');
    assert.deepEqual(e.allowedCudaVersions, ['12.4']);
    assert.ok(!Number.isNaN(Date.parse(e.createdAt)));
  });

  test('without locations every data center is listed; REQUEST_COUNT scaling is shown as requestCount', async () => {
    const e = json(
      await create(alice.key, {
        ...minimal(),
        scalerType: 'REQUEST_COUNT',
        scalerValue: 9,
        flashboot: 'FLASHBOOT',
        type: 'LB',
      }),
    );
    assert.deepEqual(
      e.dataCenterIds,
      t.config.catalog.dataCenters.map((d) => d.id),
    );
    assert.deepEqual(e.scaling, { type: 'REQUEST_COUNT', requestCount: 9 });
    assert.equal(e.flashboot, 'FLASHBOOT');
    assert.equal(e.type, 'LOAD_BALANCER');
  });

  test('every region option of the spec is accepted, one with no data center here listing none', async () => {
    const res = await create(alice.key, { ...minimal(), locations: 'FR,GB,NO' });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(json(res).dataCenterIds, []);
  });

  test('GET one and PATCH change only what is sent', async () => {
    const e = json(await create(alice.key, { ...minimal(), workersMax: 4, idleTimeout: 60 }));
    assert.deepEqual(json(await t.request(alice.key, 'GET', `/v2/serverless/${e.id}`)), e);
    const patched = await t.request(alice.key, 'PATCH', `/v2/serverless/${e.id}`, {
      name: 'renamed',
      gpuIds: ['AMPERE_80'],
    });
    assert.equal(patched.statusCode, 200, patched.body);
    const p = json(patched);
    assert.equal(p.name, 'renamed');
    assert.deepEqual(p.gpu.pools, ['AMPERE_80']);
    assert.deepEqual(p.workers, { min: 0, max: 4, idleTimeout: 60 });
    assert.equal((await t.services.endpoints.get(alice.accountId, e.id)).version, 2);
  });

  test('each broken field rule answers 422 naming the field and what is valid', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [
        { gpuIds: 'RTX_9000' },
        /gpuIds: "RTX_9000" is not a GPU pool; valid pools: AMPERE_16, AMPERE_24, ADA_24, AMPERE_48, ADA_48_PRO, AMPERE_80, ADA_80_PRO/,
      ],
      [{ gpuIds: '' }, /gpuIds: is required/],
      [{ workersMin: -1 }, /workersMin: must be between 0 and 100/],
      [{ workersMin: 3, workersMax: 2 }, /workersMax: must be at least workersMin \(3\)/],
      [{ workersMax: 101 }, /workersMax: must be between 0 and 100/],
      [{ scalerValue: 0 }, /scalerValue: must be between 1/],
      [{ idleTimeout: 3601 }, /idleTimeout: must be between 0 and 3600 seconds/],
      [
        { locations: 'US,ZZ' },
        /locations: "ZZ" is not a known region; valid: US, RO, CZ, FR, GB, NO \(empty means any\)/,
      ],
      [{ allowedCudaVersions: ['12'] }, /allowedCudaVersions: "12" must be "<major>.<minor>"/],
      [{ executionTimeoutMs: 1000 }, /executionTimeoutMs: must be between 5000 and 604800000/],
      [{ executionTimeoutMs: 8 * 24 * 3600 * 1000 }, /executionTimeoutMs/],
      [{ gpuCount: 0 }, /gpuCount: must be between 1 and 16/],
      [{ name: '   ' }, /name: is required/],
    ];
    for (const [body, detail] of cases) {
      const res = await create(alice.key, { ...minimal(), ...body });
      assert.equal(res.statusCode, 422, `${JSON.stringify(body)} → ${res.statusCode}`);
      assert.match(json(res).detail, detail);
      assert.ok(json(res).errors.length >= 1);
    }
  });

  test('schema-level mistakes (unknown property, wrong type, bad enum) answer 422 per violation', async () => {
    const res = await create(alice.key, { ...minimal(), scalerType: 'FAST', colour: 'red', workersMax: 'many' });
    assert.equal(res.statusCode, 422);
    assert.equal(json(res).errors.length, 3);
  });

  test('a pod template is refused with 400 saying a serverless template is needed', async () => {
    const res = await create(alice.key, { ...minimal(), templateId: podTemplate });
    assert.equal(res.statusCode, 400);
    assert.equal(json(res).code, 'NOT_SERVERLESS_TEMPLATE');
    assert.match(json(res).detail, /is a pod template; an endpoint needs a serverless template/);
  });

  test('an unknown or another account’s template is 404; another account’s volume is 400 UNKNOWN_REFERENCE', async () => {
    const unknown = await create(alice.key, { ...minimal(), templateId: 'nosuchtemplate' });
    assert.equal(unknown.statusCode, 404);
    assert.match(json(unknown).detail, /nosuchtemplate/);
    assert.equal((await create(bob.key, minimal())).statusCode, 404);
    const volume = await create(bob.key, {
      ...minimal(),
      templateId: (
        await t.services.templates.create(bob.accountId, { name: 'w', imageName: 'w:1', isServerless: true })
      ).id,
      networkVolumeId: volumeId,
    });
    assert.equal(volume.statusCode, 400);
    assert.equal(json(volume).code, 'UNKNOWN_REFERENCE');
  });

  test('another account’s endpoint is 404 on every route, and never listed', async () => {
    const e = json(await create(alice.key, minimal()));
    for (const [method, url, body] of [
      ['GET', `/v2/serverless/${e.id}`, undefined],
      ['PATCH', `/v2/serverless/${e.id}`, { name: 'x' }],
      ['DELETE', `/v2/serverless/${e.id}`, undefined],
      ['GET', `/v2/serverless/${e.id}/workers`, undefined],
    ] as const) {
      const res = await t.request(bob.key, method, url, body);
      assert.equal(res.statusCode, 404, `${method} ${url}`);
    }
    assert.ok(
      !json(await t.request(bob.key, 'GET', '/v2/serverless')).endpoints.some((x: { id: string }) => x.id === e.id),
    );
  });

  test('delete is refused while workersMin or workersMax is not 0, then answers 204', async () => {
    const e = json(await create(alice.key, { ...minimal(), workersMin: 1, workersMax: 2 }));
    const refused = await t.request(alice.key, 'DELETE', `/v2/serverless/${e.id}`);
    assert.equal(refused.statusCode, 400);
    assert.equal(json(refused).code, 'ENDPOINT_HAS_WORKERS');
    assert.match(json(refused).detail, /workersMin 1, workersMax 2\); set both to 0 first/);
    await t.request(alice.key, 'PATCH', `/v2/serverless/${e.id}`, { workersMin: 0, workersMax: 0 });
    assert.equal((await t.request(alice.key, 'DELETE', `/v2/serverless/${e.id}`)).statusCode, 204);
    assert.equal((await t.request(alice.key, 'GET', `/v2/serverless/${e.id}`)).statusCode, 404);
  });

  test('a template bound to an endpoint cannot be deleted until the endpoint is gone', async () => {
    const tpl = (
      await t.services.templates.create(alice.accountId, { name: 'bound', imageName: 'w:2', isServerless: true })
    ).id;
    const e = json(await create(alice.key, { ...minimal(), name: 'uses-bound', templateId: tpl, workersMax: 0 }));
    const refused = await t.request(alice.key, 'DELETE', `/v2/templates/${tpl}`);
    assert.equal(refused.statusCode, 400);
    assert.equal(json(refused).code, 'TEMPLATE_IN_USE');
    assert.match(json(refused).detail, new RegExp(`used by serverless endpoint "uses-bound" \\(${e.id}\\)`));
    assert.equal((await t.request(alice.key, 'DELETE', `/v2/serverless/${e.id}`)).statusCode, 204);
    assert.equal((await t.request(alice.key, 'DELETE', `/v2/templates/${tpl}`)).statusCode, 204);
  });

  test('the workers list reads the workers table', async () => {
    const e = json(await create(alice.key, minimal()));
    assert.deepEqual(json(await t.request(alice.key, 'GET', `/v2/serverless/${e.id}/workers`)), { workers: [] });
    await t.services.db.kysely
      .insertInto('workers')
      .values({
        id: 'w1',
        endpoint_id: e.id,
        status: 'RUNNING',
        host_id: null,
        last_ping_at: 2_000,
        created_at: 1_000,
        updated_at: 1_000,
      })
      .execute();
    assert.deepEqual(json(await t.request(alice.key, 'GET', `/v2/serverless/${e.id}/workers`)), {
      workers: [
        {
          id: 'w1',
          status: 'RUNNING',
          createdAt: new Date(1_000).toISOString(),
          lastPingAt: new Date(2_000).toISOString(),
        },
      ],
    });
  });

  test('a read key can list but not create; the routes are in the OpenAPI document', async () => {
    assert.equal((await t.request(alice.readKey, 'GET', '/v2/serverless')).statusCode, 200);
    assert.equal((await create(alice.readKey, minimal())).statusCode, 403);
    const doc = json(await t.request(null, 'GET', '/v2/openapi.json'));
    for (const p of ['/v2/serverless', '/v2/serverless/{id}', '/v2/serverless/{id}/workers'])
      assert.ok(doc.paths[p], p);
  });
});
