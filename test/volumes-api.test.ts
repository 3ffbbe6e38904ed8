import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, json, type TestApp } from './support/harness.js';
import type { FakeClock } from '../src/domain/clock.js';
import { networkVolumeFolderOf } from '../src/runtime/process/volume-folders.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';

let t: TestApp;
let a: { accountId: string; key: string; readKey: string };
let b: { accountId: string; key: string; readKey: string };
before(async () => {
  t = await createTestApp();
  a = await t.newAccount('vol-a');
  b = await t.newAccount('vol-b');
});
after(() => t.close());

const create = async (key: string, body: Record<string, unknown> = {}) => {
  const res = await t.request(key, 'POST', '/v2/network-volumes', {
    name: 'data',
    size: 50,
    dataCenter: 'US-TX-3',
    ...body,
  });
  assert.equal(res.statusCode, 201, res.body);
  return json<{ id: string; name: string; size: number; dataCenter: string; type: string }>(res);
};

const insertPod = (id: string, accountId: string, status: string, mounts: unknown) =>
  t.services.db.kysely
    .insertInto('pods')
    .values({
      id,
      account_id: accountId,
      name: id,
      status,
      desired_status: 'RUNNING',
      image: 'x',
      disk: 20,
      cloud: 'SECURE',
      mounts: JSON.stringify(mounts),
      created_at: 1,
      updated_at: 1,
    } as never)
    .execute();

/** The volume's folder of the process runtime, with data in it (as an instance mounting it would leave). */
const withData = (volumeId: string): string => {
  const path = networkVolumeFolderOf(t.config.dataDir, volumeId);
  mkdirSync(path, { recursive: true });
  writeFileSync(join(path, 'weights.bin'), 'x');
  return path;
};

const assertProblem = (
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  code?: string,
) => {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  const body = json(res as never);
  if (code) assert.equal(body.code, code);
  return body as { detail: string; errors?: string[] };
};

test('a created volume answers 201 with id, name, size, dataCenter and type STANDARD; its data is made by the runtime when an instance mounts it, not at create', async () => {
  const volume = await create(a.key, { name: 'datasets', size: 100 });
  assert.deepEqual(Object.keys(volume).sort(), ['dataCenter', 'id', 'name', 'size', 'type']);
  assert.deepEqual(
    { ...volume, id: 'x' },
    { id: 'x', name: 'datasets', size: 100, dataCenter: 'US-TX-3', type: 'STANDARD' },
  );
  assert.ok(!existsSync(networkVolumeFolderOf(t.config.dataDir, volume.id)));
  assert.deepEqual(json(await t.request(a.readKey, 'GET', `/v2/network-volumes/${volume.id}`)), volume);
  assert.equal((await t.services.volumes.get(a.accountId, volume.id)).size, 100);
});

test('size must be an integer from 10 to 4096 GB (422, one entry each)', async () => {
  for (const size of [9, 4097, 10.5, '50']) {
    const problem = assertProblem(
      await t.request(a.key, 'POST', '/v2/network-volumes', { name: 'd', size, dataCenter: 'US-TX-3' }),
      422,
      'VALIDATION_FAILED',
    );
    assert.equal(problem.errors?.length, 1, String(size));
  }
  await create(a.key, { size: 10 });
  await create(a.key, { size: 4096 });
});

test('type STANDARD is accepted; HIGH_PERFORMANCE, as in the OpenAPI example, answers 400 naming the one storage tier', async () => {
  const standard = await create(a.key, { type: 'STANDARD' });
  assert.equal(standard.type, 'STANDARD');
  const example = { name: 'training-dataset', dataCenter: 'US-TX-3', size: 50, type: 'HIGH_PERFORMANCE' };
  const problem = assertProblem(await t.request(a.key, 'POST', '/v2/network-volumes', example), 400, 'BAD_REQUEST');
  assert.match(problem.detail, /HIGH_PERFORMANCE.*STANDARD/);
  assertProblem(await t.request(a.key, 'POST', '/v2/network-volumes', { ...example, type: 'FAST' }), 422);
});

