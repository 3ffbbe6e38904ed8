import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';
import type { FakeClock } from '../src/domain/clock.js';
import { publicTemplates } from '../src/templates/public-templates.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';

let t: TestApp;
let a: { accountId: string; key: string; readKey: string };
let b: { accountId: string; key: string; readKey: string };
before(async () => {
  t = await createTestApp();
  a = await t.newAccount('tpl-a');
  b = await t.newAccount('tpl-b');
});
after(() => t.close());

const create = async (key: string, body: Record<string, unknown>) => {
  const res = await t.request(key, 'POST', '/v2/templates', { name: 'tpl', image: 'ubuntu:22.04', ...body });
  assert.equal(res.statusCode, 201, res.body);
  return json(res);
};

/** A pod row as the pods service would leave it; only the columns these rules read matter. */
const insertPod = (id: string, accountId: string, status: string, templateId: string) =>
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
      template_id: templateId,
      created_at: 1,
      updated_at: 1,
    } as never)
    .execute();

const assertProblem = (
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  code?: string,
) => {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  const body = json(res as never);
  assert.equal(body.status, status);
  if (code) assert.equal(body.code, code);
  return body as { detail: string; errors?: string[]; code: string };
};

test('a template created with only name and image gets every default of CreateTemplateRequest, in v2 names', async () => {
  const body = await create(a.key, {});
  assert.match(body.id, /^[a-z0-9]+$/);
  assert.deepEqual(
    { ...body, id: undefined, createdAt: undefined, updatedAt: undefined },
    {
      id: undefined,
      name: 'tpl',
      image: 'ubuntu:22.04',
      args: '',
      disk: 20,
      mounts: {},
      ports: [],
      env: {},
      registry: null,
      serverless: false,
      public: false,
      category: 'NVIDIA',
      startSsh: true,
      startJupyter: true,
      allowedCudaVersions: [],
      createdAt: undefined,
      updatedAt: undefined,
    },
  );
  assert.equal(body.createdAt, new Date(t.clock.now()).toISOString());
  assert.equal(body.accountId, undefined);
});

test('the OpenAPI’s own createTemplate example body is accepted and answered as its documented response (on a runtime that isolates env)', async () => {
  // paths['/v2/templates'].post.requestBody.content['application/json'].examples.podTemplate.value, verbatim
  const example = {
    name: 'PyTorch GPU Template',
    image: 'runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404',
    category: 'NVIDIA',
    disk: 50,
    ports: ['8888/http'],
    env: { JUPYTER_ENABLE_LAB: 'yes' },
    mounts: { persistent: { size: 20, path: '/workspace' } },
    serverless: false,
    public: false,
  };
  // JUPYTER_ENABLE_LAB: a container runtime (docker, kubernetes) isolates env and takes it;
  // FakeRuntime stands in. A process runtime serving one account takes it too, one serving several
  // refuses it (test/process-env-single-account.test.ts, docs/security.md).
  const app = await createTestApp({ runtime: new FakeRuntime() });
  try {
    const { key } = await app.newAccount();
    const res = await app.request(key, 'POST', '/v2/templates', example);
    assert.equal(res.statusCode, 201, res.body);
    const { id, createdAt: _c, updatedAt: _u, ...body } = json(res);
    // the documented 201 example, but startJupyter true: the request leaves it out and its
    // documented default is true (the example answer's false contradicts that description)
    assert.deepEqual(body, {
      name: 'PyTorch GPU Template',
      image: 'runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404',
      args: '',
      disk: 50,
      mounts: { persistent: { size: 20, path: '/workspace' } },
      ports: ['8888/http'],
      env: { JUPYTER_ENABLE_LAB: 'yes' },
      registry: null,
      serverless: false,
      public: false,
      category: 'NVIDIA',
      startSsh: true,
      startJupyter: true,
      allowedCudaVersions: [],
    });
    assert.deepEqual(json(await app.request(key, 'GET', `/v2/templates/${id}`)), json(res));
  } finally {
    await app.close();
  }
});

test('every field sent is kept, and GET answers what the create answered', async () => {
  const body = await create(a.key, {
    args: 'python app.py',
    disk: 30,
    mounts: { persistent: { size: 10, path: '/data' } },
    ports: ['8888/http', '22/tcp', '5000/udp'],
    env: { A: '1' },
    startSsh: false,
    startJupyter: false,
    allowedCudaVersions: ['12.4', '12.8'],
    serverless: true,
    category: 'AMD',
  });
  assert.deepEqual(body.mounts, { persistent: { size: 10, path: '/data' } });
  assert.deepEqual(body.ports, ['8888/http', '22/tcp', '5000/udp']);
  assert.deepEqual(body.env, { A: '1' });
  assert.equal(body.category, 'AMD');
  assert.equal(body.serverless, true);
  assert.equal(body.disk, 30);
  assert.equal(body.startSsh || body.startJupyter, false);
  assert.deepEqual(json(await t.request(a.key, 'GET', `/v2/templates/${body.id}`)), body);
});

