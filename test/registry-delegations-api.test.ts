import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';

const ARN = 'arn:aws:ecr:us-east-2:418399314813:repository/runpod/deployment';

for (const { name, skip } of dialects()) {
  describe(`ECR delegations API on ${name}`, { skip }, () => {
    let t: TestApp;
    let alice: { key: string; accountId: string };
    let bob: { key: string };
    before(async () => {
      t = await createTestApp({ dialect: name });
      alice = await t.newAccount('alice');
      bob = await t.newAccount('bob');
    });
    after(() => t?.close());

    test('a delegation created from an ECR ARN answers 201 with the region, account, repository, tag and registry URI parsed from it', async () => {
      const res = await t.request(alice.key, 'POST', '/v2/registries/delegations', { resource: ARN, name: 'deploy' });
      assert.equal(res.statusCode, 201, res.body);
      const body = json(res);
      assert.match(body.id, /^[a-z0-9]+$/);
      assert.match(body.createdAt, /^\d{4}-\d\d-\d\dT/);
      assert.deepEqual(
        { ...body, id: undefined, createdAt: undefined },
        {
          id: undefined,
          createdAt: undefined,
          name: 'deploy',
          delegatorUserId: alice.accountId,
          awsUser: '418399314813',
          repository: 'runpod/deployment',
          tag: 'latest',
          awsRegion: 'us-east-2',
          dockerRegistryUri: '418399314813.dkr.ecr.us-east-2.amazonaws.com',
        },
      );
      const tagged = json(
        await t.request(alice.key, 'POST', '/v2/registries/delegations', { resource: `${ARN}:v2.1` }),
      );
      assert.deepEqual([tagged.tag, tagged.name, tagged.repository], ['v2.1', null, 'runpod/deployment']);
    });

    test('a resource that is not an ECR repository ARN answers 422 naming resource', async () => {
      for (const resource of [
        'arn:aws:s3:::bucket',
        'arn:aws:ecr:us-east-2:1234:repository/x1',
        'arn:aws:ecr:us-east-2:418399314813:repository/',
        'arn:aws:ecr:us-east-2:418399314813:repository/Upper',
        '418399314813.dkr.ecr.us-east-2.amazonaws.com/runpod',
      ]) {
        const res = await t.request(alice.key, 'POST', '/v2/registries/delegations', { resource });
        assert.equal(res.statusCode, 422, resource);
        assert.match(String(res.headers['content-type']), /application\/problem\+json/);
        assert.match(json(res).errors[0], /^resource/, resource);
      }
      const missing = await t.request(alice.key, 'POST', '/v2/registries/delegations', { name: 'x' });
      assert.equal(missing.statusCode, 422);
      assert.match(json(missing).detail, /resource/);
    });

    test('GET /v2/registries/delegations lists the account’s delegations and is not read as a registry id', async () => {
      const list = await t.request(alice.key, 'GET', '/v2/registries/delegations');
      assert.equal(list.statusCode, 200);
      assert.ok(json(list).delegations.length >= 1);
      for (const d of json(list).delegations) assert.equal(d.delegatorUserId, alice.accountId);
      assert.deepEqual(json(await t.request(bob.key, 'GET', '/v2/registries/delegations')).delegations, []);
      // the parametric registry route still answers for a real id
      assert.equal((await t.request(alice.key, 'GET', '/v2/registries/nosuchid')).statusCode, 404);
    });

    test('revoking answers 204 and the delegation is gone; another account’s id or a revoked one answers 404', async () => {
      const created = json(await t.request(alice.key, 'POST', '/v2/registries/delegations', { resource: ARN }));
      const bobs = await t.request(bob.key, 'DELETE', `/v2/registries/delegations/${created.id}`);
      assert.equal(bobs.statusCode, 404);
      assert.equal((await t.request(alice.key, 'DELETE', `/v2/registries/delegations/${created.id}`)).statusCode, 204);
      const ids = json(await t.request(alice.key, 'GET', '/v2/registries/delegations')).delegations.map(
        (d: { id: string }) => d.id,
      );
      assert.ok(!ids.includes(created.id));
      assert.equal((await t.request(alice.key, 'DELETE', `/v2/registries/delegations/${created.id}`)).statusCode, 404);
    });

    test('delegations need a key', async () => {
      assert.equal((await t.request(null, 'GET', '/v2/registries/delegations')).statusCode, 401);
    });
  });
}
