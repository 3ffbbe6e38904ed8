// Hostile mount paths, on every store dialect: a tenant asks for a volume over the container's own
// system folders (`/`, `/proc`, `/sys`, `/dev` or under them), spelled every way a path can be
// (`//proc/`, `/./dev`, `/workspace/../sys`), through every door a mount path comes in: pods,
// clusters and templates over REST v2 (create and PATCH), REST v1 and GraphQL. Each is a 400
// MOUNT_RULE naming the field, and nothing is stored.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';

const runs = Number(process.env.FUZZ_RUNS ?? 60);
const GPU = 'NVIDIA GeForce RTX 4090';

const separator = fc.constantFrom('/', '//', '/./', '///', '/.//');
const innocent = fc.constantFrom('workspace', 'data', 'models', 'x', 'self', 'fd', 'shm', 'fs', 'cgroup', 'net');
/** `/`, `/proc`, `/sys`, `/dev` or a path under them, in any spelling, or a path with a `..` segment. */
const refusedPath = fc.oneof(
  fc.tuple(separator, fc.boolean()).map(([s, trailing]) => (trailing ? `${s}/` : s)),
  fc
    .tuple(
      separator,
      fc.constantFrom('proc', 'sys', 'dev'),
      fc.array(fc.tuple(separator, innocent), { maxLength: 3 }),
      fc.constantFrom('', '/', '//', '/.'),
    )
    .map(([s, top, rest, end]) => `${s}${top}${rest.map(([sep, seg]) => `${sep}${seg}`).join('')}${end}`),
  fc.tuple(innocent, fc.constantFrom('proc', 'sys', 'dev', 'etc', 'workspace')).map(([a, b]) => `/${a}/../${b}`),
);