test('the older field names are accepted as aliases and answered in v2 names; a volume without a mount path mounts at /workspace', async () => {
  const own = json(await t.request(a.key, 'POST', '/v2/registries', { name: 'r', username: 'u', password: 'p' }))
    .id as string;
  const res = await t.request(a.key, 'POST', '/v2/templates', {
    name: 'old',
    imageName: 'ubuntu:22.04',
    containerDiskInGb: 30,
    volumeInGb: 10,
    containerRegistryAuthId: own,
    isServerless: true,
    isPublic: false,
    readme: '# kept for v1',
  });
  assert.equal(res.statusCode, 201, res.body);
  const body = json(res);
  for (const old of [
    'imageName',
    'containerDiskInGb',
    'volumeInGb',
    'containerRegistryAuthId',
    'isServerless',
    'isPublic',
    'readme',
  ])
    assert.ok(!(old in body), old);
  assert.equal(body.image, 'ubuntu:22.04');
  assert.equal(body.disk, 30);
  assert.deepEqual(body.mounts, { persistent: { size: 10, path: '/workspace' } });
  assert.equal(body.registry, own);
  assert.equal(body.serverless, true);
  assert.equal((await t.services.templates.get(a.accountId, body.id)).readme, '# kept for v1');
  const explicit = await create(a.key, { volumeInGb: 50, volumeMountPath: '/data' });
  assert.deepEqual(explicit.mounts, { persistent: { size: 50, path: '/data' } });
  assert.deepEqual((await create(a.key, { volumeInGb: 0, volumeMountPath: null })).mounts, {});
  // PATCH keeps the older rules: the path alone moves the mount, 0 removes the volume
  const moved = json(await t.request(a.key, 'PATCH', `/v2/templates/${explicit.id}`, { volumeMountPath: '/new' }));
  assert.deepEqual(moved.mounts, { persistent: { size: 50, path: '/new' } });
  const removed = json(await t.request(a.key, 'PATCH', `/v2/templates/${explicit.id}`, { volumeInGb: 0 }));
  assert.deepEqual(removed.mounts, {});
});

test('a body sending an older name with the v2 name of the same field answers 422 naming both', async () => {
  const pairs: Array<[string, unknown, string, unknown]> = [
    ['imageName', 'x', 'image', 'y'],
    ['containerDiskInGb', 10, 'disk', 10],
    ['containerRegistryAuthId', null, 'registry', null],
    ['isServerless', false, 'serverless', false],
    ['isPublic', false, 'public', false],
    ['volumeInGb', 10, 'mounts', {}],
    ['volumeMountPath', '/w', 'mounts', {}],
  ];
  for (const [old, oldValue, v2, v2Value] of pairs) {
    for (const [method, path] of [
      ['POST', '/v2/templates'],
      ['PATCH', `/v2/templates/${(await create(a.key, {})).id}`],
    ] as const) {
      const problem = assertProblem(
        await t.request(a.key, method, path, { name: 'n', image: 'i', [old]: oldValue, [v2]: v2Value }),
        422,
        'VALIDATION_FAILED',
      );
      assert.equal(problem.errors?.length, 1, `${method} ${old}`);
      assert.ok(problem.errors[0]!.includes(old) && problem.errors[0]!.includes(v2), problem.errors[0]);
    }
  }
});

test('a body breaking the schema answers 422 with one errors entry per violation', async () => {
  const cases: Array<[Record<string, unknown>, number]> = [
    [{ name: '' }, 1],
    [{ image: undefined }, 1],
    [{ disk: 0 }, 1],
    [{ disk: 2.5 }, 1],
    [{ ports: ['8888/ftp'] }, 1],
    [{ ports: ['8888'] }, 1],
    [{ allowedCudaVersions: ['12'] }, 1],
    [{ category: 'TPU' }, 1],
    [{ env: { A: 1 } }, 1],
    [{ registry: 5 }, 1],
    [{ mounts: { persistent: { size: 20 } } }, 1],
    [{ mounts: { network: [{ volumeId: 'v', path: '/v' }] } }, 1],
    [{ volumeInGb: -1 }, 1],
    [{ volumeMountPath: 7 }, 1],
    [{ surprise: 1, another: true }, 2],
  ];
  for (const [body, count] of cases) {
    const res = await t.request(a.key, 'POST', '/v2/templates', { name: 'tpl', image: 'ubuntu:22.04', ...body });
    const problem = assertProblem(res, 422, 'VALIDATION_FAILED');
    assert.equal(problem.errors?.length, count, `${JSON.stringify(body)}: ${res.body}`);
  }
  const unknown = json(
    await t.request(a.key, 'POST', '/v2/templates', { name: 'x', image: 'y', surprise: 1, another: true }),
  );
  assert.deepEqual(unknown.errors, ['surprise: unknown property', 'another: unknown property']);
});

