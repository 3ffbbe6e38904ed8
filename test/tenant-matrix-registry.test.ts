/**
 * A hostile tenant after another account's private image, through the API, on a real engine and a
 * real registry with authentication (docker-registry + htpasswd): account A pulls an image with
 * its registry credential; account B names it with no credential, a wrong one, by digest, by image
 * ID, and while the registry is down. B runs it only with a credential of its own that the
 * registry accepts; public images run for everyone, registry or not. Skipped, saying why, without
 * an engine or without docker-registry (a failure under CI=true).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { canonicalImage } from '../src/domain/image-ref.js';
import { dockerEngine, makeDockerRuntime, noEngine, testHost, type RuntimeFixture } from './support/docker.js';
import { eventually } from './support/eventually.js';
import { createTestApp, json, type TestApp } from './support/harness.js';
import {
  forgetRegistry,
  pushImage,
  registryUnavailable,
  startRegistry,
  type TestRegistry,
} from './support/registry.js';

const engine = await dockerEngine();
after(() => engine?.client.close());
const noRegistry = registryUnavailable();

interface Pod {
  id: string;
  status: string;
  statusReason: string | null;
}

if (!engine || noRegistry) {
  test('tenants and private images', { skip: noEngine() || noRegistry! }, () => {});
} else {
  const e = engine;
  describe('tenants and private images', () => {
    const run = randomBytes(4).toString('hex');
    let registry: TestRegistry;
    let fixture: RuntimeFixture;
    let t: TestApp;
    let a: { key: string; accountId: string };
    let b: { key: string; accountId: string };
    let secret = '';

    const credential = async (key: string, username: string, password: string): Promise<string> => {
      const res = await t.request(key, 'POST', '/v2/registries', { name: `${username}-reg`, username, password });
      assert.equal(res.statusCode, 201, res.body);
      return json<{ id: string }>(res).id;
    };
    const createPod = async (key: string, image: string, registryId: string | null = null): Promise<Pod> => {
      const res = await t.request(key, 'POST', '/v2/pods', {
        name: 'matrix',
        image,
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        ...(registryId ? { registry: registryId } : {}),
      });
      assert.equal(res.statusCode, 201, res.body);
      return json<Pod>(res);
    };
    /** The pod once it settled: RUNNING, or ERROR with its reason. */
    const settled = (key: string, id: string): Promise<Pod> =>
      eventually(
        `pod ${id} RUNNING or ERROR`,
        async () => {
          const pod = json<Pod>(await t.request(key, 'GET', `/v2/pods/${id}`));
          return pod.status === 'RUNNING' || pod.status === 'ERROR' ? pod : null;
        },
        60_000,
        50,
      );
    const containersOf = (id: string) =>
      e.client.listContainers({ all: true, filters: { label: [`gantry.instance=${id}`] } });
    /** Asserts the pod never got a container and ended in ERROR; answers its reason. */
    const refused = async (key: string, pod: Pod): Promise<string> => {
      const done = await settled(key, pod.id);
      assert.equal(done.status, 'ERROR', `pod ${pod.id} is ${done.status}`);
      assert.deepEqual(await containersOf(pod.id), [], 'no container was created');
      return done.statusReason ?? '';
    };

    before(async () => {
      registry = await startRegistry({ alice: 'alice-pw-4711', bob: 'bob-pw-0815' });
      secret = `${registry.address}/acme-${run}/model-server:3`;
      await pushImage(e.dockerHost, e.images.idle, secret, { username: 'alice', password: 'alice-pw-4711' });
      const registries = { allow: [registry.address], only: false, private: 'refuse' as const };
      const host = testHost({ vcpus: 32, memoryGb: 128 });
      fixture = makeDockerRuntime(e, { host, registries });
      t = await createTestApp({
        runtime: fixture.runtime,
        hosts: [host],
        file: {
          runtime: { kind: 'docker', docker: { registries } },
          rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
        },
      });
      a = await t.newAccount('owner');
      b = await t.newAccount('intruder');
      const owned = await createPod(a.key, secret, await credential(a.key, 'alice', 'alice-pw-4711'));
      assert.equal((await settled(a.key, owned.id)).status, 'RUNNING', 'the owner runs its private image');
    });
    after(async () => {
      await t?.close();
      await fixture?.cleanup();
      if (registry) {
        await registry.start();
        await forgetRegistry(e.client, e.dockerHost, registry.address, [canonicalImage(secret).repository]);
        await registry.close();
      }
    });

    test('another account naming the private image with no registry credential gets ERROR saying why, and no container', async () => {
      const reason = await refused(b.key, await createPod(b.key, secret));
      assert.match(reason, /is private on this host/);
      assert.match(reason, /Give the pod \(or the endpoint’s template\) a registry credential that can pull it/);
    });

    test('another account naming it with a credential the registry refuses gets ERROR, and no container', async () => {
      const wrong = await credential(b.key, 'bob', 'not-bobs-password');
      const reason = await refused(b.key, await createPod(b.key, secret, wrong));
      assert.match(reason, /with the instance's registry credential failed: .*unauthorized/);
      assert.doesNotMatch(reason, /not-bobs-password/);
    });

    test('another account naming it by digest, or without its tag, gets ERROR; by image ID it is refused with 400 IMAGE_NOT_ALLOWED', async () => {
      const held = await e.client.inspectImage(canonicalImage(secret).ref);
      assert.ok(held);
      const digest = held.RepoDigests?.find((d) => d.includes(`/acme-${run}/model-server@`));
      assert.ok(digest, JSON.stringify(held.RepoDigests));
      for (const image of [digest, secret.slice(0, secret.lastIndexOf(':'))])
        assert.match(await refused(b.key, await createPod(b.key, image)), /is private on this host/, image);
      for (const image of [held.Id, held.Id.slice(7), held.Id.slice(7, 19)]) {
        const res = await t.request(b.key, 'POST', '/v2/pods', {
          name: 'by-id',
          image,
          cpu: { id: 'cpu3c', vcpuCount: 2 },
        });
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(json(res).code, 'IMAGE_NOT_ALLOWED');
        assert.match(json(res).detail, /names an image by its ID, not by repository/);
      }
    });

    test('another account with a credential of its own that the registry accepts runs it', async () => {
      const own = await credential(b.key, 'bob', 'bob-pw-0815');
      const pod = await settled(b.key, (await createPod(b.key, secret, own)).id);
      assert.equal(pod.status, 'RUNNING', pod.statusReason ?? '');
    });

    test('with the registry down the private image is refused even to its owner, and public images still run for every account', async () => {
      await registry.stop();
      try {
        const ownerCredential = await credential(a.key, 'alice', 'alice-pw-4711');
        const reason = await refused(a.key, await createPod(a.key, secret, ownerCredential));
        assert.match(reason, /a registry that cannot be reached refuses it too.*connection refused/);
        for (const who of [a, b]) {
          const pod = await settled(who.key, (await createPod(who.key, e.images.idle)).id);
          assert.equal(pod.status, 'RUNNING', pod.statusReason ?? '');
        }
      } finally {
        await registry.start();
      }
    });
  });
}
