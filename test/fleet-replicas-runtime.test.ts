/**
 * `runtime: fleet` on two control-plane replicas sharing one PostgreSQL schema (docs/fleet.md
 * "Replicas"), with a stand-in agent speaking the agent protocol over HTTP to replica A only (the
 * agent process is tested in the fleet's end-to-end suites). Every replica's runtime knows every
 * instance: a pod created through B runs on A's agent and reads RUNNING on B at once, not at a
 * sweep; a pod started by B is stopped through A; a replica that starts later asks the host for a
 * full report and knows the pods from it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AGENT_API_PREFIX } from '../src/fleet/protocol.js';
import { openTestDb, postgresUrl, type TestDb } from './support/harness.js';
import { call, capacity, joinBody, startFleetServer, type FleetServer } from './support/fleet.js';
import { HttpAgent } from './support/http-agent.js';

const KEY = 'fleet-replicas-admin-key-0123456789abcdef';
const GPU = 'NVIDIA GeForce RTX 4090';
/** A relayed change crosses two connections and a server: far under this. */
const PROMPT_MS = 3_000;

const eventually = async <T>(
  what: string,
  check: () => Promise<T | null | undefined | false>,
  ms = PROMPT_MS,
): Promise<T> => {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

interface Pod {
  id: string;
  status: string;
  statusReason: string | null;
}

describe(
  'runtime fleet on two replicas of one PostgreSQL schema',
  { skip: postgresUrl() ? false : 'GANTRY_TEST_DATABASE_URL is not set' },
  () => {
    let t: TestDb;
    const servers: FleetServer[] = [];
    let a: FleetServer;
    let b: FleetServer;
    let agent: HttpAgent;
    const file = {
      runtime: 'fleet',
      fleet: { heartbeatMs: 1_000, heartbeatTimeoutMs: 60_000, pollWaitMs: 5_000 },
      pods: { reconcileIntervalMs: 3_600_000 },
    };
    const start = async () => {
      const s = await startFleetServer({
        dialect: 'postgres',
        schema: t.schema,
        file,
        env: { GANTRY_BOOTSTRAP_KEY: KEY },
      });
      servers.push(s);
      return s;
    };
    const api = async <T>(
      s: FleetServer,
      method: string,
      path: string,
      body?: unknown,
    ): Promise<{ status: number; body: T }> => {
      const res = await fetch(`${s.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${KEY}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
    };
    const createPod = async (s: FleetServer): Promise<string> => {
      const r = await api<Pod>(s, 'POST', '/v2/pods', {
        name: 'replicated',
        image: 'gantry-test/http:1',
        gpu: { id: GPU, count: 1 },
        disk: 5,
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.id;
    };
    const podOn = async (s: FleetServer, id: string) => (await api<Pod>(s, 'GET', `/v2/pods/${id}`)).body;

    before(async () => {
      t = await openTestDb('postgres');
      a = await start();
      b = await start();
      const { token } = await a.server.services.fleet.createJoinToken();
      const joined = await call(
        a.url,
        null,
        'POST',
        `${AGENT_API_PREFIX}/join`,
        joinBody(token, { capacity: capacity() }),
      );
      assert.equal(joined.status, 201, JSON.stringify(joined.body));
      agent = new HttpAgent(a.url, joined.body.credential, PROMPT_MS);
      assert.equal((await agent.full()).status, 200);
      await eventually('B to place on the joined host', async () =>
        b.server.services.inventory.isAvailable(joined.body.hostId),
      );
    });
    after(async () => {
      for (const s of servers) await s.close();
      await t?.cleanup();
    });

    let podOfB = '';

    test('a pod created through replica B runs on the agent of replica A and reads RUNNING on B without waiting for a sweep', async () => {
      podOfB = await createPod(b);
      await agent.until('start', podOfB);
      const pod = await eventually('RUNNING on B', async () => {
        const p = await podOn(b, podOfB);
        return p.status === 'RUNNING' ? p : null;
      });
      assert.equal(pod.statusReason, null);
      assert.equal((await b.server.services.runtime.inspect(podOfB))?.state, 'running');
      assert.equal(
        (await a.server.services.runtime.inspect(podOfB))?.state,
        'running',
        'A learned of it from the agent',
      );
    });

    test('a pod started by replica B is stopped through replica A: its agent is told to stop the container', async () => {
      const stopped = await api<Pod>(a, 'POST', `/v2/pods/${podOfB}/action`, { action: 'stop' });
      assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
      await agent.until('stop', podOfB);
      await eventually(
        'EXITED on both',
        async () => (await podOn(a, podOfB)).status === 'EXITED' && (await podOn(b, podOfB)).status === 'EXITED',
      );
      // The agent's report of the kept container (sent with the stop's ack) is no exit of its own: no
      // replica reads it as an instance that ended, nor stops it a second time.
      await agent.step(300);
      await agent.step(300);
      assert.equal(
        agent.received.filter((o) => o.kind === 'stop' && o.instanceId === podOfB).length,
        1,
        'stopped once',
      );
      assert.equal(await a.server.services.runtime.inspect(podOfB), null, 'A keeps no instance of a stopped pod');
      assert.equal(await b.server.services.runtime.inspect(podOfB), null, 'B forgot the stopped instance too');
    });

    test('a pod created through A and terminated through B has its container removed', async () => {
      const id = await createPod(a);
      await agent.until('start', id);
      await eventually('RUNNING on A', async () => (await podOn(a, id)).status === 'RUNNING');
      await eventually(
        'B knows it runs',
        async () => (await b.server.services.runtime.inspect(id))?.state === 'running',
      );
      const gone = await api<unknown>(b, 'DELETE', `/v2/pods/${id}`);
      assert.ok(gone.status === 204 || gone.status === 200, JSON.stringify(gone));
      await agent.until('remove', id);
      assert.equal(agent.containers.has(id), false);
    });

    test('a replica that starts later asks the host for a full report, and knows its running pods from it', async () => {
      const id = await createPod(a);
      await agent.until('start', id);
      await eventually('RUNNING on A', async () => (await podOn(a, id)).status === 'RUNNING');
      const c = await start();
      // The agent's next report, on A, is answered with a request for every instance.
      const answer = await eventually('A to ask for a full report', async () => {
        const r = await agent.report({});
        return r.body.sendFull === true ? r : null;
      });
      assert.equal(answer.status, 200);
      assert.equal((await agent.report({})).body.sendFull, undefined, 'asked once');
      assert.equal((await agent.full()).status, 200);
      const seen = await eventually('C to know the pod runs', async () => {
        const s = await c.server.services.runtime.inspect(id);
        return s?.state === 'running' ? s : null;
      });
      assert.equal(seen.reason, null);
      await eventually(
        'the pod’s reason cleared once C heard the host',
        async () => (await podOn(c, id)).statusReason === null,
      );
    });
  },
);
