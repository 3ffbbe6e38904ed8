/**
 * FlashBoot's pre-pulled images (serverless/image-prepull.ts) on a real Docker Engine, from a real
 * registry with authentication (Debian's docker-registry: test/support/registry.ts): a FlashBoot
 * endpoint's image is on the engine before its first worker starts, a private one pulled with its
 * owner's credential only; an image no FlashBoot endpoint uses any more is removed (not while a
 * container uses it); the disk budget bounds what is pulled; an image the engine held before is
 * never removed; the budget is shared fairly between accounts (the attack it stops: one tenant's
 * FlashBoot endpoints taking a host's whole budget, so another's first worker waits for its pull);
 * a failing pull backs off on an injected clock, and a fixed credential ends the wait. Passes run on
 * the test's schedule (`pass()`). Skipped, saying why, without an engine or a registry (a failure under CI=true).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { FakeClock } from '../src/domain/clock.js';
import { canonicalImage } from '../src/domain/image-ref.js';
import type { Runtime } from '../src/runtime/runtime.js';
import { ImagePrepull, type ImagePrepullConfig } from '../src/serverless/image-prepull.js';
import { AutoscalerStore } from '../src/store/autoscaler-store.js';
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

describe(
  'FlashBoot pre-pulled images on the Docker runtime',
  { skip: !engine ? noEngine() : (noRegistry ?? false) },
  () => {
    const e = engine!;
    const run = randomBytes(4).toString('hex');
    let registry: TestRegistry;
    let fixture: RuntimeFixture;
    let t: TestApp;
    let alice: { accountId: string; key: string };
    let bob: { accountId: string };
    let aliceCredential = '';
    let privateImage = '';
    let publicImage = '';
    let aliceImage2 = '';
    let bobImage = '';
    let bobCredential = '';

    /** A pass loop of its own over the app's services, with `config`. */
    const prepull = (
      config: Partial<ImagePrepullConfig> = {},
      held = true,
      parts: { clock?: FakeClock; runtime?: Pick<Runtime, 'prepareImage' | 'preparedImages' | 'discardImage'> } = {},
    ) =>
      new ImagePrepull({
        runtime: parts.runtime ?? fixture.runtime,
        inventory: t.services.inventory,
        store: new AutoscalerStore(t.services.db),
        endpoints: t.services.endpoints,
        registries: t.services.registries,
        catalog: t.config.catalog,
        lease: { isHeld: () => held },
        clock: parts.clock ?? new FakeClock(),
        logger: pino({ level: 'silent' }),
        config: { intervalMs: 0, diskBudgetGb: 100, ...config },
      });
    /** Room for alice's two images and half of another: both of hers fit, not with bob's too. */
    const budgetGb = async () => {
      const [idle, http] = await Promise.all([e.images.idle, e.images.http].map((i) => e.client.inspectImage(i)));
      const [small, large] = [idle!.Size ?? 0, http!.Size ?? 0];
      assert.ok(large >= 1.5 * small, `the http image (${large} B) is the larger by far (idle ${small} B)`);
      return (small + large + 0.5 * small) / 1e9;
    };
    const onEngine = async (image: string) => (await e.client.inspectImage(canonicalImage(image).ref)) !== null;
    const prepared = async () => (await fixture.runtime.preparedImages('local')).map((p) => p.image).sort();
    const flashEndpoint = async (accountId: string, image: string, registryId: string | null, name: string) => {
      // Endpoints are ordered by creation (oldest first): the app's clock moves between them.
      (t.clock as FakeClock).advance(1_000);
      const template = await t.services.templates.create(accountId, {
        name: `${name}-${run}`,
        imageName: image,
        isServerless: true,
        containerDiskInGb: 5,
        ...(registryId ? { containerRegistryAuthId: registryId } : {}),
      });
      return t.services.endpoints.create(accountId, {
        name,
        templateId: template.id,
        instanceIds: ['cpu3c-2-4'],
        workersMin: 0,
        workersMax: 1,
        flashboot: true,
      });
    };

    before(async () => {
      registry = await startRegistry({ alice: 'alice-pw-4711', bob: 'bob-pw-0815' });
      privateImage = `${registry.address}/acme-${run}/model:1`;
      aliceImage2 = `${registry.address}/acme-${run}/model2:1`;
      bobImage = `${registry.address}/bob-${run}/model:1`;
      await pushImage(e.dockerHost, e.images.idle, privateImage, { username: 'alice', password: 'alice-pw-4711' });
      // Another image than the others (the engine's in-use check goes by image, not by name).
      await pushImage(e.dockerHost, e.images.http, aliceImage2, { username: 'alice', password: 'alice-pw-4711' });
      await pushImage(e.dockerHost, e.images.idle, bobImage, { username: 'bob', password: 'bob-pw-0815' });
      const registries = { allow: [registry.address], only: false, private: 'refuse' as const };
      const host = testHost({ vcpus: 32, memoryGb: 128 });
      fixture = makeDockerRuntime(e, { host, registries });
      t = await createTestApp({
        runtime: fixture.runtime,
        hosts: [host],
        file: { runtime: { kind: 'docker', docker: { registries } } },
      });
      alice = await t.newAccount('alice');
      bob = await t.newAccount('bob');
      aliceCredential = (
        await t.services.registries.create(alice.accountId, {
          name: 'alice-reg',
          username: 'alice',
          password: 'alice-pw-4711',
        })
      ).id;
      bobCredential = (
        await t.services.registries.create(bob.accountId, { name: 'bob-reg', username: 'bob', password: 'wrong-pw' })
      ).id;
      // A public image: the same registry's, pushed where anyone may pull (the registry asks every
      // pull for a credential, so "public" here is an image the engine already holds: never pulled, never removed).
      publicImage = e.images.idle;
    });
    after(async () => {
      await t?.close();
      await fixture?.cleanup();
      if (registry) {
        await registry.start();
        const repositories = [privateImage, aliceImage2, bobImage].map((i) => canonicalImage(i).repository);
        await forgetRegistry(e.client, e.dockerHost, registry.address, repositories);
        await registry.close();
      }
    });

    test('a FlashBoot endpoint naming a private image without a credential the registry accepts gets nothing pulled', async () => {
      const endpoint = await flashEndpoint(bob.accountId, privateImage, null, 'bob-private');
      await prepull().pass();
      assert.equal(await onEngine(privateImage), false);
      assert.deepEqual(await prepared(), []);
      await t.services.endpoints.update(bob.accountId, endpoint.id, { flashboot: false });
    });

    test("a FlashBoot endpoint's private image is pulled with its owner's credential before any worker starts, and recorded as pre-pulled", async () => {
      assert.equal(await onEngine(privateImage), false, 'not on the engine before');
      await flashEndpoint(alice.accountId, privateImage, aliceCredential, 'alice-flash');
      await prepull({}, false).pass();
      assert.equal(await onEngine(privateImage), false, 'a replica that does not scale pulls nothing');
      await prepull().pass();
      assert.equal(await onEngine(privateImage), true, 'pulled ahead of the first job');
      assert.deepEqual(await prepared(), [canonicalImage(privateImage).ref]);
      const [record] = await fixture.runtime.preparedImages('local');
      assert.equal(record?.accountId, alice.accountId, 'recorded for its owner (its share counts it)');
    });

    test('an image the engine already held is neither recorded nor ever removed', async () => {
      const endpoint = await flashEndpoint(bob.accountId, publicImage, null, 'bob-public');
      const pass = prepull();
      await pass.pass();
      assert.deepEqual(await prepared(), [canonicalImage(privateImage).ref], 'only what was pulled is recorded');
      await t.services.endpoints.update(bob.accountId, endpoint.id, { flashboot: false });
      await pass.pass();
      assert.equal(await onEngine(publicImage), true, 'kept');
    });

    test('an image no FlashBoot endpoint uses any more is removed with its record; while a container uses it, it is kept', async () => {
      const [endpoint] = (await t.services.endpoints.list(alice.accountId)).filter((x) => x.name === 'alice-flash');
      assert.ok(endpoint);
      // A container of the image (a pod of alice's) holds it.
      const created = await t.request(alice.key, 'POST', '/v2/pods', {
        name: 'holder',
        image: privateImage,
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        registry: aliceCredential,
      });
      assert.equal(created.statusCode, 201, created.body);
      const podId = json<{ id: string }>(created).id;
      const containers = () => e.client.listContainers({ all: true, filters: { label: [`gantry.instance=${podId}`] } });
      await eventually(
        'the pod to run',
        async () => {
          const pod = json<{ status: string }>(await t.request(alice.key, 'GET', `/v2/pods/${podId}`));
          return pod.status === 'RUNNING';
        },
        60_000,
      );
      await t.services.endpoints.update(alice.accountId, endpoint.id, { flashboot: false });
      const pass = prepull();
      await pass.pass();
      assert.equal(await onEngine(privateImage), true, 'kept while a container uses it');
      assert.deepEqual(await prepared(), [canonicalImage(privateImage).ref], 'and still recorded');
      assert.equal((await t.request(alice.key, 'DELETE', `/v2/pods/${podId}`)).statusCode, 204);
      await eventually('its container to go', async () => (await containers()).length === 0, 60_000);
      await pass.pass();
      assert.equal(await onEngine(privateImage), false, 'removed once nothing uses it');
      assert.deepEqual(await prepared(), []);
    });

    test("the host's disk budget bounds what is pre-pulled: an image larger than what is left is removed again and not tried again", async () => {
      const [endpoint] = (await t.services.endpoints.list(alice.accountId)).filter((x) => x.name === 'alice-flash');
      await t.services.endpoints.update(alice.accountId, endpoint!.id, { flashboot: true });
      const pass = prepull({ diskBudgetGb: 0.000_001 }); // 1 kB
      await pass.pass();
      assert.equal(await onEngine(privateImage), false, 'pulled, found too large, removed');
      assert.deepEqual(await prepared(), []);
      await pass.pass();
      assert.equal(await onEngine(privateImage), false, 'not pulled again');
      await prepull().pass();
      assert.equal(await onEngine(privateImage), true, 'a budget it fits pulls it');
    });

    test('a pull the registry refuses backs off, longer at each failure, and a fixed credential retries it at once', async () => {
      const clock = new FakeClock();
      let tries = 0;
      const runtime: Pick<Runtime, 'prepareImage' | 'preparedImages' | 'discardImage'> = {
        prepareImage: (hostId, request) => {
          if (request.image === bobImage) tries++;
          return fixture.runtime.prepareImage(hostId, request);
        },
        preparedImages: (hostId) => fixture.runtime.preparedImages(hostId),
        discardImage: (hostId, image) => fixture.runtime.discardImage(hostId, image),
      };
      const loop = prepull({}, true, { clock, runtime });
      await flashEndpoint(bob.accountId, bobImage, bobCredential, 'bob-flash');
      const passAfter = async (ms: number) => {
        clock.advance(ms);
        await loop.pass();
        return tries;
      };
      assert.equal(await passAfter(0), 1, 'tried once');
      assert.equal(await onEngine(bobImage), false, 'the wrong credential pulls nothing');
      assert.equal(await passAfter(15_000), 1, 'not at the next pass');
      assert.equal(await passAfter(45_000), 2, 'again after the first back-off (a minute)');
      assert.equal(await passAfter(60_000), 2, 'the back-off grew: not a minute after');
      assert.equal(await passAfter(60_000), 3, 'two minutes after');
      await t.services.registries.update(bob.accountId, bobCredential, { username: 'bob', password: 'bob-pw-0815' });
      assert.equal(await passAfter(1_000), 4, 'the credential changed: tried at once');
      assert.equal(await onEngine(bobImage), true, 'and pulled');
    });

    test("one account's FlashBoot endpoints cannot take a host's whole pre-pull budget: another account's image is pre-pulled, the first account's newest image removed for it", async () => {
      const [bobFlash] = (await t.services.endpoints.list(bob.accountId)).filter((x) => x.name === 'bob-flash');
      await t.services.endpoints.update(bob.accountId, bobFlash!.id, { flashboot: false });
      const loop = prepull({ diskBudgetGb: await budgetGb() });
      await loop.pass();
      assert.equal(await onEngine(bobImage), false, "bob's image removed once bob wanted it no more");
      await flashEndpoint(alice.accountId, aliceImage2, aliceCredential, 'alice-flash-2');
      await loop.pass();
      const ref = (image: string) => canonicalImage(image).ref;
      assert.deepEqual(await prepared(), [ref(privateImage), ref(aliceImage2)].sort(), 'alone, alice may take it all');
      await t.services.endpoints.update(bob.accountId, bobFlash!.id, { flashboot: true });
      await loop.pass();
      assert.deepEqual(
        await prepared(),
        [ref(privateImage), ref(bobImage)].sort(),
        "bob's image pulled; alice's newest endpoint's image removed to make room",
      );
      assert.equal(await onEngine(aliceImage2), false);
      await loop.pass();
      assert.deepEqual(await prepared(), [ref(privateImage), ref(bobImage)].sort(), 'and it stays so');
      for (const [who, name] of [
        [alice.accountId, 'alice-flash'],
        [alice.accountId, 'alice-flash-2'],
        [bob.accountId, 'bob-flash'],
      ] as const) {
        const [endpoint] = (await t.services.endpoints.list(who)).filter((x) => x.name === name);
        await t.services.endpoints.update(who, endpoint!.id, { flashboot: false });
      }
      await loop.pass();
      assert.deepEqual(await prepared(), [], 'nothing left once no FlashBoot endpoint wants them');
    });

    test("an over-share account's image a container uses is never removed for another account: its other image goes instead", async () => {
      const mine = async (who: string, name: string) =>
        (await t.services.endpoints.list(who)).filter((x) => x.name === name)[0]!;
      const set = async (who: string, name: string, flashboot: boolean) =>
        t.services.endpoints.update(who, (await mine(who, name)).id, { flashboot });
      await set(alice.accountId, 'alice-flash', true);
      await set(alice.accountId, 'alice-flash-2', true);
      const loop = prepull({ diskBudgetGb: await budgetGb() });
      await loop.pass();
      const ref = (image: string) => canonicalImage(image).ref;
      assert.deepEqual(await prepared(), [ref(privateImage), ref(aliceImage2)].sort());
      // A pod of alice's newest image holds it.
      const created = await t.request(alice.key, 'POST', '/v2/pods', {
        name: 'holder-2',
        image: aliceImage2,
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        registry: aliceCredential,
      });
      assert.equal(created.statusCode, 201, created.body);
      const podId = json<{ id: string }>(created).id;
      await eventually(
        'the pod to run',
        async () =>
          json<{ status: string }>(await t.request(alice.key, 'GET', `/v2/pods/${podId}`)).status === 'RUNNING',
        60_000,
      );
      await set(bob.accountId, 'bob-flash', true);
      await loop.pass();
      assert.deepEqual(
        await prepared(),
        [ref(aliceImage2), ref(bobImage)].sort(),
        "bob's image pulled; alice's image in use kept, her other one removed",
      );
      assert.equal(await onEngine(aliceImage2), true);
      assert.equal(await onEngine(privateImage), false);
      assert.equal((await t.request(alice.key, 'DELETE', `/v2/pods/${podId}`)).statusCode, 204);
      const containers = () => e.client.listContainers({ all: true, filters: { label: [`gantry.instance=${podId}`] } });
      await eventually('its container to go', async () => (await containers()).length === 0, 60_000);
      for (const [who, name] of [
        [alice.accountId, 'alice-flash'],
        [alice.accountId, 'alice-flash-2'],
        [bob.accountId, 'bob-flash'],
      ] as const)
        await set(who, name, false);
      await loop.pass();
      assert.deepEqual(await prepared(), []);
    });
  },
);
