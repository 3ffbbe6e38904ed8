import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DOCKER_HOST, dockerEngine, instanceInfo, makeDockerRuntime, noEngine } from '../../../test/support/docker.js';
import { UnixSocketProxy } from '../../../test/support/socket-proxy.js';
import type { InstanceSpec, InstanceState, InstanceStatus } from '../runtime.js';
import { ChangeRecorder, freePort, instanceSpec, waitFor } from '../runtime-contract.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

/** The first change of `id` to `state` after the `from`th change recorded. */
const nextAfter = (
  changes: ChangeRecorder,
  from: number,
  id: string,
  state: InstanceState,
  timeoutMs = 20_000,
): Promise<InstanceStatus> =>
  waitFor(
    `a "${state}" change of ${id}`,
    () => changes.changes.slice(from).find((c) => c.id === id && c.state === state),
    timeoutMs,
  );

if (!engine) {
  test('the Docker runtime`s engine outages', { skip: noEngine() }, () => {});
} else {
  const e = engine;

  describe('DockerRuntime engine outages', () => {
    test('an engine nobody answers at: start rejects saying so, unavailable() says why, attach rejects', async () => {
      const t = makeDockerRuntime(e, { dockerHost: 'unix:///nonexistent/gantry/docker.sock' });
      try {
        assert.equal(t.runtime.unavailable(), null, 'nothing is known before the engine is asked');
        const began = Date.now();
        await assert.rejects(
          t.runtime.start(instanceSpec({ image: e.images.idle })),
          /the Docker Engine at unix:\/\/\/nonexistent\/gantry\/docker\.sock is unreachable: connect ENOENT/,
        );
        assert.ok(Date.now() - began < 5_000, 'it fails fast');
        assert.match(
          t.runtime.unavailable() ?? '',
          /^the Docker Engine at unix:\/\/\/nonexistent\/gantry\/docker\.sock is unreachable since \d{4}-\d\d-\d\dT[\d:.]+Z: connect ENOENT/,
        );
        await assert.rejects(t.runtime.attach(), /is unreachable: connect ENOENT/);
        await t.runtime.stop('never-started');
      } finally {
        await t.cleanup();
      }
    });

    test('when the engine goes away live instances turn unknown once; when it is back they return, and one that died meanwhile is started again', async () => {
      if (!DOCKER_HOST.startsWith('unix://')) return;
      const proxy = new UnixSocketProxy(DOCKER_HOST.slice('unix://'.length));
      await proxy.start();
      const t = makeDockerRuntime(e, { dockerHost: `unix://${proxy.path}` });
      try {
        const spec = async (): Promise<InstanceSpec> =>
          instanceSpec({
            image: e.images.http,
            vcpus: 1,
            memoryGb: 1,
            ports: [{ private: 8000, public: await freePort(), protocol: 'http' }],
          });
        const [steady, dying] = [await spec(), await spec()];
        const changes = new ChangeRecorder(t.runtime);
        await t.runtime.start(steady);
        await t.runtime.start(dying);
        await changes.next(steady.id, 'running', 30_000);
        await changes.next(dying.id, 'running', 30_000);
        const steadyBoot = (await instanceInfo(steady.ports[0]!.public)).bootId;
        const dyingBoot = (await instanceInfo(dying.ports[0]!.public)).bootId;

        const beforeCut = changes.changes.length;
        await proxy.cut();
        const unknown = await nextAfter(changes, beforeCut, steady.id, 'unknown');
        await nextAfter(changes, beforeCut, dying.id, 'unknown');
        assert.match(
          unknown.reason ?? '',
          new RegExp(
            `^the Docker Engine at unix://${proxy.path.replace(/[.]/g, '\\.')} is unreachable since \\d{4}-[\\d-]+T[\\d:.]+Z: `,
          ),
        );
        assert.equal(t.runtime.unavailable(), unknown.reason);
        assert.equal((await t.runtime.inspect(steady.id))?.state, 'unknown');
        await assert.rejects(t.runtime.start(instanceSpec({ image: e.images.idle })), /is unreachable/);

        // The engine restarting would stop every container; here one dies while nobody watches.
        const dyingContainer = await e.client.inspectContainer(`gantry-${t.namespace}-${dying.id}`);
        await e.client.killContainer(dyingContainer!.Id, 'SIGKILL');

        const beforeReturn = changes.changes.length;
        await proxy.start();
        await nextAfter(changes, beforeReturn, steady.id, 'running');
        await nextAfter(changes, beforeReturn, dying.id, 'running', 30_000);
        assert.equal(t.runtime.unavailable(), null);
        assert.equal(
          changes.statesOf(steady.id).filter((s) => s === 'unknown').length,
          1,
          'unknown is told once per outage',
        );
        assert.equal(
          (await instanceInfo(steady.ports[0]!.public)).bootId,
          steadyBoot,
          'a container that kept running is not touched',
        );
        assert.notEqual((await instanceInfo(dying.ports[0]!.public)).bootId, dyingBoot, 'the one that died runs again');
        assert.equal(
          (await e.client.inspectContainer(dyingContainer!.Id))?.State.Running,
          true,
          'in its own container',
        );
        assert.ok(!changes.statesOf(dying.id).includes('exited'));
      } finally {
        await t.cleanup();
        await proxy.close();
      }
    });
  });
}