test('dataCenterId, the older name of dataCenter, is accepted on create; sent with dataCenter it answers 422 naming both', async () => {
  const res = await t.request(a.key, 'POST', '/v2/network-volumes', { name: 'd', size: 10, dataCenterId: 'EU-RO-1' });
  assert.equal(res.statusCode, 201, res.body);
  assert.equal(json(res).dataCenter, 'EU-RO-1');
  const both = assertProblem(
    await t.request(a.key, 'POST', '/v2/network-volumes', {
      name: 'd',
      size: 10,
      dataCenterId: 'EU-RO-1',
      dataCenter: 'US-TX-3',
    }),
    422,
    'VALIDATION_FAILED',
  );
  assert.match(both.detail, /dataCenterId.*dataCenter/);
});

test('an unknown data center answers 400 naming the valid ones', async () => {
  const problem = assertProblem(
    await t.request(a.key, 'POST', '/v2/network-volumes', { name: 'd', size: 10, dataCenter: 'MARS-1' }),
    400,
    'BAD_REQUEST',
  );
  assert.match(problem.detail, /MARS-1/);
  for (const dc of t.config.catalog.dataCenters) assert.ok(problem.detail.includes(dc.id), dc.id);
});

test('unknown and missing properties answer 422 with one entry per property', async () => {
  const problem = assertProblem(
    await t.request(a.key, 'POST', '/v2/network-volumes', {
      name: 'd',
      size: 10,
      dataCenter: 'US-TX-3',
      color: 'red',
      tier: 1,
    }),
    422,
  );
  assert.deepEqual(problem.errors, ['color: unknown property', 'tier: unknown property']);
  const missing = assertProblem(await t.request(a.key, 'POST', '/v2/network-volumes', { name: 'd' }), 422);
  assert.equal(missing.errors?.length, 2);
  const patch = assertProblem(
    await t.request(a.key, 'PATCH', `/v2/network-volumes/${(await create(a.key)).id}`, { color: 'red' }),
    422,
  );
  assert.deepEqual(patch.errors, ['color: unknown property']);
});

test('the list holds only the caller’s volumes, oldest first', async () => {
  const c = await t.newAccount();
  const v1 = await create(c.key, { name: 'one' });
  (t.clock as FakeClock).advance(1000);
  const v2 = await create(c.key, { name: 'two', dataCenter: 'EU-RO-1' });
  assert.deepEqual(json(await t.request(c.readKey, 'GET', '/v2/network-volumes')), { networkVolumes: [v1, v2] });
});

test('PATCH renames and grows; shrinking answers 400 and the size stays', async () => {
  const volume = await create(a.key, { size: 50 });
  const renamed = await t.request(a.key, 'PATCH', `/v2/network-volumes/${volume.id}`, { name: 'renamed' });
  assert.equal(renamed.statusCode, 200, renamed.body);
  assert.deepEqual(json(renamed), { ...volume, name: 'renamed' });
  assert.equal(json(await t.request(a.key, 'PATCH', `/v2/network-volumes/${volume.id}`, { size: 200 })).size, 200);
  assert.equal(json(await t.request(a.key, 'PATCH', `/v2/network-volumes/${volume.id}`, { size: 200 })).size, 200);
  const problem = assertProblem(
    await t.request(a.key, 'PATCH', `/v2/network-volumes/${volume.id}`, { size: 100 }),
    400,
    'BAD_REQUEST',
  );
  assert.match(problem.detail, /only grow/);
  assert.deepEqual(json(await t.request(a.key, 'GET', `/v2/network-volumes/${volume.id}`)), {
    ...volume,
    name: 'renamed',
    size: 200,
  });
});

test('PATCH changes only name and size: the data center and type are immutable (422), and an empty body answers 422', async () => {
  const volume = await create(a.key);
  for (const body of [{ dataCenter: 'EU-RO-1' }, { dataCenterId: 'US-TX-3' }, { type: 'STANDARD' }, {}]) {
    assertProblem(await t.request(a.key, 'PATCH', `/v2/network-volumes/${volume.id}`, body), 422, 'VALIDATION_FAILED');
  }
  assert.deepEqual(json(await t.request(a.key, 'GET', `/v2/network-volumes/${volume.id}`)), volume);
});

