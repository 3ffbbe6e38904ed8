/**
 * The pod HTTP proxy on the fleet (docs/proxy.md "Fleet"): `gantry serve` with runtime fleet, a
 * Docker daemon of the test's own as the host and a real `gantry agent` over it, all separate
 * processes. A pod runs test/fixtures/proxy-upstream.mjs; real clients reach it through the proxy
 * listener, which reaches the container only through the agent's tunnel (the agent dials it; the
 * control plane never does). Requests, an event stream, a WebSocket, 100 MB each way; an agent
 * killed mid-request ends what was under way with 502, and the next request once it is back
 * works; a pod stopped mid-answer ends the answer. A load-balancing endpoint (docs/load-balancing.md)
 * on the same host: its first request starts a worker from zero, waits for its health, and reaches
 * the worker's PORT through the tunnel too.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildImage } from './support/docker-images.js';
import { dockerDaemonsUnavailable, startDockerDaemon, type DockerDaemon } from './support/docker-daemons.js';
import { eventually, freePortRange } from './support/eventually.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi } from './support/nvidia-smi.js';
import { runGantry, spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { spawnAgent, type SpawnedAgent } from './support/spawn-agent.js';
import { openWebSocket } from './support/websocket-client.js';
import { bearerApi } from './support/bearer-api.js';

const KEY = 'fleet-proxy-admin-key-0123456789abcdef';
const MB100 = 100 * 1024 * 1024;
const METRICS_TOKEN = 'fleet-proxy-metrics-token-0123456789';

const unavailable = dockerDaemonsUnavailable();
if (unavailable && process.env.CI === 'true')
  throw new Error(`the fleet proxy's end-to-end tests need a Docker daemon of their own under CI: ${unavailable}`);

interface Pod {
  id: string;
  status: string;
  httpProxy?: Array<{ port: number; url: string }>;
}

/** A POST whose body is written as the test says; answers the status and body once the answer ends. */
function post(url: string, headers: Record<string, string> = {}) {
  const req = request(url, { method: 'POST', headers: { 'transfer-encoding': 'chunked', ...headers } });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  return { req, answer };
}

