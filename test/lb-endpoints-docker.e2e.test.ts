/**
 * Load-balancing endpoints (docs/load-balancing.md) on the Docker runtime: a real engine, a worker
 * container running test/fixtures/lb-worker.mjs on its PORT (80) in its account network, started
 * from zero by the first request, health-checked through the runtime, and reached through the
 * proxy listener without the caller's key.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { dockerEngine, noEngine, removeNamespace, testDockerRuntime, uniqueNamespace } from './support/docker.js';
import { buildImage } from './support/docker-images.js';
import { startSshFixture, type SshFixture, type SshTenant } from './support/ssh-fixture.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

describe('load-balancing endpoints on the Docker runtime', { skip: engine ? false : noEngine() }, () => {
  const namespace = uniqueNamespace();
  let f: SshFixture;
  let alice: SshTenant;
  let image: string;

  before(async () => {
    image = await buildImage(engine!.client, {
      name: 'lb-worker',
      node: true,
      files: [{ from: join(import.meta.dirname, 'fixtures', 'lb-worker.mjs'), to: '/app/lb-worker.mjs' }],
      changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/lb-worker.mjs"]'],
    });
    f = await startSshFixture({
      runtime: await testDockerRuntime(namespace),
      images: {},
      proxy: { port: 0, loadBalancer: { healthIntervalMs: 200 } },
      serverless: { autoscaler: { intervalMs: 200, nudgeGapMs: 0 } },
    });
    alice = await f.tenant('alice');
  });
  after(async () => {
    await f?.close();
    await removeNamespace(engine!.client, namespace);
  });

  test('the first request starts a worker container, waits for its health, and reaches its PORT without the key', async () => {
    const { templates, endpoints, autoscaler } = f.server.server.services;
    const template = await templates.create(alice.accountId, {
      name: 'lb-docker',
      imageName: image,
      isServerless: true,
      containerDiskInGb: 5,
    });
    const endpoint = await endpoints.create(alice.accountId, {
      name: 'lb',
      type: 'LB',
      templateId: template.id,
      instanceIds: ['cpu3c-2-4'],
      workersMin: 0,
      workersMax: 1,
      scalerType: 'REQUEST_COUNT',
      scalerValue: 4,
    });
    const res = await fetch(`${f.server.server.proxy!.url}/lb/${endpoint.id}/echo?x=1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}` },
      body: 'hello',
    });
    assert.equal(res.status, 200, await res.clone().text());
    const seen = (await res.json()) as {
      workerId: string;
      url: string;
      headers: Record<string, string>;
      bytes: number;
    };
    assert.deepEqual(autoscaler.workerIds(endpoint.id), [seen.workerId]);
    assert.equal(res.headers.get('x-runpod-worker-id'), seen.workerId);
    assert.equal(seen.url, '/echo?x=1');
    assert.equal(seen.bytes, 5);
    assert.equal(seen.headers.authorization, undefined);
  });
});
