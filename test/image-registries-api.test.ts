/**
 * With runtime docker, an image reference is a host the Docker Engine will contact from the
 * host's own network: pods (REST and GraphQL, create and change), templates (REST and GraphQL,
 * create and change) and endpoints' inline templates refuse registries the policy
 * (`runtime.docker.registries`) refuses, with 400 IMAGE_NOT_ALLOWED, before anything is stored or
 * started. The services run as they do in production, over the in-memory runtime (no engine is
 * needed: nothing is pulled) and an injected resolver for registry host names.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { assertImageRefused, dockerApp } from './support/docker-app.js';

const GPU = 'NVIDIA GeForce RTX 4090';

describe('image registries with runtime docker', () => {
  let t: TestApp;
  let runtime: FakeRuntime;
  let key: string;
  let accountId: string;

  const pod = (image: string, extra: Record<string, unknown> = {}) =>
    t.request(key, 'POST', '/v2/pods', { name: 'p', image, gpu: { id: GPU }, ...extra });
  const gql = async (query: string, variables: Record<string, unknown>) => {
    const res = await t.request(key, 'POST', '/graphql', { query, variables });
    assert.equal(res.statusCode, 200);
    return json<{
      data: Record<string, unknown> | null;
      errors?: Array<{ message: string; extensions: { code: string } }>;
    }>(res);
  };

  before(async () => {
    ({ t, runtime } = await dockerApp());
    ({ key, accountId } = await t.newAccount('registries'));
  });
  after(() => t.close());

  test('a pod whose image names a registry on loopback, a private network or the metadata address is refused with 400 IMAGE_NOT_ALLOWED, and nothing is created or started', async () => {
    const refused: Array<[string, RegExp]> = [
      [
        '127.0.0.1:5000/x',
        /^image is not allowed: its registry 127\.0\.0\.1:5000 is not a public address \(loopback\), and the Docker Engine would reach it from the host's own network; an operator can allow it with runtime\.docker\.registries\.allow\.$/,
      ],
      ['localhost:8080/x', /its registry localhost:8080 names the Docker host itself \(loopback\)/],
      ['10.0.0.5/x', /its registry 10\.0\.0\.5 is not a public address \(private\)/],
      ['169.254.169.254/latest/meta-data:1', /its registry 169\.254\.169\.254 is not a public address \(link-local\)/],
      ['[::1]:5000/x', /its registry \[::1\]:5000 is not a public address \(loopback\)/],
      [
        '[fd12:3456::1]/x@sha256:' + 'a'.repeat(64),
        /its registry \[fd12:3456::1\] is not a public address \(private\)/,
      ],
    ];
    for (const [image, detail] of refused) assertImageRefused(await pod(image), detail, image);
    assert.deepEqual(json(await t.request(key, 'GET', '/v2/pods')).pods, []);
    assert.deepEqual(runtime.started, []);
  });

  test('a host name is refused when it resolves to a non-public address, without the address in the answer; one that resolves publicly or not at all is accepted', async () => {
    const detail = assertImageRefused(
      await pod('registry.corp.example:5000/team/app:1'),
      /its registry host registry\.corp\.example:5000 resolves to an address that is not public \(private\)/,
    );
    assert.doesNotMatch(detail, /10\.20\.30\.40/);
    assertImageRefused(await pod('metadata.corp.example/x'), /\(link-local\)/);
    for (const image of [
      'public.example/team/app:1',
      'nowhere.example/x',
      'ubuntu:22.04',
      'pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime',
    ]) {
      const res = await pod(image);
      assert.equal(res.statusCode, 201, `${image}: ${res.body}`);
      await t.request(key, 'DELETE', `/v2/pods/${json(res).id}`);
    }
  });

  test('a pod change to such an image is refused and the pod keeps its image', async () => {
    const created = json(await pod('ubuntu:22.04'));
    assertImageRefused(
      await t.request(key, 'PATCH', `/v2/pods/${created.id}`, { image: '127.0.0.1:2375/x' }),
      /127\.0\.0\.1:2375/,
    );
    assert.equal(json(await t.request(key, 'GET', `/v2/pods/${created.id}`)).image, 'ubuntu:22.04');
    await t.request(key, 'DELETE', `/v2/pods/${created.id}`);
  });

  test('a template with such an image is refused at create and at change; a template stored before the rule cannot pass its image to a pod', async () => {
    assertImageRefused(
      await t.request(key, 'POST', '/v2/templates', { name: 'evil', image: 'localhost:6379/x' }),
      /^image is not allowed: its registry localhost:6379/,
    );
    assert.deepEqual(json(await t.request(key, 'GET', '/v2/templates')).templates, []);
    const tpl = json(await t.request(key, 'POST', '/v2/templates', { name: 'fine', image: 'ubuntu:22.04' }));
    assertImageRefused(
      await t.request(key, 'PATCH', `/v2/templates/${tpl.id}`, { image: '192.168.1.1/x' }),
      /192\.168\.1\.1 is not a public address \(private\)/,
    );
    assert.equal(json(await t.request(key, 'GET', `/v2/templates/${tpl.id}`)).image, 'ubuntu:22.04');

    // Stored as an older server would have: a pod made from it, or changed to it, is still refused.
    await t.services.templates.store.update(tpl.id, { imageName: '127.0.0.1:5000/x', updatedAt: t.clock.now() });
    assertImageRefused(
      await t.request(key, 'POST', '/v2/pods', { name: 'from-template', templateId: tpl.id, gpu: { id: GPU } }),
      /127\.0\.0\.1:5000/,
    );
    const plain = json(await pod('ubuntu:22.04'));
    assertImageRefused(
      await t.request(key, 'PATCH', `/v2/pods/${plain.id}`, { templateId: tpl.id }),
      /127\.0\.0\.1:5000/,
    );
    assert.equal(
      json(await t.request(key, 'PATCH', `/v2/templates/${tpl.id}`, { name: 'renamed' })).name,
      'renamed',
      'a change that leaves the image alone is not judged on it',
    );
    await t.request(key, 'DELETE', `/v2/pods/${plain.id}`);
  });

  test('a pod or a template naming an image by its ID is refused with 400 IMAGE_NOT_ALLOWED before anything is stored: an ID could name another account’s private image', async () => {
    const id = 'sha256:' + '7e3393d6ab3e93203b607bc4a55556226a026345ebf6322fa3c69b978b7e9884'.slice(0, 64);
    for (const image of [id, id.slice(7), id.slice(0, 11), id.slice(7, 19)]) {
      assertImageRefused(await pod(image), /names an image by its ID, not by repository/, image);
      assertImageRefused(
        await t.request(key, 'POST', '/v2/templates', { name: 'by-id', image }),
        /names an image by its ID/,
        image,
      );
    }
    assert.deepEqual(json(await t.request(key, 'GET', '/v2/pods')).pods, []);
    assert.deepEqual(
      json<{ templates: Array<{ name: string }> }>(await t.request(key, 'GET', '/v2/templates')).templates.filter(
        (tpl) => tpl.name === 'by-id',
      ),
      [],
    );
    // Names that only look like IDs are names: a repository, a tag, or hex shorter than a short ID.
    for (const image of ['team/7e3393d6ab3e', 'deadbeef:1', 'cafe']) {
      const res = await pod(image);
      assert.equal(res.statusCode, 201, `${image}: ${res.body}`);
      await t.request(key, 'DELETE', `/v2/pods/${json(res).id}`);
    }
  });

  test('GraphQL pod deploys, template saves and inline endpoint templates are refused alike, and leave nothing behind', async () => {
    const startedBefore = runtime.started.length;
    const deploy = await gql(
      'mutation d($input: PodFindAndDeployOnDemandInput) { podFindAndDeployOnDemand(input: $input) { id } }',
      { input: { name: 'g', imageName: 'localhost:5000/x', gpuTypeId: GPU, gpuCount: 1, cloudType: 'ALL' } },
    );
    assert.equal(deploy.errors?.[0]?.extensions.code, 'IMAGE_NOT_ALLOWED');
    assert.match(deploy.errors[0].message, /localhost:5000 names the Docker host itself/);
    const cpu = await gql('mutation c($input: DeployCpuPodInput) { deployCpuPod(input: $input) { id } }', {
      input: { name: 'c', imageName: '[::1]:5000/x', instanceId: 'cpu3c-2-4' },
    });
    assert.equal(cpu.errors?.[0]?.extensions.code, 'IMAGE_NOT_ALLOWED');
    const save = await gql('mutation s($input: SaveTemplateInput) { saveTemplate(input: $input) { id } }', {
      input: { name: 'g', imageName: '10.1.2.3:5000/x', containerDiskInGb: 10, volumeInGb: 0, dockerArgs: '', env: [] },
    });
    assert.equal(save.errors?.[0]?.extensions.code, 'IMAGE_NOT_ALLOWED');
    const before = (await t.services.templates.list(accountId)).length;
    const endpoint = await gql('mutation e($input: EndpointInput!) { saveEndpoint(input: $input) { id } }', {
      input: {
        name: 'e',
        gpuIds: 'AMPERE_16',
        workersMin: 0,
        workersMax: 1,
        template: { imageName: 'registry.corp.example/worker:1' },
      },
    });
    assert.equal(endpoint.errors?.[0]?.extensions.code, 'IMAGE_NOT_ALLOWED');
    assert.equal((await t.services.templates.list(accountId)).length, before, 'no inline template is left');
    const changed = await gql('mutation s($input: SaveTemplateInput) { saveTemplate(input: $input) { id } }', {
      input: {
        id: (await t.services.templates.create(accountId, { name: 'ok', imageName: 'ubuntu:22.04' })).id,
        imageName: '0x7f.1:5000/x',
      },
    });
    assert.equal(changed.errors?.[0]?.extensions.code, 'IMAGE_NOT_ALLOWED');
    assert.equal(runtime.started.length, startedBefore, 'no instance was started');
  });
});

describe('image registries an operator allows', () => {
  test('a registry in runtime.docker.registries.allow is accepted even on loopback; the rest of loopback stays refused', async () => {
    const { t } = await dockerApp({ allow: ['localhost:5000', '*.corp.example'] });
    try {
      const { key } = await t.newAccount();
      const create = (image: string) => t.request(key, 'POST', '/v2/pods', { name: 'p', image, gpu: { id: GPU } });
      assert.equal((await create('localhost:5000/team/app:1')).statusCode, 201);
      assert.equal(
        (await create('registry.corp.example/team/app:1')).statusCode,
        201,
        'a wildcard entry allows the name whatever it resolves to',
      );
      assertImageRefused(await create('localhost:5001/x'), /localhost:5001/);
      assertImageRefused(await create('127.0.0.1:5000/x'), /127\.0\.0\.1:5000/);
    } finally {
      await t.close();
    }
  });

  test('with only, a registry outside the allow list is refused, Docker Hub included unless listed', async () => {
    const { t } = await dockerApp({ allow: ['ghcr.io'], only: true });
    try {
      const { key } = await t.newAccount();
      const create = (image: string) => t.request(key, 'POST', '/v2/pods', { name: 'p', image, gpu: { id: GPU } });
      assert.equal((await create('ghcr.io/team/app:1')).statusCode, 201);
      assertImageRefused(
        await create('ubuntu:22.04'),
        /^image is not allowed: its registry docker\.io is not one of the registries this server pulls from; an operator can add it to runtime\.docker\.registries\.allow\.$/,
      );
      assertImageRefused(
        await t.request(key, 'POST', '/v2/templates', { name: 't', imageName: 'quay.io/team/app' }),
        /quay\.io is not one of the registries/,
      );
    } finally {
      await t.close();
    }
  });
});

test('with the process runtime image references are not judged: it maps images through its config and never pulls', async () => {
  const t = await createTestApp({});
  try {
    const { key } = await t.newAccount();
    const res = await t.request(key, 'POST', '/v2/pods', { name: 'p', image: '127.0.0.1:5000/x', gpu: { id: GPU } });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(
      (await t.request(key, 'POST', '/v2/templates', { name: 't', imageName: 'localhost:5000/x' })).statusCode,
      201,
    );
  } finally {
    await t.close();
  }
});