describe("the pod HTTP proxy through a fleet agent's tunnel", { skip: unavailable ?? false }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-fleet-proxy-'));
  const dataDir = join(dir, 'control-plane');
  let daemon: DockerDaemon | null = null;
  let server: SpawnedGantry | null = null;
  let agent: SpawnedAgent | null = null;
  let agentArgs: string[] = [];
  let pod: Pod;
  let base = '';
  let lbImage = '';

  const api = bearerApi(() => server!.url, KEY);
  /** A gauge's value in the server's `/metrics`. */
  const gauge = async (name: string): Promise<number> => {
    const text = await (
      await fetch(`${server!.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  };
  const diagnostics = () => `server:\n${server?.output().slice(-3000)}\nagent:\n${agent?.output().slice(-3000)}`;

  before(async () => {
    daemon = await startDockerDaemon();
    const image = await buildImage(daemon.client, {
      name: 'proxy-upstream',
      node: true,
      files: [{ from: join(import.meta.dirname, 'fixtures', 'proxy-upstream.mjs'), to: '/app/proxy-upstream.mjs' }],
      changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/proxy-upstream.mjs"]'],
    });
    lbImage = await buildImage(daemon.client, {
      name: 'lb-worker',
      node: true,
      files: [{ from: join(import.meta.dirname, 'fixtures', 'lb-worker.mjs'), to: '/app/lb-worker.mjs' }],
      changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/lb-worker.mjs"]'],
    });
    const configPath = join(dir, 'config.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        fleet: { heartbeatMs: 500, heartbeatTimeoutMs: 4_000, pollWaitMs: 5_000 },
        pods: { stopGraceMs: 1_000 },
        runtime: { kind: 'fleet' },
        proxy: { port: 0, connectTimeoutMs: 5_000, loadBalancer: { healthIntervalMs: 200 } },
        serverless: { autoscaler: { intervalMs: 200 } },
        metrics: { token: METRICS_TOKEN, refreshMs: 0 },
      }),
    );
    server = await spawnGantry(['--host', '127.0.0.1', '--data-dir', dataDir, '--config', configPath], {
      GANTRY_BOOTSTRAP_KEY: KEY,
    });
    const smi = standInNvidiaSmi({
      // one GPU for the pod, one for the load-balancing endpoint's worker
      csv: [0, 1]
        .map((i) => `${i}, GPU-f1ee7000-0000-4000-8000-00000000000${i}, NVIDIA GeForce RTX 4090, 24564`)
        .join('\n'),
      banner: BANNER_12_4,
    });
    const ports = await freePortRange(20);
    agentArgs = [
      '--server',
      server.url,
      '--data-dir',
      join(dir, 'agent'),
      '--name',
      'tunnel-host',
      '--docker-host',
      daemon.host,
      '--public-ip',
      '127.0.0.1',
      '--port-range',
      `${ports[0]}-${ports[1]}`,
      '--nvidia-smi',
      smi.path,
      '--gpu-mode',
      'env-only',
    ];
    const token = runGantry(['hosts', 'token', 'create', '--data-dir', dataDir]).stdout.trim();
    agent = spawnAgent([...agentArgs, '--token', token], { GANTRY_LOG_LEVEL: 'warn' });
    const created = await eventually(
      () => `the pod created: ${diagnostics()}`,
      async () => {
        const r = await api<Pod>('POST', '/v2/pods', {
          name: 'web',
          image,
          gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
          ports: ['8000/http'],
          disk: 5,
        });
        return r.status === 201 ? r.body : null;
      },
    );
    pod = await eventually(
      () => `pod ${created.id} RUNNING: ${diagnostics()}`,
      async () => {
        const r = await api<Pod>('GET', `/v2/pods/${created.id}`);
        return r.body.status === 'RUNNING' && r.body.httpProxy?.length ? r.body : null;
      },
      60_000,
    );
    base = pod.httpProxy![0]!.url;
    await eventually(
      () => `the container's server to answer through the proxy: ${diagnostics()}`,
      async () => (await fetch(`${base}health`).catch(() => null))?.ok,
    );
  });

  after(async () => {
    await agent?.stop('SIGTERM');
    await server?.stop();
    await daemon?.stop();
    removeStandIns();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a request reaches the container through the agent, with the forwarded headers', async () => {
    const res = await fetch(`${base}echo?x=1`, { headers: { authorization: 'Bearer gty_not-passed-to-the-pod' } });
    assert.equal(res.status, 200);
    const seen = (await res.json()) as { url: string; headers: Record<string, string> };
    assert.equal(seen.url, '/echo?x=1');
    assert.equal(seen.headers.authorization, undefined);
    assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1');
  });

  test('an event stream and a WebSocket go through the tunnel', async () => {
    const events = await fetch(`${base}events`);
    const reader = events.body!.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value), 'data: first\n\n');
    await (await fetch(`${base}events/next`)).text();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += new TextDecoder().decode(chunk.value);
    assert.equal(rest, 'data: second\n\n');
    const ws = await openWebSocket(`${base}ws`);
    for (const text of ['from the client', 'x'.repeat(60_000)]) {
      ws.send(text);
      assert.equal(await ws.next(), `echo: ${text}`);
    }
    // one tunnel to the one host, carrying the WebSocket (and what the pool keeps open)
    assert.equal(await gauge('gantry_fleet_tunnels_open'), 1);
    assert.ok((await gauge('gantry_fleet_tunnel_streams_open')) >= 1);
    ws.close();
  });

  test('100 MB go down and 100 MB go up through the tunnel, whole', async () => {
    const res = await fetch(`${base}download?bytes=${MB100}`);
    assert.equal(res.status, 200);
    const expected = Buffer.alloc(64 * 1024);
    for (let i = 0; i < expected.length; i++) expected[i] = i % 251;
    const got = createHash('sha256');
    const want = createHash('sha256');
    let bytes = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      got.update(chunk);
      bytes += chunk.length;
    }
    for (let left = MB100; left > 0; left -= expected.length)
      want.update(expected.subarray(0, Math.min(left, expected.length)));
    assert.equal(bytes, MB100);
    assert.equal(got.digest('hex'), want.digest('hex'));

    const { req, answer } = post(`${base}count`);
    const sent = createHash('sha256');
    const chunk = Buffer.alloc(1024 * 1024, 7);
    for (let i = 0; i < 100; i++) {
      sent.update(chunk);
      if (!req.write(chunk)) await new Promise((resolve) => req.once('drain', resolve));
    }
    req.end();
    const counted = await answer;
    assert.equal(counted.status, 200, counted.body);
    assert.deepEqual(JSON.parse(counted.body), { bytes: MB100, sha256: sent.digest('hex') });
    // the agent and the control plane spoke the tunnel's protocol (growing windows too) without a fault
    const metrics = await (
      await fetch(`${server!.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    const errors = [...metrics.matchAll(/^gantry_fleet_tunnel_protocol_errors_total\{reason="(\w+)"\} (\S+)$/gm)];
    assert.deepEqual(
      errors.map((m) => [m[1], Number(m[2])]),
      [
        ['malformed', 0],
        ['credit', 0],
        ['stream', 0],
        ['direction', 0],
      ],
    );
  });

  test("a load-balancing endpoint's first request starts a worker on the agent's host and reaches its PORT through the tunnel, without the key", async () => {
    const template = await api<{ id: string }>('POST', '/v2/templates', {
      name: 'lb-fleet',
      image: lbImage,
      serverless: true,
      containerDiskInGb: 5,
    });
    assert.equal(template.status, 201, JSON.stringify(template.body));
    const endpoint = await api<{ id: string; loadBalancerUrl?: string }>('POST', '/v2/serverless', {
      name: 'lb-fleet',
      templateId: template.body.id,
      type: 'LOAD_BALANCER',
      gpu: { pools: ['ADA_24'] },
      scaling: { type: 'REQUEST_COUNT', requestCount: 4 },
      workers: { min: 0, max: 1, idleTimeout: 600 },
    });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
    assert.ok(endpoint.body.loadBalancerUrl, JSON.stringify(endpoint.body));
    // no worker yet: this request waits while one starts on the host and its health says ready
    const res = await fetch(`${endpoint.body.loadBalancerUrl}/echo?x=1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}` },
      body: 'hello',
    });
    assert.equal(res.status, 200, `${await res.clone().text()}\n${diagnostics()}`);
    const seen = (await res.json()) as {
      workerId: string;
      url: string;
      headers: Record<string, string>;
      bytes: number;
    };
    assert.equal(res.headers.get('x-runpod-worker-id'), seen.workerId);
    assert.equal(seen.url, '/echo?x=1');
    assert.equal(seen.bytes, 5);
    assert.equal(seen.headers.authorization, undefined);
    // the worker's health answered 204 before it answered 200, and it ran on the agent's engine
    const pings = (await (
      await fetch(`${endpoint.body.loadBalancerUrl}/pings`, { headers: { authorization: `Bearer ${KEY}` } })
    ).json()) as { pings: number };
    assert.ok(pings.pings >= 3, JSON.stringify(pings));
    const containers = await daemon!.client.listContainers({
      filters: { label: [`gantry.instance=${seen.workerId}`] },
    });
    assert.equal(containers.length, 1, 'the worker is a container of the agent host');
  });

  test('an agent killed mid-request ends it with 502 and an open WebSocket with it; once the agent is back the next request works', async () => {
    const ws = await openWebSocket(`${base}ws`);
    ws.send('before');
    assert.equal(await ws.next(), 'echo: before');
    // an upload under way: the pod answers only once its body ends
    const { req, answer } = post(`${base}count`);
    req.write(Buffer.alloc(64 * 1024));
    await eventually('the upload to reach the tunnel', async () => req.socket !== null && req.socket.bytesWritten > 0);
    await agent!.stop('SIGKILL');
    const cut = await answer;
    assert.equal(cut.status, 502, cut.body);
    assert.match(JSON.parse(cut.body).detail, /could not be reached/);
    await ws.closed;
    req.destroy();
    agent = spawnAgent(agentArgs, { GANTRY_LOG_LEVEL: 'warn' });
    const back = await eventually(
      () => `a request through the restarted agent: ${diagnostics()}`,
      async () => {
        const res = await fetch(`${base}echo`).catch(() => null);
        return res?.status === 200 ? res : null;
      },
      60_000,
    );
    assert.equal(((await back.json()) as { url: string }).url, '/echo');
  });

  test('a pod stopped mid-answer ends the answer, and its URL then answers 502', async () => {
    const res = await fetch(`${base}hold`);
    const reader = res.body!.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value), 'started\n');
    assert.equal((await api('POST', `/v2/pods/${pod.id}/action`, { action: 'stop' })).status, 200);
    await assert.rejects(async () => {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read());
    });
    await eventually(
      'the pod EXITED',
      async () => (await api<Pod>('GET', `/v2/pods/${pod.id}`)).body.status === 'EXITED',
    );
    const after = await fetch(base);
    assert.equal(after.status, 502);
  });
});