test('a persistent mount of 1-9 GB and a port above 65535 answer 422 with one entry', async () => {
  for (const body of [
    { mounts: { persistent: { size: 5, path: '/w' } } },
    { volumeInGb: 5 },
    { ports: ['70000/tcp'] },
  ]) {
    const problem = assertProblem(
      await t.request(a.key, 'POST', '/v2/templates', { name: 'tpl', image: 'x', ...body }),
      422,
      'VALIDATION_FAILED',
    );
    assert.equal(problem.errors?.length, 1);
  }
});

test('creating a public template is refused with 403 saying why; public false is accepted', async () => {
  const problem = assertProblem(
    await t.request(a.key, 'POST', '/v2/templates', { name: 'tpl', image: 'x', public: true }),
    403,
    'FORBIDDEN',
  );
  assert.match(problem.detail, /public/i);
  assert.equal((await create(a.key, { public: false })).public, false);
});

test('registry must be one of the caller’s registry credentials', async () => {
  const own = json(await t.request(a.key, 'POST', '/v2/registries', { name: 'ghcr', username: 'u', password: 'p' }))
    .id as string;
  const other = json(await t.request(b.key, 'POST', '/v2/registries', { name: 'ghcr', username: 'u', password: 'p' }))
    .id as string;
  assert.equal((await create(a.key, { registry: own })).registry, own);
  for (const id of [other, 'nosuchregistry']) {
    const problem = assertProblem(
      await t.request(a.key, 'POST', '/v2/templates', { name: 'tpl', image: 'x', registry: id }),
      400,
      'UNKNOWN_REFERENCE',
    );
    assert.match(problem.detail, new RegExp(id));
  }
});

test('the list holds the caller’s own templates; includePublic adds the public catalog', async () => {
  const c = await t.newAccount();
  const mine = await create(c.key, { name: 'only-mine' });
  const own = json(await t.request(c.readKey, 'GET', '/v2/templates'));
  assert.deepEqual(own, { templates: [mine] });
  const all = json(await t.request(c.readKey, 'GET', '/v2/templates?includePublic=true'));
  const ids = all.templates.map((x: { id: string }) => x.id);
  assert.equal(ids[0], mine.id);
  for (const p of publicTemplates) assert.ok(ids.includes(p.id), `${p.id} missing`);
  assert.equal(ids.length, 1 + publicTemplates.length);
  const pytorch = all.templates.find((x: { id: string }) => x.id === 'gantry-pytorch-2-4');
  assert.equal(pytorch.public, true);
  assert.deepEqual(pytorch.ports, ['8888/http', '22/tcp']);
  assert.equal(pytorch.startJupyter && pytorch.startSsh, true);
  assert.equal(json(await t.request(c.readKey, 'GET', '/v2/templates?includePublic=false')).templates.length, 1);
});

test('a public template can be read by id but neither changed nor deleted (404)', async () => {
  const res = await t.request(a.readKey, 'GET', '/v2/templates/gantry-ubuntu-cpu');
  assert.equal(res.statusCode, 200);
  assert.equal(json(res).category, 'CPU');
  assertProblem(await t.request(a.key, 'PATCH', '/v2/templates/gantry-ubuntu-cpu', { name: 'mine' }), 404, 'NOT_FOUND');
  assertProblem(await t.request(a.key, 'DELETE', '/v2/templates/gantry-ubuntu-cpu'), 404, 'NOT_FOUND');
  assert.equal(json(await t.request(a.readKey, 'GET', '/v2/templates/gantry-ubuntu-cpu')).name, 'Ubuntu 22.04 (CPU)');
});

