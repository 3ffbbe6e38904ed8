import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentProtocolServer } from '../../test/support/agent-protocol-server.js';
import type { HostCapacity, JoinRequest } from '../fleet/protocol.js';
import { ControlPlaneRefusal, ControlPlaneUnreachable } from './agent-transport.js';
import { HttpAgentTransport } from './http-agent-transport.js';

// The control plane's /agent/v1 routes are stood in for by test/support/agent-protocol-server.ts
// (a seam until they land; the fleet's integration runs these calls against gantry serve).
const server = await AgentProtocolServer.start();
after(() => server.close());

const capacity: HostCapacity = {
  vcpus: 2,
  memoryGb: 8,
  diskGb: 100,
  gpus: [],
  cudaVersion: null,
  gpuMode: 'env-only',
  cpuFlavors: ['cpu3c'],
  notes: [],
};
const joinBody = (token: string): JoinRequest => ({
  token,
  name: 'gpu-07',
  publicIp: '127.0.0.1',
  portRange: [40000, 40999],
  agentVersion: 'test',
  capacity,
});
const transport = new HttpAgentTransport({ timeoutMs: 2_000, pollSlackMs: 2_000 });
const never = new AbortController().signal;

test('join, operations and report speak the protocol, the credential as a bearer token', async () => {
  const joined = await transport.join(server.url, joinBody(server.token()));
  assert.match(joined.credential, /^ghc_host-/);
  assert.deepEqual(server.joins.at(-1), joinBody(server.joins.at(-1)!.token));
  const op = server.enqueue(joined.hostId, { kind: 'stop', instanceId: 'pod-1' });
  assert.deepEqual(await transport.operations(server.url, joined.credential, { after: 0, waitMs: 1_000 }, never), [op]);
  assert.deepEqual(server.polls.at(-1), { hostId: joined.hostId, after: 0, waitMs: 1_000 });
  const answer = await transport.report(`${server.url}/`, joined.credential, { acks: [{ opId: op.id, ok: true }] });
  assert.deepEqual(answer.refused, []);
  assert.deepEqual(server.hosts.get(joined.hostId)!.pending, [], 'the acknowledged operation is no longer pending');
  assert.deepEqual(await transport.operations(server.url, joined.credential, { after: 0, waitMs: 0 }, never), []);
});

test('a refused token or a revoked credential is a refusal with its code; neither secret is in the message', async () => {
  const token = server.token();
  const joined = await transport.join(server.url, joinBody(token));
  const reused = await transport.join(server.url, joinBody(token)).catch((e: unknown) => e);
  assert.ok(reused instanceof ControlPlaneRefusal);
  assert.deepEqual([reused.status, reused.code], [401, 'JOIN_TOKEN_INVALID']);
  assert.ok(!reused.message.includes(token));
  server.revoke(joined.hostId);
  const revoked = await transport.report(server.url, joined.credential, {}).catch((e: unknown) => e);
  assert.ok(revoked instanceof ControlPlaneRefusal);
  assert.deepEqual([revoked.status, revoked.code], [401, 'HOST_REVOKED']);
  assert.ok(!revoked.message.includes(joined.credential));
});

test('no answer, a 5xx, or a body that is not the protocol is unreachable: the agent moves on', async () => {
  const silent = createServer(() => undefined);
  const html = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy</html>'),
  );
  await Promise.all([silent, html].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
  const urlOf = (s: typeof silent) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  try {
    const impatient = new HttpAgentTransport({ timeoutMs: 100, pollSlackMs: 100 });
    const hung = await impatient
      .operations(urlOf(silent), 'ghc_x_y', { after: 0, waitMs: 50 }, never)
      .catch((e: unknown) => e);
    assert.ok(hung instanceof ControlPlaneUnreachable);
    assert.match(hung.message, /did not answer GET \/agent\/v1\/operations within 150 ms/);
    const proxy = await transport.report(urlOf(html), 'ghc_x_y', {}).catch((e: unknown) => e);
    assert.ok(proxy instanceof ControlPlaneUnreachable);
    assert.match(proxy.message, /answered POST \/agent\/v1\/report with 200 and no JSON/);
    server.failWith = 503;
    const down = await transport.report(server.url, 'ghc_x_y', {}).catch((e: unknown) => e);
    assert.ok(down instanceof ControlPlaneUnreachable);
    assert.match(down.message, /503 UNAVAILABLE/);
  } finally {
    server.failWith = null;
    silent.closeAllConnections();
    await Promise.all([silent, html].map((s) => new Promise((resolve) => s.close(resolve))));
  }
  const closedPort = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
  const refused = await transport.join(`http://127.0.0.1:${closedPort}`, joinBody('gjt_abc')).catch((e: unknown) => e);
  assert.ok(refused instanceof ControlPlaneUnreachable);
  assert.match(refused.message, /ECONNREFUSED/);
});

test('a poll aborted by the agent stopping rejects at once with the abort', async () => {
  const joined = await transport.join(server.url, joinBody(server.token()));
  const stopping = new AbortController();
  const poll = transport.operations(server.url, joined.credential, { after: 0, waitMs: 30_000 }, stopping.signal);
  stopping.abort(new Error('stopping'));
  await assert.rejects(poll, /stopping/);
});
