/**
 * Hosts that go away (docs/fleet.md "Heartbeats", "Identity"), on a whole server with `runtime:
 * fleet` over real HTTP, stand-in agents speaking the agent protocol, and the injected clock for
 * the heartbeat timeout; on SQLite and on PostgreSQL, and on two PostgreSQL replicas. A host whose
 * heartbeat timeout passed is out of placement and of the catalog at that very instant (as `gantry
 * hosts list` says), a revoked one for good; a create only such a host could take is refused like
 * one on a full fleet; and every action on a pod whose host is away answers 2xx or 4xx, over REST
 * v2, REST v1 and GraphQL, never 5xx.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../src/domain/clock.js';
import { AGENT_API_PREFIX } from '../src/fleet/protocol.js';
import { dialects, openTestDb, postgresUrl, type DialectName, type TestDb } from './support/harness.js';
import { call, capacity, gpuUuid, joinBody, startFleetServer, until, type FleetServer } from './support/fleet.js';
import { HttpAgent } from './support/http-agent.js';

const KEY = 'fleet-away-admin-key-0123456789abcdef';
const TIMEOUT = 30_000;
const FILE = {
  runtime: 'fleet',
  fleet: { heartbeatMs: 1_000, heartbeatTimeoutMs: TIMEOUT, pollWaitMs: 25_000 },
  pods: { reconcileIntervalMs: 3_600_000 },
};

interface Pod {
  id: string;
  status: string;
  desiredStatus: string;
  statusReason: string | null;
  image: string;
  name: string;
}

interface Answer<T> {
  status: number;
  body: T;
}

/** REST and GraphQL calls with the admin key, and what the tests do again and again. */
function client(server: () => FleetServer) {
  const api = async <T = any>(method: string, path: string, body?: unknown): Promise<Answer<T>> => {
    const res = await fetch(`${server().url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    assert.ok(res.status < 500, `${method} ${path} answered ${res.status}: ${text}`);
    if (res.status >= 400) assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  };
  const graphql = async (query: string, podId: string) => {
    const r = await api<{
      data?: Record<string, any>;
      errors?: Array<{ message: string; extensions: { code: string } }>;
    }>('POST', '/graphql', { query, variables: { id: podId } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  return {
    api,
    graphql,
    pod: async (id: string) => (await api<Pod>('GET', `/v2/pods/${id}`)).body,
    create: (gpu: string) =>
      api<Pod & { code?: string; detail?: string }>('POST', '/v2/pods', {
        name: 'away',
        image: 'gantry-test/http:1',
        gpu: { id: gpu, count: 1 },
        disk: 5,
      }),
    /** The catalog's word on a GPU type: its stock level for pods, and whether any host offers it. */
    offered: async (gpu: string) =>
      (
        await api<{ availability: string; secure: boolean }>(
          'GET',
          `/v2/catalog/gpus/${encodeURIComponent(gpu)}?include=AVAILABILITY&product=POD`,
        )
      ).body,
  };
}

/** Joins a host of two `gpu`s through `server`, its stand-in agent reporting in full. */
async function joinHost(server: FleetServer, gpu: string): Promise<{ hostId: string; agent: HttpAgent }> {
  const { token } = await server.server.services.fleet.createJoinToken();
  const gpus = [0, 1].map(() => ({ uuid: gpuUuid(), name: gpu, memoryMb: 24_564 }));
  const joined = await call(
    server.url,
    null,
    'POST',
    `${AGENT_API_PREFIX}/join`,
    joinBody(token, { capacity: capacity({ gpus }) }),
  );
  assert.equal(joined.status, 201, JSON.stringify(joined.body));
  const agent = new HttpAgent(server.url, joined.body.credential);
  assert.equal((await agent.full()).status, 200);
  return { hostId: joined.body.hostId, agent };
}

for (const { name, skip } of dialects()) describe(`hosts that go away, on ${name}`, { skip }, () => suite(name));

function suite(dialect: DialectName): void {
  let t: TestDb | undefined;
  let s: FleetServer;
  const clock = new FakeClock(Date.now());
  const { api, graphql, pod, create, offered } = client(() => s);
  const fleet = () => s.server.services.fleet;

  /** Creates a pod of `gpu` and runs it on `agent`'s host. */
  const running = async (gpu: string, agent: HttpAgent): Promise<string> => {
    const r = await create(gpu);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    await agent.until('start', r.body.id);
    await until('the pod runs', async () => (await pod(r.body.id)).status === 'RUNNING');
    return r.body.id;
  };

  before(async () => {
    if (dialect === 'postgres') t = await openTestDb('postgres');
    s = await startFleetServer({
      dialect,
      ...(t ? { schema: t.schema } : {}),
      clock,
      file: FILE,
      env: { GANTRY_BOOTSTRAP_KEY: KEY },
    });
  });
  after(async () => {
    await s?.close();
    await t?.cleanup();
  });

  test('a host past its heartbeat timeout is out of placement and the catalog at that instant, as `hosts list` says, and a create only it could take answers the full fleet’s 400 NO_CAPACITY', async () => {
    const gpu = 'NVIDIA RTX A6000';
    const { hostId, agent } = await joinHost(s, gpu);
    const first = await running(gpu, agent);
    assert.equal((await offered(gpu)).secure, true);
    clock.advance(TIMEOUT);
    assert.equal((await fleet().get(hostId))?.state, 'available', 'at the timeout itself it is still in');
    assert.notEqual((await offered(gpu)).availability, 'NONE');
    clock.advance(1);
    // No check has run: the decision itself leaves the host out.
    assert.equal((await fleet().get(hostId))?.state, 'unreachable');
    const refused = await create(gpu);
    assert.deepEqual([refused.status, refused.body.code], [400, 'NO_CAPACITY'], JSON.stringify(refused.body));
    assert.deepEqual(await offered(gpu), { ...(await offered(gpu)), availability: 'NONE', secure: false });
    await until('its pods say their host is unreachable', async () =>
      /unreachable since/.test((await pod(first)).statusReason ?? ''),
    );
    assert.equal((await pod(first)).status, 'RUNNING', 'a pod keeps its status while its host is away');

    // A full fleet answers the same: the host back, and both its GPUs taken.
    assert.equal((await agent.full()).status, 200);
    assert.equal((await offered(gpu)).secure, true, 'back once it reports');
    await until('its pods are seen again', async () => (await pod(first)).statusReason === null);
    await running(gpu, agent);
    const full = await create(gpu);
    assert.deepEqual([full.status, full.body.code], [refused.status, refused.body.code]);
  });

  test('every action on the pods of an unreachable host answers 2xx or 409 over REST v2, REST v1 and GraphQL, never 5xx; what was stopped or terminated reaches the host once it is back', async () => {
    const gpu = 'NVIDIA GeForce RTX 3090';
    const { hostId, agent } = await joinHost(s, gpu);
    const up = await running(gpu, agent);
    const stopped = await running(gpu, agent);
    assert.equal((await api('POST', `/v2/pods/${stopped}/action`, { action: 'stop' })).status, 200);
    await agent.until('stop', stopped);
    clock.advance(TIMEOUT + 1);
    await offered(gpu);
    await until(
      'the pod says its host is unreachable',
      async () => (await pod(up)).statusReason?.startsWith(`host ${hostId} unreachable since`) === true,
    );

    const refusals = [
      await api('POST', `/v2/pods/${stopped}/action`, { action: 'start' }),
      await api('POST', `/v2/pods/${up}/action`, { action: 'restart' }),
      await api('PATCH', `/v2/pods/${up}`, { image: 'gantry-test/http:2' }),
      await api('POST', `/v1/pods/${stopped}/start`),
      await api('POST', `/v1/pods/${up}/restart`),
      await api('POST', `/v1/pods/${up}/reset`),
    ];
    for (const r of refusals) {
      assert.equal(r.status, 409, JSON.stringify(r.body));
      assert.equal(r.body.code, 'HOST_UNAVAILABLE');
      assert.match(r.body.detail, new RegExp(`host ${hostId} unreachable since .*can still be stopped or terminated`));
    }
    const resumed = await graphql('mutation($id: String) { podResume(input: { podId: $id }) { id } }', stopped);
    assert.equal(resumed.errors?.[0]?.extensions.code, 'HOST_UNAVAILABLE', JSON.stringify(resumed));
    assert.equal((await pod(up)).image, 'gantry-test/http:1', 'a refused change changes nothing');
    assert.equal((await api('PATCH', `/v2/pods/${up}`, { name: 'renamed' })).status, 200);
    const stop = await graphql('mutation($id: String) { podStop(input: { podId: $id }) { id desiredStatus } }', up);
    assert.deepEqual(stop.data?.podStop, { id: up, desiredStatus: 'EXITED' }, JSON.stringify(stop));
    assert.equal((await api('DELETE', `/v1/pods/${stopped}`)).status, 204);
    const gone = await graphql('mutation($id: String) { podTerminate(input: { podId: $id }) }', up);
    assert.equal(gone.errors, undefined, JSON.stringify(gone));
    for (const id of [up, stopped]) assert.equal((await pod(id)).status, 'TERMINATED');

    // The agent comes back: what waited in its queue is delivered, and the containers go.
    agent.reconnect();
    await agent.until('remove', up);
    assert.equal((await agent.full()).status, 200);
    assert.deepEqual(
      agent.received.filter((o) => o.kind === 'remove').map((o) => ('instanceId' in o ? o.instanceId : null)),
      [stopped, up],
    );
    assert.equal(agent.containers.has(up), false);
    assert.equal(agent.containers.has(stopped), false);
    assert.equal((await offered(gpu)).secure, true);
  });

  test('a revoked host is out of placement and the catalog for good, its last long-poll ending does not bring it back, and its pods end saying so: start 409, DELETE 204', async () => {
    const gpu = 'NVIDIA RTX A5000';
    const { hostId, agent } = await joinHost(s, gpu);
    const id = await running(gpu, agent);
    const poll = call(
      s.url,
      agent.credential,
      'GET',
      `${AGENT_API_PREFIX}/operations?after=${agent.after}&waitMs=20000`,
    );
    await until('the agent long-polls', () => fleet().waiting(hostId) === 1);
    const revoked = await fleet().revoke(hostId);
    const ended = await poll;
    assert.deepEqual([ended.status, ended.body.code], [401, 'HOST_REVOKED']);
    await until('the poll is over', () => fleet().waiting(hostId) === 0);
    assert.equal(s.server.services.inventory.isAvailable(hostId), false);
    assert.equal(s.server.services.inventory.host(hostId), undefined, 'out of the fleet, not only out of placement');
    const refused = await create(gpu);
    assert.deepEqual([refused.status, refused.body.code], [400, 'NO_CAPACITY'], JSON.stringify(refused.body));
    assert.deepEqual(await offered(gpu), { ...(await offered(gpu)), availability: 'NONE', secure: false });

    await until('the pod ends', async () => (await pod(id)).status === 'EXITED');
    assert.equal(
      (await pod(id)).statusReason,
      `host ${hostId} was revoked at ${new Date(revoked.revokedAt!).toISOString()}`,
    );
    const start = await api('POST', `/v2/pods/${id}/action`, { action: 'start' });
    assert.deepEqual([start.status, start.body.code], [409, 'HOST_UNAVAILABLE']);
    assert.match(start.body.detail, /was revoked at .*terminate the pod and create a new one/);
    assert.equal((await api('DELETE', `/v2/pods/${id}`)).status, 204);
    assert.equal((await pod(id)).status, 'TERMINATED');

    // A network volume of its data center is deleted without it.
    const volume = await api<{ id: string }>('POST', '/v2/network-volumes', {
      name: 'vol',
      size: 10,
      dataCenterId: 'US-TX-3',
    });
    assert.equal(volume.status, 201, JSON.stringify(volume.body));
    assert.equal((await api('DELETE', `/v2/network-volumes/${volume.body.id}`)).status, 204);
  });

  test('a pod of a host revoked from outside the server (as `gantry hosts revoke` does) is terminated with 204 whether or not the server heard of it yet', async () => {
    const gpu = 'NVIDIA L40S';
    const { hostId, agent } = await joinHost(s, gpu);
    const id = await running(gpu, agent);
    assert.ok(await fleet().hosts.revokeHost(hostId, clock.now()));
    assert.equal((await api('DELETE', `/v2/pods/${id}`)).status, 204);
    assert.equal((await pod(id)).status, 'TERMINATED');
    await fleet().syncRevocations();
    assert.equal(s.server.services.inventory.host(hostId), undefined);
    assert.deepEqual([(await create(gpu)).status, (await offered(gpu)).availability], [400, 'NONE']);
  });
}

describe(
  'a host that goes away, on two replicas of one PostgreSQL schema',
  { skip: postgresUrl() ? false : 'GANTRY_TEST_DATABASE_URL is not set' },
  () => {
    let t: TestDb;
    let a: FleetServer;
    let b: FleetServer;
    const clock = new FakeClock(Date.now());
    const onA = client(() => a);
    const onB = client(() => b);
    const gpu = 'NVIDIA GeForce RTX 4090';

    before(async () => {
      t = await openTestDb('postgres');
      const start = () =>
        startFleetServer({
          dialect: 'postgres',
          schema: t.schema,
          clock,
          file: FILE,
          env: { GANTRY_BOOTSTRAP_KEY: KEY },
        });
      a = await start();
      b = await start();
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await t?.cleanup();
    });

    test('a host past its heartbeat timeout is out of placement and the catalog on both replicas at once, and back on both once it reports', async () => {
      const { hostId, agent } = await joinHost(a, gpu);
      await until('B places on the joined host', () => b.server.services.inventory.isAvailable(hostId));
      assert.equal((await onB.offered(gpu)).secure, true);
      clock.advance(TIMEOUT + 1);
      for (const replica of [onA, onB]) {
        const refused = await replica.create(gpu);
        assert.deepEqual([refused.status, refused.body.code], [400, 'NO_CAPACITY'], JSON.stringify(refused.body));
        assert.equal((await replica.offered(gpu)).availability, 'NONE');
      }
      // It reports again, to A only: B hears of it through the fleet journal.
      assert.equal((await agent.full()).status, 200);
      assert.equal((await onA.offered(gpu)).secure, true);
      await until('B offers its GPUs again', async () => (await onB.offered(gpu)).secure);
      const created = await onB.create(gpu);
      assert.equal(created.status, 201, JSON.stringify(created.body));
    });
  },
);