test('another account’s template is 404 on GET, PATCH and DELETE, and never listed', async () => {
  const tpl = await create(a.key, { name: 'secret-sauce' });
  for (const [method, body] of [['GET'], ['PATCH', { name: 'stolen' }], ['DELETE']] as const) {
    const problem = assertProblem(await t.request(b.key, method, `/v2/templates/${tpl.id}`, body), 404, 'NOT_FOUND');
    assert.ok(!problem.detail.includes('secret-sauce'));
  }
  assert.ok(!JSON.stringify(json(await t.request(b.key, 'GET', '/v2/templates?includePublic=true'))).includes(tpl.id));
  assert.equal(json(await t.request(a.key, 'GET', `/v2/templates/${tpl.id}`)).name, 'secret-sauce');
});

test('PATCH changes only the fields sent, bumps updatedAt and applies the same rules', async () => {
  const tpl = await create(a.key, { name: 'before', env: { A: '1' }, ports: ['22/tcp'] });
  (t.clock as FakeClock).advance(60_000);
  const res = await t.request(a.key, 'PATCH', `/v2/templates/${tpl.id}`, {
    name: 'after',
    mounts: { persistent: { size: 20, path: '/workspace' } },
  });
  assert.equal(res.statusCode, 200, res.body);
  const body = json(res);
  assert.equal(body.name, 'after');
  assert.deepEqual(body.env, { A: '1' });
  assert.deepEqual(body.ports, ['22/tcp']);
  assert.deepEqual(body.mounts, { persistent: { size: 20, path: '/workspace' } });
  assert.equal(body.createdAt, tpl.createdAt);
  assert.notEqual(body.updatedAt, tpl.updatedAt);
  assert.deepEqual(json(await t.request(a.key, 'GET', `/v2/templates/${tpl.id}`)), body);
  // mounts {} leaves the mount as it is
  assert.deepEqual(
    json(await t.request(a.key, 'PATCH', `/v2/templates/${tpl.id}`, { mounts: {} })).mounts,
    body.mounts,
  );
  assertProblem(
    await t.request(a.key, 'PATCH', `/v2/templates/${tpl.id}`, { mounts: { persistent: { size: 3, path: '/w' } } }),
    422,
    'VALIDATION_FAILED',
  );
  assertProblem(await t.request(a.key, 'PATCH', `/v2/templates/${tpl.id}`, { public: true }), 403, 'FORBIDDEN');
  assertProblem(
    await t.request(a.key, 'PATCH', `/v2/templates/${tpl.id}`, { registry: 'nope' }),
    400,
    'UNKNOWN_REFERENCE',
  );
  const cleared = json(
    await t.request(a.key, 'PATCH', `/v2/templates/${tpl.id}`, { registry: null, image: 'alpine:3' }),
  );
  assert.equal(cleared.registry, null);
  assert.equal(cleared.image, 'alpine:3');
  const unknown = assertProblem(
    await t.request(a.key, 'PATCH', `/v2/templates/${tpl.id}`, { id: 'x', accountId: 'y' }),
    422,
    'VALIDATION_FAILED',
  );
  assert.equal(unknown.errors?.length, 2);
  assert.equal(json(await t.request(a.key, 'GET', `/v2/templates/${tpl.id}`)).name, 'after');
});

test('DELETE answers 204 without a body, then 404', async () => {
  const tpl = await create(a.key, {});
  const res = await t.request(a.key, 'DELETE', `/v2/templates/${tpl.id}`);
  assert.equal(res.statusCode, 204);
  assert.equal(res.body, '');
  assertProblem(await t.request(a.key, 'GET', `/v2/templates/${tpl.id}`), 404, 'NOT_FOUND');
  assertProblem(await t.request(a.key, 'DELETE', `/v2/templates/${tpl.id}`), 404, 'NOT_FOUND');
});

test('a template a live pod was created from cannot be deleted (400 naming the pod); a terminated pod does not hold it', async () => {
  const tpl = await create(a.key, {});
  await insertPod(`live${tpl.id}`, a.accountId, 'EXITED', tpl.id);
  await insertPod(`dead${tpl.id}`, a.accountId, 'TERMINATED', tpl.id);
  const problem = assertProblem(await t.request(a.key, 'DELETE', `/v2/templates/${tpl.id}`), 400, 'TEMPLATE_IN_USE');
  assert.match(problem.detail, new RegExp(`live${tpl.id}`));
  assert.ok(!problem.detail.includes(`dead${tpl.id}`));
  await t.services.db.kysely
    .updateTable('pods')
    .set({ status: 'TERMINATED' })
    .where('id', '=', `live${tpl.id}`)
    .execute();
  assert.equal((await t.request(a.key, 'DELETE', `/v2/templates/${tpl.id}`)).statusCode, 204);
});

