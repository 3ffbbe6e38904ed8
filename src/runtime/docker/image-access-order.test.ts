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

/** An engine whose registry gives its images to alice only, recording each call. */
function standIn() {
  const calls: string[] = [];
  const volumes = new Set<string>();
  let pulled: () => void = () => undefined;
  const client: ImageAccessOptions['client'] = {
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
      pulled();
    },
  };
  return { calls, client, onPull: (f: () => void) => (pulled = f) };
}

const spec = (accountId: string, image: string, registryAuth: InstanceSpec['registryAuth'] = null) =>
  instanceSpec({ owner: { kind: 'pod', accountId }, image, registryAuth });
const turn = () => new Promise((resolve) => setImmediate(resolve));

test('a pull with a credential waits for the creates of its repository under way, and a create admitted before it began proves access first', async () => {
  const engine = standIn();
  const access = new ImageAccess({
    client: engine.client,
    logger: pino({ level: 'silent' }),
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
  assert.deepEqual(engine.calls.slice(2), ['pull reg.example/team/app:2 as alice']);

  // Admitted when the repository was not private yet: the record made since is seen at the create.
  let sent = false;
  await assert.rejects(
    late.create(async () => {
      sent = true;
    }),
    /is private on this host/,
  );
  assert.equal(sent, false, 'refused before the create is sent');
  assert.deepEqual(engine.calls.slice(3), ['ask registry for reg.example/team/app:1 as nobody']);
});
