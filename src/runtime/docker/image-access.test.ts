/**
 * The private-image rule (image-access.ts) on a real engine against real registries: one that
 * asks for a credential (htpasswd users alice and bob), one that asks for none. Skipped, saying
 * why, without an engine or without docker-registry.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { dockerEngine, makeDockerRuntime, noEngine, type RuntimeFixture } from '../../../test/support/docker.js';
import {
  forgetRegistry,
  pushImage,
  registryUnavailable,
  startRegistry,
  type TestRegistry,
} from '../../../test/support/registry.js';
import { canonicalImage } from '../../domain/image-ref.js';
import { instanceSpec } from '../runtime-contract.js';
import type { InstanceOwner, InstanceSpec } from '../runtime.js';
import { PrivateImageLedger } from './private-image-ledger.js';

const engine = await dockerEngine();
after(() => engine?.client.close());
const noRegistry = registryUnavailable();

const ALICE = { username: 'alice', password: 'alice-pw-4711' };
const BOB = { username: 'bob', password: 'bob-pw-0815' };
const owner = (accountId: string): InstanceOwner => ({ kind: 'pod', accountId });

if (!engine || noRegistry) {
  test('private images on a real registry', { skip: noEngine() || noRegistry! }, () => {});
} else {
  const e = engine;
  describe('private images on a real registry', () => {
    let priv: TestRegistry;
    let pub: TestRegistry;
    let fixture: RuntimeFixture;
    const run = randomBytes(4).toString('hex');
    let secret = '';
    let open = '';
    const ledger = new PrivateImageLedger(e.client);
    const containersOf = async (id: string) =>
      e.client.listContainers({ all: true, filters: { label: [`gantry.instance=${id}`] } });
    const runtimeOn = (namespace?: string) =>
      makeDockerRuntime(e, {
        registries: { allow: [priv.address, pub.address], only: false, private: 'refuse' },
        ...(namespace ? { namespace } : {}),
      });
    const spec = (accountId: string, image: string, registryAuth: InstanceSpec['registryAuth'] = null) =>
      instanceSpec({ owner: owner(accountId), image, registryAuth, vcpus: 1, memoryGb: 1 });
    /** Starts `s` and answers why it was refused, checking that nothing was created for it. */
    const refused = async (f: RuntimeFixture, s: InstanceSpec): Promise<string> => {
      const err = await f.runtime.start(s).then(
        () => assert.fail(`${s.image} started for ${s.owner.accountId}`),
        (err: unknown) => err as Error,
      );
      assert.deepEqual(await containersOf(s.id), [], `no container was created for ${s.image}`);
      return err.message;
    };

    before(async () => {
      [priv, pub] = await Promise.all([
        startRegistry({ alice: ALICE.password, bob: BOB.password }),
        startRegistry(null),
      ]);
      secret = `${priv.address}/team-${run}/secret:1`;
      open = `${pub.address}/team-${run}/open:1`;
      await pushImage(e.dockerHost, e.images.idle, secret, ALICE);
      await pushImage(e.dockerHost, e.images.idle, open, ALICE);
      fixture = runtimeOn();
    });
    after(async () => {
      await fixture?.cleanup();
      for (const r of [priv, pub])
        if (r)
          await forgetRegistry(e.client, e.dockerHost, r.address, [
            canonicalImage(secret).repository,
            canonicalImage(open).repository,
          ]);
      await Promise.all([priv?.close(), pub?.close()]);
    });

    test('an image one account pulled with its credential runs for another only with a credential the registry accepts: none and a wrong one are refused before any container is made', async () => {
      const a = await fixture.runtime.start(spec('acct-a', secret, ALICE));
      assert.equal(a.state, 'running');
      assert.equal(await ledger.isPrivate(canonicalImage(secret).repository), true, 'recorded on the engine');

      const none = await refused(fixture, spec('acct-b', secret));
      assert.match(none, /^image "[^"]+" is private on this host/);
      assert.match(none, /Asking the registry for it with no registry credential failed: .*no basic auth credentials/);
      assert.match(none, /Give the pod \(or the endpoint’s template\) a registry credential that can pull it$/);
      const wrong = await refused(fixture, spec('acct-b', secret, { username: 'bob', password: 'not-bobs' }));
      assert.match(wrong, /Asking the registry for it with the instance's registry credential failed: .*unauthorized/);
      assert.doesNotMatch(wrong, /not-bobs/, 'the password is never in the reason');

      const b = await fixture.runtime.start(spec('acct-b', secret, BOB));
      assert.equal(b.state, 'running', 'its own valid credential proves access');
      // The owner proves it again on every create: a revoked credential would stop it too.
      const again = await fixture.runtime.start(spec('acct-a', secret, ALICE));
      assert.equal(again.state, 'running');
    });

    test('the same private repository named by digest, with a tag beside the digest, without its tag or by image ID is refused to an account that cannot pull it', async () => {
      await fixture.runtime.start(spec('acct-a', secret, ALICE));
      const held = await e.client.inspectImage(canonicalImage(secret).ref);
      assert.ok(held);
      const digest = held.RepoDigests?.find((d) => d.startsWith(`${priv.address}/team-${run}/secret@`));
      assert.ok(digest, `the engine holds ${secret} by digest: ${JSON.stringify(held.RepoDigests)}`);
      const repo = secret.slice(0, secret.lastIndexOf(':'));
      for (const image of [digest, `${repo}:1@${digest.slice(digest.indexOf('@') + 1)}`, repo])
        assert.match(await refused(fixture, spec('acct-b', image)), /is private on this host/, image);
      const id = held.Id;
      for (const image of [id, id.slice('sha256:'.length), id.slice(0, 'sha256:'.length + 4), id.slice(7, 19)])
        assert.match(
          await refused(fixture, spec('acct-b', image)),
          /names an image by its ID, not by repository/,
          image,
        );
      // A shorter ID prefix is a Docker Hub name to the engine, never this image: its pull fails.
      assert.doesNotMatch(await refused(fixture, spec('acct-b', id.slice(7, 15))), /private/);
    });

    test('a pull with a credential of an image the registry does not have leaves no record of its repository', async () => {
      const typo = `${priv.address}/team-${run}/no-such-image:1`;
      await assert.rejects(fixture.runtime.start(spec('acct-a', typo, ALICE)), /manifest unknown|not found/);
      assert.equal(await ledger.isPrivate(canonicalImage(typo).repository), false);
      assert.equal(
        await ledger.isPrivate(canonicalImage(secret).repository),
        true,
        'the image pulled is still private',
      );
    });

    test('a restarted runtime, and another installation on the same engine, still refuse the private image to an account that cannot pull it', async () => {
      await fixture.runtime.start(spec('acct-a', secret, ALICE));
      const other = runtimeOn();
      try {
        await other.runtime.attach();
        assert.match(await refused(other, spec('acct-b', secret)), /is private on this host/);
      } finally {
        await other.cleanup();
      }
    });

    test('with the registry down a private image is refused even to the account that pulled it (fail closed), while images of other repositories start from the engine’s copy', async () => {
      await fixture.runtime.start(spec('acct-a', secret, ALICE));
      const publicFirst = await fixture.runtime.start(spec('acct-c', open));
      assert.equal(publicFirst.state, 'running', 'pulled without a credential: public');
      await Promise.all([priv.stop(), pub.stop()]);
      try {
        for (const s of [spec('acct-a', secret, ALICE), spec('acct-b', secret, BOB)])
          assert.match(
            await refused(fixture, s),
            /a registry that cannot be reached refuses it too.*connection refused/,
          );
        for (const image of [open, e.images.idle]) {
          const started = await fixture.runtime.start(spec('acct-b', image));
          assert.equal(started.state, 'running', `${image} runs with no registry asked`);
        }
      } finally {
        await Promise.all([priv.start(), pub.start()]);
      }
    });

    test('a repository pulled with a credential is public again once its registry gives it to an account without one, and then starts with no registry asked', async () => {
      const repository = canonicalImage(open).repository;
      await ledger.forget(repository);
      await e.client.removeImage(canonicalImage(open).ref);
      await fixture.runtime.start(spec('acct-a', open, ALICE));
      assert.equal(await ledger.isPrivate(repository), true, 'a pull with a credential records it');
      const b = await fixture.runtime.start(spec('acct-b', open));
      assert.equal(b.state, 'running');
      assert.equal(await ledger.isPrivate(repository), false, 'anyone may pull it: the record is dropped');
      await pub.stop();
      try {
        assert.equal((await fixture.runtime.start(spec('acct-c', open))).state, 'running');
      } finally {
        await pub.start();
      }
    });
  });
}