test('a registered reference checker (a serverless endpoint binding) refuses deletion with its reason', async () => {
  const tpl = await create(a.key, { serverless: true });
  t.services.templates.addReferenceChecker(async (id) =>
    id === tpl.id ? 'bound to serverless endpoint "ep-123"' : null,
  );
  const problem = assertProblem(await t.request(a.key, 'DELETE', `/v2/templates/${tpl.id}`), 400, 'TEMPLATE_IN_USE');
  assert.match(problem.detail, /serverless endpoint "ep-123"/);
  const other = await create(a.key, {});
  assert.equal((await t.request(a.key, 'DELETE', `/v2/templates/${other.id}`)).statusCode, 204);
});

test('a read key may list and get templates but not write them (403)', async () => {
  assert.equal((await t.request(a.readKey, 'GET', '/v2/templates')).statusCode, 200);
  assertProblem(await t.request(a.readKey, 'POST', '/v2/templates', { name: 'x', image: 'y' }), 403, 'FORBIDDEN');
  const tpl = await create(a.key, {});
  assertProblem(await t.request(a.readKey, 'PATCH', `/v2/templates/${tpl.id}`, { name: 'z' }), 403, 'FORBIDDEN');
  assertProblem(await t.request(a.readKey, 'DELETE', `/v2/templates/${tpl.id}`), 403, 'FORBIDDEN');
  assertProblem(await t.request(null, 'GET', '/v2/templates'), 401, 'UNAUTHORIZED');
});

test('resolveForPod answers an own or public pod template; serverless is 422 and another account’s is 404', async () => {
  const own = await create(a.key, { name: 'pod-tpl' });
  const serverless = await create(a.key, { serverless: true });
  assert.equal((await t.services.templates.resolveForPod(a.accountId, own.id)).name, 'pod-tpl');
  assert.equal((await t.services.templates.resolveForPod(b.accountId, 'gantry-pytorch-2-4')).isPublic, true);
  await assert.rejects(t.services.templates.resolveForPod(b.accountId, own.id), { code: 'NOT_FOUND', status: 404 });
  await assert.rejects(t.services.templates.resolveForPod(a.accountId, 'nosuch'), { code: 'NOT_FOUND' });
  await assert.rejects(
    t.services.templates.resolveForPod(a.accountId, serverless.id),
    (err: { code: string; detail: string }) => {
      assert.equal(err.code, 'SERVERLESS_TEMPLATE');
      assert.match(err.detail, /is a serverless template; pods need a pod template/);
      return true;
    },
  );
  await assert.rejects(t.services.templates.resolveForPod(a.accountId, 'gantry-worker-base'), {
    code: 'SERVERLESS_TEMPLATE',
  });
});

test('listPublic and getPublic serve the catalog; an account template is not public (404)', async () => {
  const list = await t.services.templates.listPublic();
  assert.deepEqual(list.map((x) => x.id).sort(), publicTemplates.map((p) => p.id).sort());
  assert.ok(list.every((x) => x.isPublic && x.accountId === null));
  assert.equal((await t.services.templates.getPublic('gantry-worker-base')).isServerless, true);
  const own = await create(a.key, {});
  await assert.rejects(t.services.templates.getPublic(own.id), { code: 'NOT_FOUND' });
  await assert.rejects(t.services.templates.getPublic('nosuch'), { code: 'NOT_FOUND' });
});

test('seedPublic is idempotent and restores a catalog template that drifted', async () => {
  const before = await t.services.templates.listPublic();
  await t.services.templates.seedPublic();
  await t.services.templates.seedPublic();
  assert.deepEqual(await t.services.templates.listPublic(), before);
  await t.services.db.kysely
    .updateTable('templates')
    .set({ name: 'tampered' })
    .where('id', '=', 'gantry-pytorch-2-4')
    .execute();
  await t.services.templates.seedPublic();
  const restored = await t.services.templates.getPublic('gantry-pytorch-2-4');
  assert.equal(restored.name, publicTemplates.find((p) => p.id === 'gantry-pytorch-2-4')!.name);
  assert.equal((await t.services.templates.listPublic()).length, publicTemplates.length);
});

test('the template routes are in the OpenAPI document with their tags and closed request bodies', async () => {
  const doc = json(await t.request(null, 'GET', '/v2/openapi.json'));
  const post = doc.paths['/v2/templates'].post;
  assert.deepEqual(post.tags, ['templates']);
  assert.equal(post.requestBody.content['application/json'].schema.additionalProperties, false);
  assert.ok(post.responses['201']);
  for (const m of ['get', 'patch', 'delete']) assert.ok(doc.paths['/v2/templates/{id}'][m], m);
});
