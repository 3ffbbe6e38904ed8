import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { WorkerStatus } from '../src/domain/worker-state.js';
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
const minimal = (): Record<string, unknown> => ({
  name: 'ep',
  type: 'QUEUE',
  templateId: workerTemplate,
  gpu: { pools: ['ADA_24'] },
  scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
});

describe('REST serverless endpoints', () => {
  test('a created endpoint is listed with the spec 2.10 fields, its template’s container settings, its request URLs and the v2 defaults', async () => {
    const res = await create(alice.key, {
      ...minimal(),
      name: 'sdxl',
      gpu: { pools: ['ADA_24', 'AMPERE_24'], count: 2, allowedCudaVersions: ['12.4'] },
      workers: { max: 5 },
      dataCenterIds: ['EU-RO-1'],
      networkVolumes: [volumeId],
      env: { LEVEL: 'debug' },
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
    assert.deepEqual(e.gpu, {
      pools: ['ADA_24', 'AMPERE_24'],
      count: 2,
      allowedCudaVersions: ['12.4'],
      minCudaVersion: null,
    });
    assert.equal(e.cpu, undefined);
    assert.deepEqual(e.workers, { min: 0, max: 5, idleTimeout: 10 });
    assert.deepEqual(e.scaling, { type: 'QUEUE_DELAY', queueDelay: 4 });
    assert.deepEqual(e.dataCenterIds, ['EU-RO-1']);
    assert.deepEqual(e.networkVolumes, [volumeId]);
    assert.equal(e.timeout, 300000);
    assert.equal(e.flashboot, 'OFF');
    assert.deepEqual(e.allowedCudaVersions, ['12.4']);
    assert.ok(!Number.isNaN(Date.parse(e.createdAt)));
  });

  test('without dataCenterIds every data center is listed; REQUEST_COUNT scaling is shown as requestCount', async () => {
    const e = json(
      await create(alice.key, {
        ...minimal(),
        scaling: { type: 'REQUEST_COUNT', requestCount: 9 },
        flashboot: 'FLASHBOOT',
        type: 'LOAD_BALANCER',
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

  test('dataCenterIds constrain placement by the country of the data centers named', async () => {
    const res = await create(alice.key, { ...minimal(), dataCenterIds: ['US-TX-3'] });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(json(res).dataCenterIds, ['US-TX-3', 'US-CA-2']);
  });

  test('GET one and PATCH change only what is sent', async () => {
    const e = json(await create(alice.key, { ...minimal(), workers: { max: 4, idleTimeout: 60 } }));
    assert.deepEqual(json(await t.request(alice.key, 'GET', `/v2/serverless/${e.id}`)), e);
    const patched = await t.request(alice.key, 'PATCH', `/v2/serverless/${e.id}`, {
      name: 'renamed',
      gpu: { pools: ['AMPERE_80'] },
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
        { gpu: { pools: ['RTX_9000'] } },
        /gpu.pools: "RTX_9000" is not a GPU pool; valid pools: AMPERE_16, AMPERE_24, ADA_24, AMPERE_48, ADA_48_PRO, AMPERE_80, ADA_80_PRO/,
      ],
      [{ workers: { min: 3, max: 2 } }, /workers.max: must be at least workers.min \(3\)/],
      [{ workers: { max: 101 } }, /workers.max: must be between 0 and 100/],
      [{ dataCenterIds: ['US-TX-3', 'ZZ-1'] }, /dataCenterIds: "ZZ-1" is not a data center; valid: US-TX-3/],
      [{ timeout: 1000 }, /timeout: must be between 5000 and 604800000/],
      [{ timeout: 8 * 24 * 3600 * 1000 }, /timeout/],
      [{ name: '   ' }, /name: is required/],
      [{ scaling: { type: 'QUEUE_DELAY', queueDelay: 2.5 } }, /scaling.queueDelay: must be whole seconds/],
      [{ type: 'LOAD_BALANCER' }, /scaling.type: a LOAD_BALANCER endpoint scales on REQUEST_COUNT/],
      [
        { scaling: { type: 'REQUEST_COUNT', requestCount: 2 }, workers: { idleTimeout: 5 } },
        /workers.idleTimeout: does not apply to a QUEUE endpoint scaling on REQUEST_COUNT/,
      ],
      [{ gpu: { pools: ['ADA_24'], excludedTypes: ['NVIDIA L40'] } }, /gpu.excludedTypes: not offered/],
      [{ flashboot: 'PRIORITY_FLASHBOOT' }, /flashboot: PRIORITY_FLASHBOOT is not offered/],
      [{ templateId: undefined }, /image: is required unless templateId is set/],
    ];
    for (const [body, detail] of cases) {
      const res = await create(alice.key, { ...minimal(), ...body });
      assert.equal(res.statusCode, 422, `${JSON.stringify(body)} → ${res.statusCode}`);
      assert.match(json(res).detail, detail);
      assert.ok(json(res).errors.length >= 1);
    }
  });

  test('schema-level mistakes (unknown property, wrong type, bad enum) answer 422 per violation', async () => {
    const res = await create(alice.key, {
      ...minimal(),
      type: 'FAST',
      colour: 'red',
      workers: { max: 'many' },
    });
    assert.equal(res.statusCode, 422);
    assert.equal(json(res).errors.length, 3);
    for (const field of ['gpu', 'scaling', 'type', 'name'] as const) {
      const { [field]: _dropped, ...rest } = minimal();
      const missing = await create(alice.key, rest);
      assert.equal(missing.statusCode, field === 'gpu' ? 400 : 422, `without ${field}`);
    }
  });

  test('a pod template is refused with 400 saying a serverless template is needed, also under body container fields', async () => {
    for (const body of [{ templateId: podTemplate }, { templateId: podTemplate, image: 'over:1' }]) {
      const res = await create(alice.key, { ...minimal(), ...body });
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(json(res).code, 'NOT_SERVERLESS_TEMPLATE');
      assert.match(json(res).detail, /is a pod template; an endpoint needs a serverless template/);
    }
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
      networkVolumes: [volumeId],
    });
    assert.equal(volume.statusCode, 400);
    assert.match(json(volume).detail, /networkVolumes "/);
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
    const e = json(await create(alice.key, { ...minimal(), workers: { min: 1, max: 2 } }));
    const refused = await t.request(alice.key, 'DELETE', `/v2/serverless/${e.id}`);
    assert.equal(refused.statusCode, 400);
    assert.equal(json(refused).code, 'ENDPOINT_HAS_WORKERS');
    assert.match(json(refused).detail, /workersMin 1, workersMax 2\); set both to 0 first/);
    await t.request(alice.key, 'PATCH', `/v2/serverless/${e.id}`, { workers: { min: 0, max: 0 } });
    assert.equal((await t.request(alice.key, 'DELETE', `/v2/serverless/${e.id}`)).statusCode, 204);
    assert.equal((await t.request(alice.key, 'GET', `/v2/serverless/${e.id}`)).statusCode, 404);
  });

  test('a template bound to an endpoint cannot be deleted until the endpoint is gone', async () => {
    const tpl = (
      await t.services.templates.create(alice.accountId, { name: 'bound', imageName: 'w:2', isServerless: true })
    ).id;
    const e = json(await create(alice.key, { ...minimal(), name: 'uses-bound', templateId: tpl, workers: { max: 0 } }));
    const refused = await t.request(alice.key, 'DELETE', `/v2/templates/${tpl}`);
    assert.equal(refused.statusCode, 400);
    assert.equal(json(refused).code, 'TEMPLATE_IN_USE');
    assert.match(json(refused).detail, new RegExp(`used by serverless endpoint "uses-bound" \\(${e.id}\\)`));
    assert.equal((await t.request(alice.key, 'DELETE', `/v2/serverless/${e.id}`)).statusCode, 204);
    assert.equal((await t.request(alice.key, 'DELETE', `/v2/templates/${tpl}`)).statusCode, 204);
  });

  test('the workers list shows live workers with the version they run, whether it is stale, and a count per status', async () => {
    const e = json(await create(alice.key, minimal()));
    assert.deepEqual(json(await t.request(alice.key, 'GET', `/v2/serverless/${e.id}/workers`)), {
      workers: [],
      summary: { running: 0, idle: 0, initializing: 0, throttled: 0, unhealthy: 0, suspended: 0, total: 0 },
      endpointVersion: 1,
    });
    const insert = (id: string, status: WorkerStatus, version: number | null, createdAt: number) =>
      t.services.db.kysely
        .insertInto('workers')
        .values({
          id,
          endpoint_id: e.id,
          status,
          host_id: null,
          last_ping_at: null,
          created_at: createdAt,
          updated_at: createdAt,
          endpoint_version: version,
          allocation:
            version === null
              ? null
              : JSON.stringify({
                  gpuIndices: [0],
                  vcpus: 4,
                  memoryGb: 16,
                  diskGb: 20,
                  gpuTypeId: 'NVIDIA GeForce RTX 4090',
                  dataCenterId: 'US-TX-3',
                  image: 'my-worker:dev',
                }),
        })
        .execute();
    const now = t.clock.now();
    await insert('w1', 'running', 1, now - 60_000);
    // an env change is a new release (version 2): w1 now runs a stale one
    await t.request(alice.key, 'PATCH', `/v2/serverless/${e.id}`, { env: { LEVEL: 'debug' } });
    await insert('w2', 'initializing', 2, now);
    await insert('w3', 'idle', null, now - 5_000);
    await insert('w4', 'dead', 1, now - 90_000);
    const res = json(await t.request(alice.key, 'GET', `/v2/serverless/${e.id}/workers`));
    assert.equal(res.endpointVersion, 2);
    assert.deepEqual(res.summary, {
      running: 1,
      idle: 1,
      initializing: 1,
      throttled: 0,
      unhealthy: 0,
      suspended: 0,
      total: 3,
    });
    assert.deepEqual(res.workers[0], {
      id: 'w1',
      status: 'RUNNING',
      isStale: true,
      version: 1,
      gpuCount: 1,
      image: 'my-worker:dev',
      uptimeSeconds: 60,
      gpuTypeId: 'NVIDIA GeForce RTX 4090',
      dataCenterId: 'US-TX-3',
      startedAt: new Date(now - 60_000).toISOString(),
      createdAt: new Date(now - 60_000).toISOString(),
      lastPingAt: null,
    });
    assert.deepEqual(
      res.workers.map((w: { id: string; status: string; isStale: boolean; version: number | null }) => [
        w.id,
        w.status,
        w.isStale,
        w.version,
      ]),
      [
        ['w1', 'RUNNING', true, 1],
        ['w3', 'IDLE', false, null],
        ['w2', 'INITIALIZING', false, 2],
      ],
    );
    assert.equal(res.workers[2].uptimeSeconds, null);
    assert.equal(res.workers[2].startedAt, null);
  });

  test('releases: one at creation, one per change of what workers run, none for name or scaling only; newest first with workers per release', async () => {
    const e = json(await create(alice.key, minimal()));
    const history = async () => json(await t.request(alice.key, 'GET', `/v2/serverless/${e.id}/releases`));
    const first = await history();
    assert.equal(first.endpointVersion, 1);
    assert.deepEqual(first.rollout, { inProgress: false, workersOnLatest: 0, workersTotal: 0, percentOnLatest: 0 });
    assert.equal(first.releases.length, 1);
    assert.equal(first.releases[0].version, 1);
    assert.equal(first.releases[0].source, 'MANUAL');
    assert.equal(first.releases[0].buildId, null);
    assert.deepEqual(
      first.releases[0].diff.find((d: { field: string }) => d.field === 'template.imageName'),
      { field: 'template.imageName', old: null, new: 'my-worker:dev' },
    );
    // name-only and scaling-only changes apply at once, without a release
    const patch = (body: Record<string, unknown>) => t.request(alice.key, 'PATCH', `/v2/serverless/${e.id}`, body);
    assert.equal((await patch({ name: 'renamed' })).statusCode, 200);
    assert.equal(
      (await patch({ workers: { max: 7 }, scaling: { type: 'QUEUE_DELAY', queueDelay: 8 } })).statusCode,
      200,
    );
    assert.equal((await patch({ timeout: 60_000 })).statusCode, 200);
    assert.equal((await history()).releases.length, 1);
    await t.services.db.kysely
      .insertInto('workers')
      .values({
        id: 'old',
        endpoint_id: e.id,
        status: 'idle',
        host_id: null,
        last_ping_at: null,
        created_at: 1,
        updated_at: 1,
        endpoint_version: 3,
      })
      .execute();
    const gpu = await patch({ gpu: { count: 2 }, env: { LEVEL: 'debug' } });
    assert.equal(gpu.statusCode, 200, gpu.body);
    await t.services.db.kysely
      .insertInto('workers')
      .values({
        id: 'new',
        endpoint_id: e.id,
        status: 'running',
        host_id: null,
        last_ping_at: null,
        created_at: 2,
        updated_at: 2,
        endpoint_version: 5,
      })
      .execute();
    const after = await history();
    assert.equal(after.endpointVersion, 5);
    assert.deepEqual(
      after.releases.map((r: { version: number; workerCount: number }) => [r.version, r.workerCount]),
      [
        [5, 1],
        [1, 1],
      ],
    );
    assert.deepEqual(after.releases[0].diff, [
      { field: 'gpuCount', old: 1, new: 2 },
      { field: 'env', old: {}, new: { LEVEL: 'debug' } },
    ]);
    assert.deepEqual(after.rollout, { inProgress: true, workersOnLatest: 1, workersTotal: 2, percentOnLatest: 50 });
    assert.equal((await t.request(bob.key, 'GET', `/v2/serverless/${e.id}/releases`)).statusCode, 404);
  });

  test('an endpoint created from an image gets a template of its own, replaced when its container changes and deleted with it', async () => {
    const res = await create(alice.key, {
      ...minimal(),
      templateId: undefined,
      name: 'inline',
      image: 'inline/worker:1',
      args: 'python handler.py',
      disk: 30,
      ports: ['8080/http'],
      env: { A: '1' },
      workers: { max: 0 },
    });
    assert.equal(res.statusCode, 201, res.body);
    const e = json(res);
    assert.deepEqual(
      [e.image, e.args, e.disk, e.ports, e.env],
      ['inline/worker:1', 'python handler.py', 30, ['8080/http'], { A: '1' }],
    );
    const firstTemplate = (await t.services.endpoints.get(alice.accountId, e.id)).templateId;
    const patched = json(await t.request(alice.key, 'PATCH', `/v2/serverless/${e.id}`, { image: 'inline/worker:2' }));
    assert.deepEqual([patched.image, patched.args, patched.disk], ['inline/worker:2', 'python handler.py', 30]);
    const secondTemplate = (await t.services.endpoints.get(alice.accountId, e.id)).templateId;
    assert.notEqual(secondTemplate, firstTemplate);
    assert.equal((await t.request(alice.key, 'GET', `/v2/templates/${firstTemplate}`)).statusCode, 404);
    const releases = json(await t.request(alice.key, 'GET', `/v2/serverless/${e.id}/releases`)).releases;
    assert.equal(releases.length, 2);
    assert.ok(
      releases[0].diff.some(
        (d: { field: string; old: unknown; new: unknown }) =>
          d.field === 'template.imageName' && d.old === 'inline/worker:1' && d.new === 'inline/worker:2',
      ),
    );
    // a body with the template’s fields overriding a named template
    const over = json(await create(alice.key, { ...minimal(), name: 'over', disk: 50, workers: { max: 0 } }));
    assert.deepEqual([over.image, over.disk, over.env], ['my-worker:dev', 50, { MODEL: 'small', LEVEL: 'info' }]);
    assert.equal((await t.request(alice.key, 'DELETE', `/v2/serverless/${e.id}`)).statusCode, 204);
    assert.equal((await t.request(alice.key, 'GET', `/v2/templates/${secondTemplate}`)).statusCode, 404);
    // the named template is the user's own: it stays
    assert.equal((await t.request(alice.key, 'GET', `/v2/templates/${workerTemplate}`)).statusCode, 200);
  });

  test('gpu and cpu: both at once or neither answer 400 GPU_OR_CPU_REQUIRED, a CPU flavor the catalog lacks 422, and a refused create leaves no template', async () => {
    const before = (await t.services.templates.list(alice.accountId)).length;
    const unknownFlavor = await create(alice.key, {
      ...minimal(),
      gpu: undefined,
      cpu: [{ id: 'cpu5c', vcpuCount: 4 }],
      image: 'x:1',
    });
    assert.equal(unknownFlavor.statusCode, 422, unknownFlavor.body);
    assert.match(json(unknownFlavor).detail, /cpu: "cpu5c-4-0": "cpu5c" is not a CPU flavor/);
    for (const body of [
      { ...minimal(), cpu: [{ id: 'cpu5c', vcpuCount: 4 }] },
      { ...minimal(), gpu: undefined },
    ]) {
      const res = await create(alice.key, body);
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(json(res).code, 'GPU_OR_CPU_REQUIRED');
    }
    const refused = await create(alice.key, { ...minimal(), image: 'x:1', gpu: { pools: ['NOPE'] } });
    assert.equal(refused.statusCode, 422);
    assert.equal((await t.services.templates.list(alice.accountId)).length, before);
  });

  test('the older field names are not v2 fields: each answers 422 naming it', async () => {
    for (const old of [
      'gpuIds',
      'workersMax',
      'idleTimeout',
      'scalerType',
      'locations',
      'networkVolumeId',
      'executionTimeoutMs',
    ]) {
      const res = await create(alice.key, { ...minimal(), [old]: 1 });
      assert.equal(res.statusCode, 422, old);
      assert.match(JSON.stringify(json(res).errors), new RegExp(old));
    }
  });

  test('a read key can list but not create; the routes are in the OpenAPI document', async () => {
    assert.equal((await t.request(alice.readKey, 'GET', '/v2/serverless')).statusCode, 200);
    assert.equal((await create(alice.readKey, minimal())).statusCode, 403);
    const doc = json(await t.request(null, 'GET', '/v2/openapi.json'));
    for (const p of [
      '/v2/serverless',
      '/v2/serverless/{id}',
      '/v2/serverless/{id}/workers',
      '/v2/serverless/{id}/releases',
    ])
      assert.ok(doc.paths[p], p);
  });
});
