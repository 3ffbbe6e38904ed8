/**
 * Hosts against each other and against the API (docs/fleet.md, docs/security.md "Hosts"): a host
 * only ever sees and acknowledges its own operations, cannot claim another host's GPUs or
 * instances, learns nothing from a forged credential or from the answers to its reports, cannot
 * guess tokens or credentials at speed, and its credential and the API's keys never stand in for
 * each other. Real HTTP, on SQLite and on PostgreSQL.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { FakeClock } from '../src/domain/clock.js';
import { AGENT_API_PREFIX } from '../src/fleet/protocol.js';
import { dialects, openTestDb, type TestDb } from './support/harness.js';
import { call, capacity, gpuUuid, joinBody, startFleetServer, type FleetServer } from './support/fleet.js';
import { HttpAgent } from './support/http-agent.js';

/** A call from another loopback address (another client, as the rate limits see it). */
function callFrom(
  localAddress: string,
  base: string,
  credential: string | null,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const url = new URL(path, base);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        localAddress,
        headers: {
          ...(credential ? { authorization: `Bearer ${credential}` } : {}),
          ...(payload ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

for (const { name, skip } of dialects()) {
  describe(`hosts against each other and the API, on ${name}`, { skip }, () => {
    let t: TestDb | undefined;
    let s: FleetServer;
    let clock: FakeClock;
    let url: string;
    const fleet = () => s.server.services.fleet;
    const join = async (over: Record<string, unknown> = {}) => {
      const { token } = await fleet().createJoinToken();
      const res = await call(url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(token, over));
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body as { hostId: string; credential: string };
    };
    const opIds = async (credential: string, after = 0) =>
      (await call(url, credential, 'GET', `${AGENT_API_PREFIX}/operations?after=${after}`)).body.operations.map(
        (o: { id: string }) => o.id,
      );

    before(async () => {
      clock = new FakeClock(Date.UTC(2026, 0, 1, 12));
      if (name === 'postgres') t = await openTestDb('postgres');
      s = await startFleetServer({ dialect: name, ...(t ? { schema: t.schema } : {}), clock });
      url = s.url;
    });
    after(async () => {
      await s?.close();
      await t?.cleanup();
    });

    test("a host never sees another host's operations, whatever `after` it asks with", async () => {
      const a = await join();
      const b = await join();
      const opB = await fleet().enqueue(b.hostId, {
        kind: 'start',
        instanceId: 'pod-b',
        spec: {
          id: 'pod-b',
          owner: { kind: 'pod', accountId: 'acc-b' },
          image: 'b:1',
          args: '',
          env: { SECRET: 'b-only' },
          platformEnv: {},
          hostId: b.hostId,
          gpuIndices: [],
          vcpus: 1,
          memoryGb: 1,
          diskGb: 0,
          ports: [],
          volumes: [],
        },
      });
      const opA = await fleet().enqueue(a.hostId, { kind: 'stop', instanceId: 'pod-a' });
      for (const after of [0, -1, 0.5]) {
        const res = await call(url, a.credential, 'GET', `${AGENT_API_PREFIX}/operations?after=${after}`);
        if (res.status === 200)
          assert.deepEqual(
            res.body.operations.map((o: { id: string }) => o.id),
            [opA.id],
          );
        else assert.equal(res.status, 400, 'a malformed after is refused');
        assert.ok(!JSON.stringify(res.body).includes('b-only'));
      }
      assert.deepEqual(await opIds(b.credential), [opB.id]);
    });

    test("a host's ack of another host's operation is ignored and answered; the operation stays pending for its own host", async () => {
      const a = await join();
      const b = await join();
      const opB = await fleet().enqueue(b.hostId, { kind: 'remove', instanceId: 'pod-b2' });
      const res = await call(url, a.credential, 'POST', `${AGENT_API_PREFIX}/report`, {
        acks: [
          { opId: opB.id, ok: true },
          { opId: 'op-made-up', ok: false, error: 'x' },
        ],
      });
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.ignoredAcks.map((x: { opId: string }) => x.opId),
        [opB.id, 'op-made-up'],
      );
      assert.equal(
        new Set(res.body.ignoredAcks.map((x: { reason: string }) => x.reason)).size,
        1,
        "another host's operation and an unknown id read alike",
      );
      assert.deepEqual(await opIds(b.credential), [opB.id]);
      const [row] = await fleet().operations.get([opB.id]);
      assert.equal(row?.state, 'pending');
    });

    test("a credential naming a real host with a wrong secret gets the generic 401, before and after that host's revocation", async () => {
      const victim = await join();
      const forged = `ghc_${victim.hostId}_${'Z'.repeat(32)}`;
      const unknown = `ghc_host-${'0'.repeat(12)}_${'Z'.repeat(32)}`;
      const before = await call(url, forged, 'POST', `${AGENT_API_PREFIX}/report`, {});
      const stranger = await call(url, unknown, 'POST', `${AGENT_API_PREFIX}/report`, {});
      await fleet().revoke(victim.hostId);
      const afterRevoke = await call(url, forged, 'POST', `${AGENT_API_PREFIX}/report`, {});
      for (const r of [before, stranger, afterRevoke]) assert.deepEqual([r.status, r.body.code], [401, 'UNAUTHORIZED']);
      assert.equal(new Set([before, stranger, afterRevoke].map((r) => r.body.detail)).size, 1);
      assert.equal(
        (await call(url, victim.credential, 'POST', `${AGENT_API_PREFIX}/report`, {})).body.code,
        'HOST_REVOKED',
        'only the true credential learns of the revocation',
      );
    });

    test('a join claiming a GPU another host holds is 400 naming the field, spends no token, creates nothing; a report claiming one changes nothing', async () => {
      const taken = gpuUuid();
      const owner = await join({
        capacity: capacity({ gpus: [{ uuid: taken, name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 }] }),
      });
      const { token } = await fleet().createJoinToken();
      const hosts = (await fleet().list()).length;
      const claim = capacity({
        gpus: [
          { uuid: gpuUuid(), name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
          { uuid: taken, name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 },
        ],
      });
      const res = await call(url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(token, { capacity: claim }));
      assert.deepEqual([res.status, res.body.code], [400, 'CAPACITY_INVALID']);
      assert.match(res.body.detail, /capacity\.gpus\[1\]\.uuid/);
      assert.equal((await fleet().list()).length, hosts);
      const other = await call(url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(token));
      assert.equal(other.status, 201, 'the token was not spent');
      const before = (await fleet().get(other.body.hostId))!.capacity;
      const grab = await call(url, other.body.credential, 'POST', `${AGENT_API_PREFIX}/report`, { capacity: claim });
      assert.deepEqual([grab.status, grab.body.code], [400, 'CAPACITY_INVALID']);
      assert.deepEqual((await fleet().get(other.body.hostId))!.capacity, before);
      assert.deepEqual((await fleet().hosts.gpuOwners([taken.toLowerCase()])).get(taken.toLowerCase()), owner.hostId);
      const shouted = capacity({
        gpus: [{ uuid: taken.toUpperCase(), name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 }],
      });
      const loud = await call(url, other.body.credential, 'POST', `${AGENT_API_PREFIX}/report`, { capacity: shouted });
      assert.deepEqual(
        [loud.status, loud.body.code],
        [400, 'CAPACITY_INVALID'],
        'the same UUID in capitals is the same GPU',
      );
    });

    test('instances the ownership check refuses are answered to the agent and never passed on', async () => {
      const a = await join();
      const b = await join();
      fleet().setOwnership(
        async (hostId, ids) =>
          new Map(ids.filter((id) => id !== `pod-of-${hostId}`).map((id) => [id, `not placed on ${hostId}`])),
      );
      const seen: string[] = [];
      const off = fleet().on('instances', (e) => seen.push(...e.items.map((i) => `${e.hostId}:${i.id}`)));
      const item = (id: string) => ({
        id,
        owner: { kind: 'pod', accountId: 'acc' },
        state: 'running',
        startedAt: 1,
        exitCode: null,
        reason: null,
      });
      const res = await call(url, a.credential, 'POST', `${AGENT_API_PREFIX}/report`, {
        instances: { full: true, items: [item(`pod-of-${a.hostId}`), item(`pod-of-${b.hostId}`)] },
      });
      off();
      fleet().setOwnership(async () => new Map());
      assert.deepEqual(res.body.refused, [{ id: `pod-of-${b.hostId}`, reason: `not placed on ${a.hostId}` }]);
      assert.deepEqual(seen, [`${a.hostId}:pod-of-${a.hostId}`]);
    });

    test('wrong tokens and credentials from one address are refused with 429 once its quota is spent; other addresses and known agents are not', async () => {
      const agent = await join();
      const guesser = '127.0.0.2';
      for (let i = 0; i < 20; i++) {
        const wrong =
          i % 2
            ? await callFrom(
                guesser,
                url,
                null,
                'POST',
                `${AGENT_API_PREFIX}/join`,
                joinBody(`gjt_${String(i).padStart(32, 'x')}`),
              )
            : await callFrom(
                guesser,
                url,
                `ghc_host-${'1'.repeat(12)}_${String(i).padStart(32, 'y')}`,
                'POST',
                `${AGENT_API_PREFIX}/report`,
                {},
              );
        assert.equal(wrong.status, 401);
      }
      const { token } = await fleet().createJoinToken();
      const limited = await callFrom(guesser, url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(token));
      assert.deepEqual(
        [limited.status, limited.body.code],
        [429, 'RATE_LIMITED'],
        'even a right token, until the window ends',
      );
      assert.equal(
        (
          await callFrom(
            guesser,
            url,
            `ghc_host-${'1'.repeat(12)}_${'y'.repeat(32)}`,
            'POST',
            `${AGENT_API_PREFIX}/report`,
            {},
          )
        ).status,
        429,
      );
      assert.equal(
        (await callFrom(guesser, url, agent.credential, 'POST', `${AGENT_API_PREFIX}/report`, {})).status,
        200,
        'an agent this server knows, behind the same address, still reports',
      );
      assert.equal(
        (await callFrom('127.0.0.3', url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(token))).status,
        201,
        'another address is not limited',
      );
      clock.advance(60_000);
      const { token: later } = await fleet().createJoinToken();
      assert.equal(
        (await callFrom(guesser, url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(later))).status,
        201,
        'the next window admits it again',
      );
    });

    test('an API key is refused by the agent protocol, and a host credential by the REST API and GraphQL', async () => {
      const { credential } = await join();
      const admin = await s.server.services.accounts.accountByName('admin');
      const { key } = await s.server.services.accounts.createKey(admin.id, { scope: 'write' });
      for (const [method, path] of [
        ['POST', `${AGENT_API_PREFIX}/report`],
        ['GET', `${AGENT_API_PREFIX}/operations`],
      ] as const) {
        const res = await call(url, key, method, path, method === 'POST' ? {} : undefined);
        assert.deepEqual([res.status, res.body.code], [401, 'UNAUTHORIZED']);
        assert.match(res.body.detail, /API keys are not accepted here/);
      }
      for (const [method, path, body] of [
        ['GET', '/v2/pods', undefined],
        ['POST', '/graphql', { query: '{ myself { id } }' }],
      ] as const) {
        const res = await call(url, credential, method, path, body);
        assert.equal(res.status, 401, path);
        assert.ok(!JSON.stringify(res.body).includes('"id"'), 'nothing of the account is answered');
      }
    });
  });
}

for (const { name, skip } of dialects()) {
  describe(`what a host learns from the answers to its reports, runtime fleet on ${name}`, { skip }, () => {
    const KEY = 'tenant-matrix-hosts-admin-key-0123456789';
    let t: TestDb | undefined;
    let s: FleetServer;

    before(async () => {
      if (name === 'postgres') t = await openTestDb('postgres');
      s = await startFleetServer({
        dialect: name,
        ...(t ? { schema: t.schema } : {}),
        clock: new FakeClock(Date.UTC(2026, 0, 1, 12)),
        file: { runtime: 'fleet', pods: { reconcileIntervalMs: 3_600_000 } },
        env: { GANTRY_BOOTSTRAP_KEY: KEY },
      });
    });
    after(async () => {
      await s?.close();
      await t?.cleanup();
    });

    test("a host reporting another host's real pod and an id never placed gets one and the same refusal for both, naming no host", async () => {
      const join = async () => {
        const { token } = await s.server.services.fleet.createJoinToken();
        const res = await call(s.url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(token));
        assert.equal(res.status, 201, JSON.stringify(res.body));
        return res.body as { hostId: string; credential: string };
      };
      // The victim joins first: the only host, the pod is placed on it by the real records.
      const victim = await join();
      const victimAgent = new HttpAgent(s.url, victim.credential);
      const created = await fetch(`${s.url}/v2/pods`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'victim', image: 'gantry-test/http:1', gpu: { id: 'NVIDIA GeForce RTX 4090' } }),
      });
      assert.equal(created.status, 201);
      const podId = ((await created.json()) as { id: string }).id;
      await victimAgent.until('start', podId);
      const attacker = await join();
      const item = (id: string) => ({
        id,
        owner: { kind: 'pod', accountId: 'acc' },
        state: 'exited',
        startedAt: 1,
        exitCode: 1,
        reason: 'it crashed',
      });
      const res = await call(s.url, attacker.credential, 'POST', `${AGENT_API_PREFIX}/report`, {
        instances: { full: true, items: [item(podId), item('never-placed-anywhere')] },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const refused = res.body.refused as Array<{ id: string; reason: string }>;
      assert.deepEqual(
        refused.map((r) => r.id),
        [podId, 'never-placed-anywhere'],
      );
      assert.equal(refused[0]!.reason, refused[1]!.reason, 'no oracle on what runs elsewhere');
      assert.ok(!JSON.stringify(res.body).includes(victim.hostId), 'the other host is never named');
      assert.equal((await s.server.services.runtime.inspect(podId))?.state, 'running', 'nothing of it changed');
    });
  });
}