test('DELETE answers 204, the runtime removes its data, then 404', async () => {
  const volume = await create(a.key);
  const path = withData(volume.id);
  const res = await t.request(a.key, 'DELETE', `/v2/network-volumes/${volume.id}`);
  assert.equal(res.statusCode, 204);
  assert.equal(res.body, '');
  assert.ok(!existsSync(path));
  assertProblem(await t.request(a.key, 'GET', `/v2/network-volumes/${volume.id}`), 404, 'NOT_FOUND');
  assertProblem(await t.request(a.key, 'DELETE', `/v2/network-volumes/${volume.id}`), 404, 'NOT_FOUND');
});

test('a volume a live pod mounts cannot be deleted (400 naming the pod); terminated pods and other volumes do not hold it', async () => {
  const volume = await create(a.key);
  const path = withData(volume.id);
  await insertPod(`live${volume.id}`, a.accountId, 'RUNNING', { network: [{ volumeId: volume.id, path: '/data' }] });
  await insertPod(`dead${volume.id}`, a.accountId, 'TERMINATED', { network: [{ volumeId: volume.id, path: '/data' }] });
  await insertPod(`near${volume.id}`, a.accountId, 'RUNNING', {
    network: [{ volumeId: `${volume.id}x`, path: `/${volume.id}` }],
  });
  const problem = assertProblem(
    await t.request(a.key, 'DELETE', `/v2/network-volumes/${volume.id}`),
    400,
    'VOLUME_IN_USE',
  );
  assert.match(problem.detail, new RegExp(`live${volume.id}`));
  assert.ok(!problem.detail.includes(`dead${volume.id}`) && !problem.detail.includes(`near${volume.id}`));
  assert.ok(existsSync(path));
  await t.services.db.kysely
    .updateTable('pods')
    .set({ status: 'TERMINATED' })
    .where('id', '=', `live${volume.id}`)
    .execute();
  assert.equal((await t.request(a.key, 'DELETE', `/v2/network-volumes/${volume.id}`)).statusCode, 204);
});

test('another account’s volume is 404 on GET, PATCH and DELETE, and its data stays', async () => {
  const volume = await create(a.key, { name: 'private-bits' });
  const path = withData(volume.id);
  for (const [method, body] of [['GET'], ['PATCH', { name: 'stolen' }], ['DELETE']] as const) {
    const problem = assertProblem(
      await t.request(b.key, method, `/v2/network-volumes/${volume.id}`, body),
      404,
      'NOT_FOUND',
    );
    assert.ok(!problem.detail.includes('private-bits'));
  }
  assert.ok(!JSON.stringify(json(await t.request(b.key, 'GET', '/v2/network-volumes'))).includes(volume.id));
  assert.deepEqual(json(await t.request(a.key, 'GET', `/v2/network-volumes/${volume.id}`)), volume);
  assert.ok(existsSync(path));
  await assert.rejects(t.services.volumes.get(b.accountId, volume.id), { code: 'NOT_FOUND' });
});

test('a read key may read volumes but not write them (403)', async () => {
  const volume = await create(a.key);
  assert.equal((await t.request(a.readKey, 'GET', '/v2/network-volumes')).statusCode, 200);
  assertProblem(
    await t.request(a.readKey, 'POST', '/v2/network-volumes', { name: 'd', size: 10, dataCenter: 'US-TX-3' }),
    403,
    'FORBIDDEN',
  );
  assertProblem(
    await t.request(a.readKey, 'PATCH', `/v2/network-volumes/${volume.id}`, { name: 'x' }),
    403,
    'FORBIDDEN',
  );
  assertProblem(await t.request(a.readKey, 'DELETE', `/v2/network-volumes/${volume.id}`), 403, 'FORBIDDEN');
});

