// Tenant isolation: account B gets 404 for each of account A's resources on every route that takes
// an id, and never sees them in a list. The routes come from the OpenAPI document, so a new route
// under a resource (or a new job API route under /v2/{endpointId}/) is covered without editing this file.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';

interface Kind {
  prefix: string;
  listKey: string;
  create: (t: TestApp, key: string) => Promise<string>;
  /** A body that would be valid if the resource were B's own, so only ownership can refuse it. */
  bodies: Record<string, unknown>;
}

const kinds: Kind[] = [
  {
    prefix: '/v2/pods',
    listKey: 'pods',
    bodies: { PATCH: { name: 'mine-now' }, 'POST /action': { action: 'stop' } },
    create: async (t, key) => {
      const res = await t.request(key, 'POST', '/v2/pods', {
        name: 'a-pod',
        image: 'ubuntu:22.04',
        gpu: { id: 'NVIDIA GeForce RTX 4090' },
      });
      assert.equal(res.statusCode, 201, res.body);
      return json(res).id;
    },
  },
  {
    prefix: '/v2/templates',
    listKey: 'templates',
    bodies: { PATCH: { name: 'mine-now' } },
    create: async (t, key) => {
      const res = await t.request(key, 'POST', '/v2/templates', { name: 'a-template', imageName: 'ubuntu:22.04' });
      assert.equal(res.statusCode, 201, res.body);
      return json(res).id;
    },
  },
  {
    prefix: '/v2/network-volumes',
    listKey: 'networkVolumes',
    bodies: { PATCH: { name: 'mine-now' } },
    create: async (t, key) => {
      const res = await t.request(key, 'POST', '/v2/network-volumes', {
        name: 'a-volume',
        size: 10,
        dataCenter: 'US-TX-3',
      });
      assert.equal(res.statusCode, 201, res.body);
      return json(res).id;
    },
  },
  {
    prefix: '/v2/registries',
    listKey: 'registries',
    bodies: {},
    create: async (t, key) => {
      const res = await t.request(key, 'POST', '/v2/registries', {
        name: 'a-registry',
        username: 'alice',
        password: 'hunter2-secret',
      });
      assert.equal(res.statusCode, 201, res.body);
      return json(res).id;
    },
  },
];

for (const dialect of dialects()) {
  describe(`tenant isolation on ${dialect.name}`, { skip: dialect.skip }, () => {
    let t: TestApp;
    let a: { key: string };
    let b: { key: string };
    before(async () => {
      t = await createTestApp({ dialect: dialect.name });
      a = await t.newAccount('tenant-a');
      b = await t.newAccount('tenant-b');
    });
    after(() => t.close());

    for (const kind of kinds) {
      test(`account B gets 404 for account A's ${kind.prefix} resource on every route and never lists it`, async () => {
        const doc = t.app.swagger() as { paths: Record<string, Record<string, unknown>> };
        const paths = Object.keys(doc.paths).filter((p) => p.startsWith(`${kind.prefix}/{`));
        assert.ok(paths.length > 0, `no routes with an id under ${kind.prefix}`);
        const id = await kind.create(t, a.key);
        let checked = 0;
        for (const path of paths) {
          for (const method of Object.keys(doc.paths[path]!)) {
            const verb = method.toUpperCase();
            const suffix = path.slice(path.indexOf('}') + 1);
            const body = kind.bodies[`${verb} ${suffix}`] ?? kind.bodies[verb];
            const res = await t.request(
              b.key,
              verb,
              path.replace(/\{[^}]+\}/, id),
              verb === 'GET' || verb === 'DELETE' ? undefined : (body ?? {}),
            );
            assert.equal(res.statusCode, 404, `${verb} ${path} as B answered ${res.statusCode}: ${res.body}`);
            assert.ok(
              !res.body.includes('a-pod') && !res.body.includes('a-template') && !res.body.includes('a-volume'),
              'the 404 leaks the resource',
            );
            checked++;
          }
        }
        assert.ok(checked > 0);
        const list = await t.request(b.key, 'GET', kind.prefix);
        assert.equal(list.statusCode, 200);
        assert.ok(!JSON.stringify(json(list)[kind.listKey]).includes(id), `B's list shows A's ${kind.prefix}`);
        // and A still has it, untouched
        const own = await t.request(a.key, 'GET', `${kind.prefix}/${id}`);
        assert.equal(own.statusCode, 200);
      });
    }

    test("account B gets 404 on every job API route for account A's endpoint and job, and A's job is untouched", async () => {
      const doc = t.app.swagger() as { paths: Record<string, Record<string, unknown>> };
      const paths = Object.keys(doc.paths).filter((p) => p.startsWith('/v2/{endpointId}/'));
      assert.ok(
        paths.some((p) => p.endsWith('/requests')),
        'the job routes are in the document',
      );
      const owner = await t.newAccount('tenant-a-serverless');
      const template = await t.services.templates.create(owner.accountId, {
        name: 'a-worker',
        imageName: 'worker:dev',
        isServerless: true,
      });
      const endpoint = await t.services.endpoints.create(owner.accountId, {
        name: 'a-endpoint',
        templateId: template.id,
        gpuIds: 'ADA_24',
      });
      const job = await t.services.jobs.client.submit(endpoint.id, owner.accountId, { input: { secret: 'a-input' } });
      let checked = 0;
      for (const path of paths) {
        for (const method of Object.keys(doc.paths[path]!)) {
          const verb = method.toUpperCase() as 'GET' | 'POST';
          const url = path.replace('{endpointId}', endpoint.id).replace('{jobId}', job.id);
          const res = await t.request(b.key, verb, url, verb === 'GET' ? undefined : { input: {} });
          assert.equal(res.statusCode, 404, `${verb} ${path} as B answered ${res.statusCode}: ${res.body}`);
          assert.ok(
            !res.body.includes('a-input') && !res.body.includes('a-endpoint'),
            'the 404 leaks the endpoint or the job',
          );
          checked++;
        }
      }
      assert.ok(checked >= 5, `only ${checked} job routes checked`);
      const own = await t.request(owner.key, 'GET', `/v2/${endpoint.id}/requests`);
      assert.equal(own.statusCode, 200);
      assert.deepEqual(
        json(own).requests.map((r: { id: string; status: string }) => [r.id, r.status]),
        [[job.id, 'IN_QUEUE']],
      );
    });
  });
}
