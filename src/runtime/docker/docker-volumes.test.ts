import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import {
  dockerEngine,
  instanceHttp,
  makeDockerRuntime,
  noEngine,
  type RuntimeFixture,
} from '../../../test/support/docker.js';
import type { InstanceSpec, VolumeSource } from '../runtime.js';
import { ChangeRecorder, freePort, instanceSpec } from '../runtime-contract.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

if (!engine) {
  test('the Docker runtime`s volumes', { skip: noEngine() }, () => {});
} else {
  const e = engine;
  const withRuntime = async (body: (t: RuntimeFixture) => Promise<void>): Promise<void> => {
    const t = makeDockerRuntime(e);
    try {
      await body(t);
    } finally {
      await t.cleanup();
    }
  };
  const httpSpec = async (volumes: VolumeSource[], overrides: Partial<InstanceSpec> = {}): Promise<InstanceSpec> =>
    instanceSpec({
      image: e.images.http,
      vcpus: 1,
      memoryGb: 1,
      volumes,
      ports: [{ private: 8000, public: await freePort(), protocol: 'http' }],
      ...overrides,
    });
  const startRunning = async (t: RuntimeFixture, spec: InstanceSpec): Promise<void> => {
    const changes = new ChangeRecorder(t.runtime);
    await t.runtime.start(spec);
    await changes.next(spec.id, 'running', 30_000);
    changes.unsubscribe();
  };
  const put = async (spec: InstanceSpec, path: string, body: string): Promise<void> => {
    const res = await instanceHttp(spec.ports[0]!.public, 'PUT', `/file?path=${encodeURIComponent(path)}`, body);
    assert.equal(res.status, 204, res.text);
  };
  const get = async (spec: InstanceSpec, path: string): Promise<string | null> => {
    const res = await instanceHttp(spec.ports[0]!.public, 'GET', `/file?path=${encodeURIComponent(path)}`);
    return res.status === 404 ? null : res.text;
  };

  describe('DockerRuntime volumes', () => {
    test('a persistent volume survives stop and a start in a new container, and goes with remove', () =>
      withRuntime(async (t) => {
        const spec = await httpSpec([{ kind: 'persistent', path: '/workspace' }]);
        await startRunning(t, spec);
        await put(spec, '/workspace/notes.txt', 'kept');
        await put(spec, '/tmp/scratch.txt', 'layer');
        await t.runtime.stop(spec.id);

        // A changed spec makes a new container: only the volume can carry the file over.
        const changed = { ...spec, env: { CHANGED: '1' } };
        await startRunning(t, changed);
        assert.equal(await get(changed, '/workspace/notes.txt'), 'kept');
        assert.equal(await get(changed, '/tmp/scratch.txt'), null, 'the new container has a fresh writable layer');

        const volume = `gantry-${t.namespace}-pod-${spec.id}`;
        assert.equal((await e.client.inspectVolume(volume))?.Labels?.['gantry.instance'], spec.id);
        await t.runtime.remove(spec.id);
        assert.equal(await t.runtime.inspect(spec.id), null);
        assert.equal(await e.client.inspectContainer(`gantry-${t.namespace}-${spec.id}`), null);
        assert.equal(await e.client.inspectVolume(volume), null);
        await t.runtime.remove(spec.id);
      }));

    test('a network volume is shared by the instances that mount it, refused removal while one runs, and removed by removeVolume', () =>
      withRuntime(async (t) => {
        const volume: VolumeSource = {
          kind: 'network',
          volumeId: `nv${Date.now().toString(36)}`,
          path: '/runpod-volume',
        };
        const [a, b] = [await httpSpec([volume]), await httpSpec([volume])];
        await startRunning(t, a);
        await startRunning(t, b);
        await put(a, '/runpod-volume/model.bin', 'weights');
        assert.equal(await get(b, '/runpod-volume/model.bin'), 'weights');

        await assert.rejects(
          t.runtime.removeVolume({ kind: 'network', volumeId: volume.volumeId }),
          /still mounted by running instances \(.*(ct\w+).*\); stop them first/,
        );
        await t.runtime.stop(a.id);
        await t.runtime.remove(b.id);
        const name = `gantry-${t.namespace}-nv-${volume.volumeId}`;
        assert.equal(
          (await e.client.inspectVolume(name))?.Labels?.['gantry.volume-id'],
          volume.volumeId,
          'the volume outlives its instances',
        );
        await t.runtime.removeVolume({ kind: 'network', volumeId: volume.volumeId });
        assert.equal(await e.client.inspectVolume(name), null);
      }));

    test("an engine's refusal of a mount reaches the tenant without the host's paths, while the operator's log keeps them; the container's own paths stay", async () => {
      const logged: string[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(line) });
      const t = makeDockerRuntime(e, { logger });
      try {
        const dataRoot = (await e.client.info()).DockerRootDir!;
        assert.ok(dataRoot.startsWith('/'), dataRoot);
        const refusal = async (path: string): Promise<string> =>
          t.runtime.start(await httpSpec([{ kind: 'persistent', path }])).then(
            () => assert.fail(`the engine mounted a volume over ${path}`),
            (err: Error) => err.message,
          );
        // Files the engine itself makes in every container: a volume cannot go over them, and the
        // engine's refusals name its layer folder or the volume's folder on the host.
        const overFile = await refusal('/etc/hostname');
        assert.match(overFile, /source \/etc\/hostname is not directory/);
        const overMounts = await refusal('/etc/mtab');
        assert.match(overMounts, /error mounting "<volume>" to rootfs at "\/etc\/mtab": "\/proc\/1\/mounts"/);
        for (const refused of [overFile, overMounts])
          assert.ok(!refused.includes(dataRoot) && !refused.includes('_data') && !refused.includes('overlay'), refused);
        const full = logged.join('');
        assert.ok(full.includes(`${dataRoot}/overlay2/`), 'the operator log has the engine message whole');
        assert.ok(full.includes(`${dataRoot}/volumes/`), 'the operator log has the engine message whole');

        // A missing command is a path in the container: the tenant's own, kept.
        const missing = await t.runtime.start(await httpSpec([], { image: e.images.idle, args: '/nope' })).then(
          () => assert.fail('a missing command started'),
          (err: Error) => err.message,
        );
        assert.match(missing, /"\/nope"/);
        assert.ok(!missing.includes(dataRoot), missing);
      } finally {
        await t.cleanup();
      }
    });
  });
}