describe('a volume a serverless endpoint uses', () => {
  let workerTemplate: string;
  before(async () => {
    workerTemplate = (
      await t.services.templates.create(a.accountId, {
        name: 'vol-worker',
        imageName: 'vol-worker:dev',
        isServerless: true,
      })
    ).id;
  });

  const deleteRefused = async (volumeId: string, endpointId: string) => {
    const path = withData(volumeId);
    const problem = assertProblem(
      await t.request(a.key, 'DELETE', `/v2/network-volumes/${volumeId}`),
      400,
      'VOLUME_IN_USE',
    );
    assert.ok(problem.detail.includes(endpointId), problem.detail);
    assert.ok(existsSync(path));
    assert.equal((await t.request(a.key, 'GET', `/v2/network-volumes/${volumeId}`)).statusCode, 200);
  };

  test('cannot be deleted while an endpoint created over REST names it (400 VOLUME_IN_USE naming the endpoint), and can once it no longer does', async () => {
    const volume = await create(a.key, { name: 'weights' });
    const res = await t.request(a.key, 'POST', '/v2/serverless', {
      name: 'uses-vol',
      templateId: workerTemplate,
      type: 'QUEUE',
      gpu: { pools: ['ADA_24'] },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
      networkVolumes: [volume.id],
    });
    assert.equal(res.statusCode, 201, res.body);
    const endpointId = json(res).id as string;
    await deleteRefused(volume.id, endpointId);
    const patched = await t.request(a.key, 'PATCH', `/v2/serverless/${endpointId}`, { networkVolumes: [] });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal((await t.request(a.key, 'DELETE', `/v2/network-volumes/${volume.id}`)).statusCode, 204);
  });

  test('cannot be deleted while an endpoint saved over GraphQL (saveEndpoint with networkVolumeId) names it, and can once the endpoint is deleted', async () => {
    const volume = await create(a.key, { name: 'gql-weights' });
    const save = await t.request(a.key, 'POST', '/graphql', {
      query: 'mutation m($input: EndpointInput!) { saveEndpoint(input: $input) { id networkVolumeId } }',
      variables: {
        input: {
          name: 'gql-uses-vol',
          templateId: workerTemplate,
          gpuIds: 'ADA_24',
          workersMax: 0,
          networkVolumeId: volume.id,
        },
      },
    });
    const saved = json(save);
    assert.equal(saved.errors, undefined, save.body);
    const endpointId = saved.data.saveEndpoint.id as string;
    assert.equal(saved.data.saveEndpoint.networkVolumeId, volume.id);
    await deleteRefused(volume.id, endpointId);
    const deleted = json(
      await t.request(a.key, 'POST', '/graphql', { query: `mutation { deleteEndpoint(id: "${endpointId}") }` }),
    );
    assert.equal(deleted.errors, undefined, JSON.stringify(deleted));
    assert.equal((await t.request(a.key, 'DELETE', `/v2/network-volumes/${volume.id}`)).statusCode, 204);
  });
});

test('DELETE asks the runtime to remove the network volume’s data; a refused delete does not', async () => {
  const runtime = new FakeRuntime();
  const app = await createTestApp({ runtime });
  try {
    const { accountId, key } = await app.newAccount();
    const res = await app.request(key, 'POST', '/v2/network-volumes', {
      name: 'data',
      size: 50,
      dataCenter: 'US-TX-3',
    });
    const volume = json<{ id: string }>(res);
    await app.services.db.kysely
      .insertInto('pods')
      .values({
        id: `p${volume.id}`,
        account_id: accountId,
        name: 'p',
        status: 'EXITED',
        desired_status: 'EXITED',
        image: 'x',
        disk: 20,
        cloud: 'SECURE',
        mounts: JSON.stringify({ network: [{ volumeId: volume.id, path: '/data' }] }),
        created_at: 1,
        updated_at: 1,
      } as never)
      .execute();
    assert.equal((await app.request(key, 'DELETE', `/v2/network-volumes/${volume.id}`)).statusCode, 400);
    assert.deepEqual(runtime.removedVolumes, []);
    await app.services.db.kysely
      .updateTable('pods')
      .set({ status: 'TERMINATED' })
      .where('id', '=', `p${volume.id}`)
      .execute();
    assert.equal((await app.request(key, 'DELETE', `/v2/network-volumes/${volume.id}`)).statusCode, 204);
    assert.deepEqual(runtime.removedVolumes, [volume.id]);
  } finally {
    await app.close();
  }
});
