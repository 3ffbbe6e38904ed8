// A hostile tenant holding a write key of its own account tries to take every cluster network:
// each cluster takes one /24 of a pool of 4,096 shared by every account (docs/clusters.md), so
// without a cap one account could block every other tenant's cluster creates. quotas.clusters
// refuses it past its cap, naming the quota, keeps nothing of the refused create, and the other
// tenant still gets its cluster. Over SQLite and PostgreSQL.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';

const GPU = 'NVIDIA GeForce RTX 4090';
/** Room for every cluster the tests keep, so only the cap refuses. */
const fleet = [0, 1, 2, 3].map((i) => ({
  id: `tx-${i}`,
  dataCenterId: 'US-TX-3',
  gpuTypeId: GPU,
  gpuCount: 8,
  cudaVersion: '12.4',
  portRange: [20000 + i * 1000, 20999 + i * 1000],
}));
const CAP = 2;

type Account = { accountId: string; key: string };

for (const dialect of dialects()) {
  describe(`cluster quota (${dialect.name})`, { skip: dialect.skip }, () => {
    let t: TestApp;
    const runtime = new FakeRuntime();
    before(async () => {
      t = await createTestApp({
        dialect: dialect.name,
        runtime,
        file: {
          rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
          quotas: { pods: 10_000, gpus: 10_000, clusters: CAP },
          fleet,
        },
      });
    });
    after(() => t?.close());

    const createCluster = (key: string, name: string) =>
      t.request(key, 'POST', '/v2/clusters', {
        name,
        type: 'TRAINING',
        image: 'fake/idle',
        compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
      });
    const created = (res: LightMyRequestResponse): string => {
      assert.equal(res.statusCode, 201, res.body);
      return json(res).id as string;
    };
    const refusedByCap = (res: LightMyRequestResponse) => {
      assert.equal(res.statusCode, 400, res.body);
      assert.match(String(res.headers['content-type']), /application\/problem\+json/);
      const problem = json(res);
      assert.equal(problem.code, 'RESOURCE_QUOTA_EXCEEDED');
      assert.match(problem.detail, new RegExp(`quotas\\.clusters = ${CAP}`));
    };
    const storedClusters = async (account: Account) =>
      Number(
        (
          await t.services.db.kysely
            .selectFrom('clusters')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('account_id', '=', account.accountId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    /** The ids of the account's pods, members included. */
    const podsOf = async (account: Account) =>
      (json(await t.request(account.key, 'GET', '/v2/pods?includeClusterPods=true')).pods as { id: string }[])
        .map((p) => p.id)
        .sort();
    /** The account at its cap. */
    const atCap = async (name: string): Promise<Account> => {
      const account = await t.newAccount(name);
      for (let i = 0; i < CAP; i++) created(await createCluster(account.key, `${name}-${i}`));
      return account;
    };

    test('an account at its cluster cap is refused the next cluster with a problem naming the limit, and nothing is kept', async () => {
      const a = await atCap('cap-a');
      const pods = await podsOf(a);
      const clusterIds = async () =>
        (json(await t.request(a.key, 'GET', '/v2/clusters')).clusters as { id: string }[]).map((c) => c.id);
      const clusters = await clusterIds();
      // the kept members' own launches run after their creates answered: let them finish first,
      // so that only the refused create could change the count below
      for (const id of pods) await t.services.podController.idle(id);
      const instances = runtime.specs.size;
      refusedByCap(await createCluster(a.key, 'one-too-many'));
      assert.equal(await storedClusters(a), CAP);
      assert.equal(pods.length, CAP * 2);
      assert.deepEqual(await podsOf(a), pods, 'no member pod is kept');
      assert.deepEqual(await clusterIds(), clusters);
      assert.equal(runtime.specs.size, instances, 'no instance was started');
    });

    test('another tenant can still create a cluster while one account sits at its cap', async () => {
      const a = await atCap('cap-b-attacker');
      refusedByCap(await createCluster(a.key, 'more'));
      const b = await t.newAccount('cap-b-victim');
      const id = created(await createCluster(b.key, 'victim'));
      assert.match(json(await t.request(b.key, 'GET', `/v2/clusters/${id}`)).network.cidr, /^10\.\d+\.\d+\.0\/24$/);
    });

    test('a deleted cluster frees its slot under the cap', async () => {
      const a = await t.newAccount('cap-c');
      const first = created(await createCluster(a.key, 'c-0'));
      for (let i = 1; i < CAP; i++) created(await createCluster(a.key, `c-${i}`));
      refusedByCap(await createCluster(a.key, 'c-over'));
      assert.equal((await t.request(a.key, 'DELETE', `/v2/clusters/${first}`)).statusCode, 204);
      created(await createCluster(a.key, 'c-again'));
      refusedByCap(await createCluster(a.key, 'c-over-again'));
      assert.equal(await storedClusters(a), CAP);
    });

    test('concurrent creates cannot take an account past its cluster cap; every one refused keeps nothing', async () => {
      const a = await t.newAccount('cap-d');
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => createCluster(a.key, `d-${i}`)));
      const kept = answers.filter((r) => r.statusCode === 201);
      for (const r of answers) if (r.statusCode !== 201) refusedByCap(r);
      assert.equal(kept.length, CAP, 'one process takes its creates in turn: exactly the cap is kept');
      assert.equal(await storedClusters(a), kept.length);
      assert.equal((await podsOf(a)).length, kept.length * 2, 'only the kept clusters have member pods');
    });
  });
}
