// A hostile tenant holding only a write key of its own account tries to take more than its share:
// every GPU of a type (pods, stopped or running, and serverless workers), or, in
// tenant-matrix-job-quotas.test.ts, the job store's disk, or, in
// tenant-matrix-cluster-quota.test.ts, every cluster network of the shared pool. Each quota refuses it with the quota
// named, and the other tenant still gets what it asks for.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';

const GPU = 'NVIDIA GeForce RTX 4090';
/** Eight RTX 4090s, the fleet's only GPUs: a tenant without a quota could take them all. */
const fleet = [0, 1].map((i) => ({
  id: `4090s-${i}`,
  dataCenterId: 'US-TX-3',
  cloud: 'SECURE',
  gpuTypeId: GPU,
  gpuCount: 4,
  cudaVersion: '12.4',
  vcpus: 32,
  memoryGb: 128,
  portRange: [24000 + i * 100, 24099 + i * 100],
}));
const file = { fleet, quotas: { pods: 3, gpus: 2 }, runtime: { process: { allowMultipleAccounts: true } } };

type Account = { accountId: string; key: string };

for (const dialect of dialects()) {
  describe(`resource quotas (${dialect.name})`, { skip: dialect.skip }, () => {
    let t: TestApp;
    let a: Account;
    let b: Account;
    before(async () => {
      t = await createTestApp({ dialect: dialect.name, file });
      await t.services.autoscaler.start({ loop: false });
      a = await t.newAccount('quota-a');
      b = await t.newAccount('quota-b');
    });
    after(async () => {
      await t?.services.autoscaler.stop();
      await t?.close();
    });

    const createPod = (key: string, name: string) =>
      t.request(key, 'POST', '/v2/pods', { name, image: 'ubuntu:22.04', gpu: { id: GPU, count: 1 } });
    const act = (key: string, id: string, action: string) =>
      t.request(key, 'POST', `/v2/pods/${id}/action`, { action });
    const refusedFor = (res: LightMyRequestResponse, quota: RegExp) => {
      assert.equal(res.statusCode, 400, res.body);
      assert.match(String(res.headers['content-type']), /application\/problem\+json/);
      const problem = json(res);
      assert.equal(problem.code, 'RESOURCE_QUOTA_EXCEEDED');
      assert.match(problem.detail, quota);
    };
    const serverlessEndpoint = async (account: Account, name: string) => {
      const template = await t.services.templates.create(account.accountId, {
        name: `${name}-tpl`,
        imageName: `${name}:dev`,
        isServerless: true,
      });
      return t.services.endpoints.create(account.accountId, {
        name,
        templateId: template.id,
        gpuIds: 'ADA_24',
        workersMin: 1,
        workersMax: 1,
      });
    };
    const health = async (key: string, endpointId: string) =>
      json(await t.request(key, 'GET', `/v2/${endpointId}/health`));

    test('a tenant cannot take every GPU of a type: its third GPU is refused naming quotas.gpus, and the other tenant’s endpoint still gets a worker', async () => {
      const created: string[] = [];
      for (const name of ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8']) {
        const res = await createPod(a.key, name);
        if (res.statusCode === 201) created.push(json(res).id);
        else refusedFor(res, /quotas\.gpus = 2/);
      }
      assert.equal(created.length, 2, 'two GPUs fit the quota, the others are refused');
      // over GraphQL too
      const deploy = json(
        await t.request(a.key, 'POST', '/graphql', {
          query: `mutation { podFindAndDeployOnDemand(input: { name: "gql", imageName: "ubuntu:22.04", gpuTypeId: "${GPU}", gpuCount: 1, cloudType: ALL }) { id } }`,
        }),
      );
      assert.equal(deploy.errors?.[0]?.extensions?.code, 'RESOURCE_QUOTA_EXCEEDED', JSON.stringify(deploy));
      assert.match(deploy.errors[0].message, /quotas\.gpus = 2/);

      const endpoint = await serverlessEndpoint(b, 'b-worker');
      await t.services.autoscaler.tick();
      const h = await health(b.key, endpoint.id);
      assert.equal(h.workers.throttled, 0, JSON.stringify(h));
      assert.equal(t.services.autoscaler.workerIds(endpoint.id).length, 1);
    });

    test('a stopped pod released its GPUs: they do not count, and starting it again is refused while the quota is full', async () => {
      const c = await t.newAccount('quota-c');
      const [p1, p2] = [
        json(await createPod(c.key, 'c1')).id as string,
        json(await createPod(c.key, 'c2')).id as string,
      ];
      for (const id of [p1, p2]) assert.equal((await act(c.key, id, 'stop')).statusCode, 200);
      const started = await act(c.key, p1, 'start');
      assert.equal(started.statusCode, 200, started.body);
      // c2, stopped, holds no GPU: a new pod fits beside c1
      const p3 = await createPod(c.key, 'c3');
      assert.equal(p3.statusCode, 201, p3.body);
      refusedFor(await act(c.key, p2, 'start'), /quotas\.gpus = 2/);
      const resume = json(
        await t.request(c.key, 'POST', '/graphql', {
          query: `mutation { podResume(input: { podId: "${p2}" }) { id } }`,
        }),
      );
      assert.equal(resume.errors?.[0]?.extensions?.code, 'RESOURCE_QUOTA_EXCEEDED', JSON.stringify(resume));
      assert.equal(json(await t.request(c.key, 'GET', `/v2/pods/${p2}`)).status, 'EXITED');
    });

    test('pods in every status but TERMINATED count toward quotas.pods; terminating one makes room', async () => {
      const d = await t.newAccount('quota-d');
      const ids: string[] = [];
      for (const name of ['d1', 'd2', 'd3']) {
        const res = await createPod(d.key, name);
        assert.equal(res.statusCode, 201, res.body);
        ids.push(json(res).id);
        assert.equal((await act(d.key, json(res).id, 'stop')).statusCode, 200);
      }
      refusedFor(await createPod(d.key, 'd4'), /quotas\.pods = 3/);
      assert.equal((await t.request(d.key, 'DELETE', `/v2/pods/${ids[0]}`)).statusCode, 204);
      assert.equal((await createPod(d.key, 'd4')).statusCode, 201);
    });

    test('an endpoint whose workers would take its account past quotas.gpus is throttled, named in /health, not errored', async () => {
      // `a` holds its two GPUs (first test): its own endpoint's worker does not fit
      const endpoint = await serverlessEndpoint(a, 'a-worker');
      await t.services.autoscaler.tick();
      const h = await health(a.key, endpoint.id);
      assert.equal(h.workers.throttled, 1, JSON.stringify(h));
      assert.match(h.scaling.capacityError, /quotas\.gpus = 2/);
      assert.equal(t.services.autoscaler.workerIds(endpoint.id).length, 0);
      assert.equal(h.workers.unhealthy, 0);
    });
  });
}
