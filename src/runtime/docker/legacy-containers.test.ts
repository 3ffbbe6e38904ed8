import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { dockerEngine, instanceInfo, makeDockerRuntime, noEngine } from '../../../test/support/docker.js';
import { freePort, waitFor as eventually } from '../runtime-contract.js';
import { containerNameOf, instanceLabels, LABEL } from './docker-names.js';
import type { DockerClient } from './docker-client.js';

const engine = await dockerEngine();
after(() => engine?.client.close());
const skip = engine ? false : noEngine();

/** A container as the last version made one: on the engine's default bridge, unhardened, unlimited. */
async function legacyContainer(client: DockerClient, namespace: string, id: string, image: string, port: number) {
  const made = await client.createContainer(containerNameOf(namespace, id), {
    Image: image,
    Env: [],
    Labels: {
      ...instanceLabels(namespace, id, { kind: 'pod', accountId: 'old-acct' }, 'local'),
      [LABEL.spec]: 'an-older-spec',
      [LABEL.memory]: '0',
    },
    ExposedPorts: { '8000/tcp': {} },
    Tty: false,
    OpenStdin: false,
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    HostConfig: {
      RestartPolicy: { Name: 'no' },
      PortBindings: { '8000/tcp': [{ HostIp: '127.0.0.1', HostPort: String(port) }] },
    },
  });
  await client.startContainer(made.Id);
  return made.Id;
}

const memoryLog = () => {
  const lines: Array<{ msg: string; instances?: string[]; reason?: string }> = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        done();
      },
    }),
  );
  return { logger, lines };
};

test(
  "a running container an earlier version left on the shared bridge is moved onto its account's network live, keeping its id and its published port, and reported unhardened",
  { skip },
  async () => {
    const e = engine!;
    const { logger, lines } = memoryLog();
    const t = makeDockerRuntime(e, { logger });
    try {
      const port = await freePort();
      const id = await legacyContainer(e.client, t.namespace, 'legacy1', e.images.http, port);
      const before = (await eventually('the legacy container to answer', () => instanceInfo(port).catch(() => null)))
        .bootId;
      const attached = await t.runtime.attach();
      assert.equal(attached.find((a) => a.id === 'legacy1')?.status?.state, 'running', 'adopted as it runs');
      const info = (await e.client.inspectContainer(id))!;
      assert.equal(info.State.Running, true);
      assert.deepEqual(Object.keys(info.NetworkSettings?.Networks ?? {}), [`gantry-${t.namespace}-acct-old-acct`]);
      assert.equal((await instanceInfo(port)).bootId, before, 'the same process answers on the same port');
      assert.deepEqual(t.runtime.isolationGaps(), []);
      assert.deepEqual(lines.find((l) => /moved instances/.test(l.msg))?.instances, ['legacy1']);
      assert.deepEqual(lines.find((l) => /without this version's container hardening/.test(l.msg))?.instances, [
        'legacy1',
      ]);
    } finally {
      await t.cleanup();
    }
  },
);

test(
  'a container that cannot be moved off the shared bridge is a gap in the isolation, saying which and why',
  { skip },
  async () => {
    const e = engine!;
    // The pool holds one /24, which a network of someone else's already takes.
    const squatter = await e.client.createNetwork(`squatter-${process.pid}`, {}, { subnet: '10.122.0.0/24' });
    const t = makeDockerRuntime(e, { networks: { pool: '10.122.0.0/24', subnetPrefix: 24 } });
    try {
      await legacyContainer(e.client, t.namespace, 'stuck1', e.images.http, await freePort());
      await t.runtime.attach();
      const gaps = t.runtime.isolationGaps();
      assert.equal(gaps.length, 1);
      assert.equal(gaps[0]!.kind, 'shared-network');
      assert.match(gaps[0]!.detail, /instance stuck1 is still on a network accounts share \(.*no free subnet/);
    } finally {
      await t.cleanup();
      await e.client.removeNetwork(squatter.Id);
    }
  },
);