for (const dialect of dialects()) {
  describe(`mount paths on ${dialect.name}`, { skip: dialect.skip }, () => {
    let t: TestApp;
    let key: string;
    let podId: string;
    let networkPodId: string;
    let volumeId: string;
    let templateId: string;

    const count = async (): Promise<number> =>
      json(await t.request(key, 'GET', '/v2/pods')).length + json(await t.request(key, 'GET', '/v2/templates')).length;

    before(async () => {
      t = await createTestApp({
        dialect: dialect.name,
        file: { rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 } },
      });
      key = (await t.newAccount('mounter')).key;
      const pod = await t.request(key, 'POST', '/v2/pods', {
        name: 'p',
        image: 'ubuntu:22.04',
        gpu: { id: GPU },
        mounts: { persistent: { size: 20, path: '/workspace' } },
      });
      assert.equal(pod.statusCode, 201, pod.body);
      podId = json(pod).id;
      const volume = await t.request(key, 'POST', '/v2/network-volumes', {
        name: 'v',
        size: 10,
        dataCenter: 'US-TX-3',
      });
      assert.equal(volume.statusCode, 201, volume.body);
      volumeId = json(volume).id;
      const networked = await t.request(key, 'POST', '/v2/pods', {
        name: 'n',
        image: 'ubuntu:22.04',
        gpu: { id: GPU },
        dataCenterIds: ['US-TX-3'],
        mounts: { network: [{ volumeId, path: '/data' }] },
      });
      assert.equal(networked.statusCode, 201, networked.body);
      networkPodId = json(networked).id;
      const template = await t.request(key, 'POST', '/v2/templates', { name: 't', image: 'ubuntu:22.04' });
      assert.equal(template.statusCode, 201, template.body);
      templateId = json(template).id;
    });
    after(() => t?.close());

    /** Each door a mount path comes in, and the field its refusal must name. */
    const doors: Array<{
      name: string;
      send(path: string): Promise<{ status: number; detail: string }>;
      field: RegExp;
    }> = [
      {
        name: 'POST /v2/pods mounts.persistent',
        field: /mounts\.persistent\.path/,
        send: (path) =>
          rest('POST', '/v2/pods', {
            name: 'x',
            image: 'ubuntu:22.04',
            gpu: { id: GPU },
            mounts: { persistent: { size: 20, path } },
          }),
      },
      {
        name: 'POST /v2/pods mounts.network',
        field: /mounts\.network\.0\.path/,
        send: (path) =>
          rest('POST', '/v2/pods', {
            name: 'x',
            image: 'ubuntu:22.04',
            gpu: { id: GPU },
            dataCenterIds: ['US-TX-3'],
            mounts: { network: [{ volumeId, path }] },
          }),
      },
      {
        name: 'PATCH /v2/pods/{id} mounts.persistent',
        field: /mounts\.persistent\.path/,
        send: (path) => rest('PATCH', `/v2/pods/${podId}`, { mounts: { persistent: { size: 20, path } } }),
      },
      {
        name: 'PATCH /v2/pods/{id} mounts.network',
        field: /mounts\.network\.0\.path/,
        send: (path) => rest('PATCH', `/v2/pods/${networkPodId}`, { mounts: { network: [{ volumeId, path }] } }),
      },
      {
        name: 'POST /v2/templates mounts.persistent',
        field: /volumeMountPath/,
        send: (path) =>
          rest('POST', '/v2/templates', {
            name: 'x',
            image: 'ubuntu:22.04',
            mounts: { persistent: { size: 20, path } },
          }),
      },
      {
        name: 'POST /v2/templates volumeMountPath',
        field: /volumeMountPath/,
        send: (path) =>
          rest('POST', '/v2/templates', { name: 'x', image: 'ubuntu:22.04', volumeInGb: 20, volumeMountPath: path }),
      },
      {
        name: 'POST /v2/clusters mounts.persistent',
        field: /mounts\.persistent\.path/,
        send: (path) =>
          rest('POST', '/v2/clusters', {
            name: 'x',
            type: 'TRAINING',
            image: 'ubuntu:22.04',
            compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
            mounts: { persistent: { size: 20, path } },
          }),
      },
      {
        name: 'PATCH /v2/templates/{id}',
        field: /volumeMountPath/,
        send: (path) => rest('PATCH', `/v2/templates/${templateId}`, { mounts: { persistent: { size: 20, path } } }),
      },
      {
        name: 'POST /v1/pods volumeMountPath',
        field: /volumeMountPath/,
        send: (path) => rest('POST', '/v1/pods', { imageName: 'busybox', gpuTypeIds: [GPU], volumeMountPath: path }),
      },
      {
        name: 'POST /v1/templates volumeMountPath',
        field: /volumeMountPath/,
        send: (path) =>
          rest('POST', '/v1/templates', { name: 'x', imageName: 'busybox', volumeInGb: 20, volumeMountPath: path }),
      },
      {
        name: 'GraphQL podFindAndDeployOnDemand',
        field: /volumeMountPath/,
        send: (path) =>
          graphql(
            `mutation ($path: String) { podFindAndDeployOnDemand(input: { name: "x", imageName: "busybox", gpuTypeId: "${GPU}", gpuCount: 1, volumeInGb: 20, volumeMountPath: $path }) { id } }`,
            path,
          ),
      },
      {
        name: 'GraphQL saveTemplate',
        field: /volumeMountPath/,
        send: (path) =>
          graphql(
            'mutation ($path: String) { saveTemplate(input: { name: "x", imageName: "busybox", containerDiskInGb: 10, volumeInGb: 20, volumeMountPath: $path }) { id } }',
            path,
          ),
      },
    ];

    async function rest(method: 'POST' | 'PATCH', url: string, body: unknown) {
      const res = await t.request(key, method, url, body);
      const problem = res.statusCode >= 400 ? json<{ detail: string; code?: string }>(res) : null;
      if (problem) assert.match(String(res.headers['content-type']), /application\/problem\+json/);
      return { status: res.statusCode, detail: problem ? `${problem.code} ${problem.detail}` : res.body };
    }
    async function graphql(query: string, path: string) {
      const res = await t.request(key, 'POST', '/graphql', { query, variables: { path } });
      const body = json<{ errors?: Array<{ message: string; extensions?: { code?: string; status?: number } }> }>(res);
      const error = body.errors?.[0];
      return {
        status: error ? (error.extensions?.status ?? 400) : 200,
        detail: error ? `${error.extensions?.code} ${error.message}` : res.body,
      };
    }

    test('a volume over /, /proc, /sys or /dev, however spelled and through whichever door, is a 400 MOUNT_RULE naming the field, and nothing is stored', async () => {
      const before = await count();
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...doors), refusedPath, async (door, path) => {
          const answer = await door.send(path);
          assert.equal(answer.status, 400, `${door.name} ${JSON.stringify(path)}: ${answer.detail}`);
          assert.match(answer.detail, /^MOUNT_RULE /, `${door.name} ${JSON.stringify(path)}`);
          assert.match(answer.detail, door.field, `${door.name} ${JSON.stringify(path)}`);
        }),
        { numRuns: runs * 3, includeErrorInReport: true },
      );
      assert.equal(await count(), before, 'a refused mount stored nothing');
      const pod = json(await t.request(key, 'GET', `/v2/pods/${podId}`));
      assert.equal(pod.mounts.persistent.path, '/workspace', 'a refused PATCH changed nothing');
    });

    test('an ordinary mount path still passes every door', async () => {
      for (const door of doors) {
        const answer = await door.send('/workspace/data/');
        assert.ok(answer.status < 300, `${door.name}: ${answer.status} ${answer.detail}`);
      }
    });
  });
}
