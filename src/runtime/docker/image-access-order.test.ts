/**
 * The order image-access.ts keeps within one process, which a real engine cannot be made to show
 * on demand (it needs a pull to finish between a lookup and a create): the engine client is a
 * stand-in here, at the `DockerClient` seam, recording what it is asked.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { instanceSpec } from '../runtime-contract.js';
import type { InstanceSpec } from '../runtime.js';
import { ImageAccess, type ImageAccessOptions } from './image-access.js';
import { DockerEngineError } from './engine-connection.js';

const ALICE = { username: 'alice', password: 'pw' };

/**
 * An engine whose registry gives its images to alice only, recording each call: a pull of a ref
 * in `missing` is refused (the registry has no such manifest), one in `gated` waits for its gate.
 */
function standIn() {
  const calls: string[] = [];
  const volumes = new Set<string>();
  const held: string[] = [];
  const missing = new Set<string>();
  const gated = new Map<string, Promise<void>>();
  const client: ImageAccessOptions['client'] = {
    listImages: async () => held.map((ref) => ({ Id: `sha256:${ref}`, RepoTags: [ref], RepoDigests: [] })),
    inspectVolume: async (name) => (volumes.has(name) ? ({ Name: name } as never) : null),
    createVolume: async (name) => {
      calls.push('record');
      volumes.add(name);
      return { Name: name } as never;
    },
    removeVolume: async (name) => volumes.delete(name),
    inspectDistribution: async (ref, auth) => {
      calls.push(`ask registry for ${ref} as ${auth?.username ?? 'nobody'}`);
      if (auth?.username !== 'alice') throw new DockerEngineError('asking', 401, 'unauthorized');
      return { Descriptor: { mediaType: 'm', digest: 'sha256:x', size: 1 } };
    },
    pullImage: async (ref, options) => {
      calls.push(`pull ${ref} as ${options?.auth?.username ?? 'nobody'}`);
      await gated.get(ref);
      if (missing.has(ref)) throw new DockerEngineError(`pulling image "${ref}"`, 404, 'manifest unknown');
      held.push(ref);
    },
  };
  return { calls, client, volumes, missing, gated };
}

const silent = pino({ level: 'silent' });

const spec = (accountId: string, image: string, registryAuth: InstanceSpec['registryAuth'] = null) =>
  instanceSpec({ owner: { kind: 'pod', accountId }, image, registryAuth });
const turn = () => new Promise((resolve) => setImmediate(resolve));

test('a pull with a credential waits for the creates of its repository under way, and a create admitted before it began proves access first', async () => {
  const engine = standIn();
  const access = new ImageAccess({
    client: engine.client,
    logger: silent,
    registryGuard: { refusal: async () => null },
  });
  const early = await access.admit(spec('acct-b', 'reg.example/team/app:1'));
  const late = await access.admit(spec('acct-c', 'reg.example/team/app:1'));

  let created: () => void = () => undefined;
  const earlyCreate = early.create(async () => {
    engine.calls.push('create for acct-b');
    await new Promise<void>((resolve) => (created = resolve));
  });
  const owner = await access.admit(spec('acct-a', 'reg.example/team/app:2', ALICE));
  const pulling = owner.pullMissing();
  await turn();
  assert.deepEqual(engine.calls, ['create for acct-b', 'record'], 'recorded, and the pull waits for the create');
  created();
  await earlyCreate;
  await pulling;
  assert.deepEqual(
    engine.calls.slice(2),
    ['pull reg.example/team/app:2 as alice', 'record'],
    'recorded again once pulled',
  );

  // Admitted when the repository was not private yet: the record made since is seen at the create.
  let sent = false;
  await assert.rejects(
    late.create(async () => {
      sent = true;
    }),
    /is private on this host/,
  );
  assert.equal(sent, false, 'refused before the create is sent');
  assert.deepEqual(engine.calls.slice(4), ['ask registry for reg.example/team/app:1 as nobody']);
});

test('a pull with a credential that the engine refuses drops the record it made, unless the engine holds an image of the repository or another pull of it is under way', async () => {
  const engine = standIn();
  const access = new ImageAccess({
    client: engine.client,
    logger: silent,
    registryGuard: { refusal: async () => null },
  });
  const pull = async (image: string) => (await access.admit(spec('acct-a', image, ALICE))).pullMissing();
  const recorded = () => engine.volumes.size;

  // A name a tenant tried, of which nothing exists: no record is left behind.
  engine.missing.add('reg.example/team/typo:1');
  await assert.rejects(pull('reg.example/team/typo:1'), /manifest unknown/);
  assert.equal(recorded(), 0);

  // Another pull of the repository under way here: its record stays, and it lands recorded.
  let release: () => void = () => undefined;
  engine.gated.set('reg.example/team/app:1', new Promise<void>((resolve) => (release = resolve)));
  engine.missing.add('reg.example/team/app:2');
  const first = pull('reg.example/team/app:1');
  await turn();
  await assert.rejects(pull('reg.example/team/app:2'), /manifest unknown/);
  assert.equal(recorded(), 1, 'kept for the pull under way');
  release();
  await first;
  assert.equal(recorded(), 1);

  // The engine holds an image of it: a failed pull of another tag keeps the record.
  engine.missing.add('reg.example/team/app:3');
  await assert.rejects(pull('reg.example/team/app:3'), /manifest unknown/);
  assert.equal(recorded(), 1);
  await assert.rejects(access.admit(spec('acct-b', 'reg.example/team/app:1')), /is private on this host/);
});
