/**
 * An interruptible (spot) pod on the Docker runtime, taken back for an on-demand pod (docs/pods.md,
 * "Interruptible pods and the reclaim ladder"): on a real engine, its container is really stopped
 * and removed, its pod volume stays, and the on-demand pod's container runs on the GPU it had. The
 * host's one GPU is declared (env-only), as on a machine without NVIDIA GPUs. Skipped, saying why,
 * when no engine answers.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Host } from '../src/domain/catalog.js';
import { containerNameOf, podVolumeNameOf } from '../src/runtime/docker/docker-names.js';
import { dockerEngine, noEngine, testHost } from './support/docker.js';
import { eventually } from './support/eventually.js';
import { json } from './support/harness.js';
import { withDockerApp } from './support/docker-engine-app.js';

const GPU = 'NVIDIA GeForce RTX 4090';

interface Pod {
  id: string;
  status: string;
  statusReason: string | null;
  interruptible?: true;
  cost: number;
}

const engine = await dockerEngine();
after(() => engine?.client.close());

if (!engine) {
  test('interruptible pods on the Docker runtime', { skip: noEngine() }, () => {});
} else {
  const e = engine;
  describe('interruptible pods on the Docker runtime', () => {
    test("an on-demand create on a full host stops and removes the spot pod's container, keeps its volume, and starts on its GPU", async () => {
      const host: Host = testHost({
        gpuTypeId: GPU,
        gpuCount: 1,
        cudaVersion: '12.4',
        gpuUuids: ['GPU-0f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b00'],
        gpuMode: 'env-only',
        cpuFlavors: [],
        vcpus: 2,
        memoryGb: 4,
      });
      await withDockerApp(e, host, async (t, fixture) => {
        const spotOwner = (await t.newAccount('spot')).key;
        const onDemandOwner = (await t.newAccount('on-demand')).key;
        const get = async (key: string, id: string) => json<Pod>(await t.request(key, 'GET', `/v2/pods/${id}`));
        const running = (key: string, id: string) =>
          eventually(`pod ${id} runs`, async () => {
            const p = await get(key, id);
            if (p.status === 'ERROR' || p.status === 'EXITED') throw new Error(`${id} ended: ${p.statusReason}`);
            return p.status === 'RUNNING' ? p : null;
          });
        const container = (id: string) => e.client.inspectContainer(containerNameOf(fixture.namespace, id));

        const created = await t.request(spotOwner, 'POST', '/v2/pods', {
          name: 'spot',
          image: e.images.idle,
          gpu: { id: GPU },
          interruptible: true,
          bidPerGpu: 0.4,
          mounts: { persistent: { size: 10, path: '/workspace' } },
        });
        assert.equal(created.statusCode, 201, created.body);
        const spot = json<Pod>(created);
        assert.equal(spot.interruptible, true);
        await running(spotOwner, spot.id);
        assert.equal((await container(spot.id))?.State?.Running, true);

        const taken = await t.request(onDemandOwner, 'POST', '/v2/pods', {
          name: 'on-demand',
          image: e.images.idle,
          gpu: { id: GPU },
        });
        assert.equal(taken.statusCode, 201, taken.body);
        const onDemand = json<Pod>(taken);
        await running(onDemandOwner, onDemand.id);

        const interrupted = await get(spotOwner, spot.id);
        assert.equal(interrupted.status, 'EXITED');
        assert.match(interrupted.statusReason ?? '', /^interrupted: /);
        assert.equal(interrupted.cost, 0);
        assert.equal(await container(spot.id), null, "the spot pod's container is removed, not kept stopped");
        assert.notEqual(
          await e.client.inspectVolume(podVolumeNameOf(fixture.namespace, spot.id)),
          null,
          'its pod volume stays',
        );
        const env = (await container(onDemand.id))?.Config?.Env ?? [];
        assert.ok(
          env.includes(`NVIDIA_VISIBLE_DEVICES=${host.gpuUuids![0]!}`),
          'the on-demand pod has the GPU the spot pod had',
        );
      });
    });
  });
}
