/**
 * The pod HTTP proxy (docs/proxy.md) on the Docker runtime: a real engine, a container running
 * test/fixtures/proxy-upstream.mjs on port 8000 of its account network, reached through Gantry's
 * proxy listener by real clients — a request, an event stream, a WebSocket — and refused once the
 * pod stops.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { dockerEngine, noEngine, removeNamespace, testDockerRuntime, uniqueNamespace } from './support/docker.js';
import { buildImage } from './support/docker-images.js';
import { eventually } from './support/eventually.js';
import { startSshFixture, type SshFixture, type SshTenant } from './support/ssh-fixture.js';
import { openWebSocket } from './support/websocket-client.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

interface ProxiedPod {
  id: string;
  status: string;
  httpProxy: Array<{ port: number; url: string }>;
}

describe('the pod HTTP proxy on the Docker runtime', { skip: engine ? false : noEngine() }, () => {
  const namespace = uniqueNamespace();
  let f: SshFixture;
  let alice: SshTenant;
  let pod: ProxiedPod;
  let base: string;

  before(async () => {
    const image = await buildImage(engine!.client, {
      name: 'proxy-upstream',
      node: true,
      files: [{ from: join(import.meta.dirname, 'fixtures', 'proxy-upstream.mjs'), to: '/app/proxy-upstream.mjs' }],
      changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/proxy-upstream.mjs"]'],
    });
    f = await startSshFixture({
      runtime: await testDockerRuntime(namespace),
      images: {},
    });
    alice = await f.tenant('alice');
    pod = (await f.runningPod(alice, {
      image,
      gpu: undefined,
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      ports: ['8000/http'],
    })) as unknown as ProxiedPod;
    base = pod.httpProxy[0]!.url;
    // running is not yet listening: the container has no health probe here
    await eventually(
      'the container’s server to answer through the proxy',
      async () => (await fetch(`${base}health`)).ok,
    );
  });
  after(async () => {
    await f?.close();
    await removeNamespace(engine!.client, namespace);
  });

  test('a request reaches the container through the proxy, with the forwarded headers and without the Gantry key', async () => {
    const res = await fetch(`${base}echo?x=1`, { headers: { authorization: `Bearer ${alice.key}` } });
    assert.equal(res.status, 200);
    const seen = (await res.json()) as { url: string; headers: Record<string, string> };
    assert.equal(seen.url, '/echo?x=1');
    assert.equal(seen.headers.authorization, undefined);
    assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1');
  });

  test('an event stream and a WebSocket go through to the container', async () => {
    const events = await fetch(`${base}events`);
    const reader = events.body!.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value), 'data: first\n\n');
    await (await fetch(`${base}events/next`)).text();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += new TextDecoder().decode(chunk.value);
    assert.equal(rest, 'data: second\n\n');
    const ws = await openWebSocket(`${base}ws`);
    ws.send('from the client');
    assert.equal(await ws.next(), 'echo: from the client');
    ws.close();
  });

  test('once the pod is stopped its URL answers 502, saying it is not running', async () => {
    const stopped = await f.call(alice.key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'stop' });
    assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
    await f.podUntil(alice, pod.id, (p) => p.status === 'EXITED');
    const res = await fetch(base);
    assert.equal(res.status, 502);
    assert.match(((await res.json()) as { detail: string }).detail, /is EXITED/);
  });
});
