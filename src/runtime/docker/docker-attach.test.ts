import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dockerEngine, instanceInfo, makeDockerRuntime, noEngine } from '../../../test/support/docker.js';
import type { InstanceSpec } from '../runtime.js';
import { ChangeRecorder, freePort, instanceSpec } from '../runtime-contract.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

if (!engine) {
  test('the Docker runtime`s attach', { skip: noEngine() }, () => {});
} else {
  const e = engine;

  describe('DockerRuntime attach', () => {
    test('a second runtime over the same namespace adopts a running container without restarting it, and answers a stopped one as kept', async () => {
      const first = makeDockerRuntime(e);
      try {
        const web: InstanceSpec = instanceSpec({
          image: e.images.http,
          vcpus: 1,
          memoryGb: 1,
          owner: { kind: 'worker', accountId: 'acct-a', endpointId: 'ep-1' },
          ports: [{ private: 8000, public: await freePort(), protocol: 'http' }],
        });
        const idle = instanceSpec({ image: e.images.idle, owner: { kind: 'pod', accountId: 'acct-b' } });
        const changes = new ChangeRecorder(first.runtime);
        const beforeCreate = Date.now();
        await first.runtime.start(web);
        await changes.next(web.id, 'running', 30_000);
        await first.runtime.start(idle);
        await first.runtime.stop(idle.id);
        const bootId = (await instanceInfo(web.ports[0]!.public)).bootId;
        await first.runtime.close();
        assert.equal((await instanceInfo(web.ports[0]!.public)).bootId, bootId, 'close leaves containers running');

        const second = makeDockerRuntime(e, { namespace: first.namespace });
        try {
          const found = await second.runtime.attach();
          const adopted = found.find((f) => f.id === web.id);
          const kept = found.find((f) => f.id === idle.id);
          assert.equal(found.length, 2);
          assert.deepEqual(adopted?.owner, { kind: 'worker', accountId: 'acct-a', endpointId: 'ep-1' });
          assert.equal(adopted?.status?.state, 'running');
          const container = await e.client.inspectContainer(`gantry-${first.namespace}-${web.id}`);
          // adopted from the listing: started when it was created (whole seconds), so not before this
          // test asked for it and never later than the engine says (on a loaded machine the engine
          // may take seconds between creating and starting it)
          const engineStart = Date.parse(container!.State.StartedAt);
          const adoptedStart = adopted?.status?.startedAt ?? NaN;
          assert.ok(
            adoptedStart >= Math.floor(beforeCreate / 1_000) * 1_000 && adoptedStart <= engineStart,
            `${adoptedStart} vs asked at ${beforeCreate}, started at ${engineStart}`,
          );
          assert.deepEqual(kept, { id: idle.id, owner: { kind: 'pod', accountId: 'acct-b' }, status: null });

          assert.equal((await instanceInfo(web.ports[0]!.public)).bootId, bootId, 'adopted, not restarted');
          assert.equal((await second.runtime.inspect(web.id))?.state, 'running');
          assert.deepEqual(
            (await second.runtime.list()).map((s) => s.id),
            [web.id],
          );

          // The adopting runtime follows it from now on.
          const later = new ChangeRecorder(second.runtime);
          await e.client.killContainer(container!.Id, 'SIGKILL');
          const exited = await later.next(web.id, 'exited', 15_000);
          assert.equal(exited.exitCode, 137);
        } finally {
          await second.cleanup();
        }
      } finally {
        await first.cleanup();
      }
    });

    test('a running container without the memory label (made by an older Gantry) is inspected and adopted with its exact start time and limit', async () => {
      const first = makeDockerRuntime(e);
      try {
        const spec = instanceSpec({ image: e.images.idle, memoryGb: 1, owner: { kind: 'pod', accountId: 'acct-old' } });
        await first.runtime.start(spec);
        await first.runtime.close();
        // The same container as an older Gantry made it: recreated without the label.
        const name = `gantry-${first.namespace}-${spec.id}`;
        const made = (await e.client.inspectContainer(name))!;
        const labels = { ...made.Config.Labels };
        delete labels['gantry.memory'];
        await e.client.removeContainer(made.Id, { force: true });
        const { Id } = await e.client.createContainer(name, {
          Image: e.images.idle,
          Labels: labels,
          Env: [],
          Tty: false,
          OpenStdin: false,
          AttachStdin: false,
          AttachStdout: false,
          AttachStderr: false,
          HostConfig: { RestartPolicy: { Name: 'no' }, Memory: 1024 ** 3 },
        });
        await e.client.startContainer(Id);
        const engineStart = Date.parse((await e.client.inspectContainer(Id))!.State.StartedAt);

        const second = makeDockerRuntime(e, { namespace: first.namespace });
        try {
          const found = await second.runtime.attach();
          assert.equal(found.length, 1);
          assert.equal(found[0]!.status?.state, 'running');
          assert.equal(found[0]!.status?.startedAt, engineStart);
        } finally {
          await second.cleanup();
        }
      } finally {
        await first.cleanup();
      }
    });
  });
}
