/**
 * The agent protocol over real HTTP (docs/fleet.md): joining with a one-time token, the host
 * credential, reports, the operations long-poll with redelivery and idempotent acks, and sealed
 * operation bodies. On SQLite and on PostgreSQL.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../src/domain/clock.js';
import { AGENT_API_PREFIX } from '../src/fleet/protocol.js';
import type { InstanceSpec } from '../src/runtime/runtime.js';
import { dialects, openTestDb, type TestDb } from './support/harness.js';
import { call, capacity, joinBody, startFleetServer, until, type FleetServer } from './support/fleet.js';

const spec = (id: string, password: string): InstanceSpec => ({
  id,
  owner: { kind: 'pod', accountId: 'acc-1' },
  image: 'registry.example.com/team/app:1',
  args: '',
  env: { MODEL: 'small' },
  platformEnv: {},
  hostId: 'host-x',
  gpuIndices: [0],
  vcpus: 4,
  memoryGb: 16,
  diskGb: 20,
  ports: [],
  volumes: [],
  registryAuth: { username: 'robot', password },
});

/** A long-poll that answered within this was woken, not timed out. */
const PROMPT_MS = 2_000;

for (const { name, skip } of dialects()) {
  describe(`the agent protocol over HTTP, on ${name}`, { skip }, () => {
    let t: TestDb | undefined;
    let fleetServer: FleetServer;
    let url: string;
    let clock: FakeClock;
    const services = () => fleetServer.server.services;
    const token = async (ttlMs?: number) => (await services().fleet.createJoinToken(ttlMs ? { ttlMs } : {})).token;
    const join = async (over: Record<string, unknown> = {}) => {
      const res = await call(url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(await token(), over));
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body as { hostId: string; credential: string };
    };
    const hostCount = async () => (await services().fleet.list()).length;

    before(async () => {
      clock = new FakeClock(Date.now());
      if (name === 'postgres') t = await openTestDb('postgres');
      fleetServer = await startFleetServer({ dialect: name, ...(t ? { schema: t.schema } : {}), clock });
      url = fleetServer.url;
    });
    after(async () => {
      await fleetServer?.close();
      await t?.cleanup();
    });

    test('a token joins one host once: 201 with its identity, and the same token again is 401 JOIN_TOKEN_INVALID', async () => {
      const body = joinBody(await token());
      const first = await call(url, null, 'POST', `${AGENT_API_PREFIX}/join`, body);
      assert.equal(first.status, 201);
      assert.match(first.body.hostId, /^host-[a-z0-9]{12}$/);
      assert.match(first.body.credential, /^ghc_host-[a-z0-9]{12}_[A-Za-z0-9]{32}$/);
      assert.deepEqual(
        [first.body.heartbeatMs, first.body.pollWaitMs, first.body.dataCenterId, first.body.cloud],
        [10_000, 25_000, 'US-TX-3', 'SECURE'],
      );
      const again = await call(url, null, 'POST', `${AGENT_API_PREFIX}/join`, { ...body, capacity: capacity() });
      assert.equal(again.status, 401);
      assert.equal(again.body.code, 'JOIN_TOKEN_INVALID');
      assert.match(again.contentType, /application\/problem\+json/);
    });

    test('a reused, an expired and an unknown token are refused alike: 401 with the same detail', async () => {
      const used = await token();
      assert.equal((await call(url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(used))).status, 201);
      const expiring = await token(60_000);
      clock.advance(60_001);
      const answers = await Promise.all(
        [used, expiring, `gjt_${'Q'.repeat(32)}`, 'not-a-token'].map((tk) =>
          call(url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(tk)),
        ),
      );
      for (const a of answers) assert.deepEqual([a.status, a.body.code], [401, 'JOIN_TOKEN_INVALID']);
      assert.equal(new Set(answers.map((a) => a.body.detail)).size, 1, 'no oracle: one detail for all');
    });

    test('impossible capacity is 400 CAPACITY_INVALID naming the field; nothing is created and the token still works', async () => {
      const tk = await token();
      const hosts = await hostCount();
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ capacity: capacity({ vcpus: 100_000 }) }, /capacity\.vcpus/],
        [
          { capacity: capacity({ gpus: [{ uuid: 'GPU-abc', name: 'NVIDIA Imaginary 9000', memoryMb: 1 }] }) },
          /capacity\.gpus\[0\]\.name/,
        ],
        [{ capacity: capacity({ memoryGb: -1 }) }, /capacity\.memoryGb/],
        [{ portRange: [50000, 40000] }, /portRange/],
        [{ publicIp: '0.0.0.0' }, /publicIp/],
      ];
      for (const [over, field] of cases) {
        const res = await call(url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(tk, over));
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.equal(res.body.code, 'CAPACITY_INVALID');
        assert.match(res.body.detail, field);
      }
      assert.equal(await hostCount(), hosts, 'no host was created');
      assert.equal(
        (await call(url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(tk))).status,
        201,
        'the refused joins spent nothing',
      );
    });

    test('a body of the wrong shape is 422 naming the field', async () => {
      const res = await call(url, null, 'POST', `${AGENT_API_PREFIX}/join`, {
        ...joinBody(await token()),
        name: 'no spaces allowed',
      });
      assert.equal(res.status, 422);
      assert.match(res.body.detail, /name/);
    });

    test('the host credential authenticates report and operations; an API key, no credential or a forged one is 401', async () => {
      const { credential } = await join();
      const report = await call(url, credential, 'POST', `${AGENT_API_PREFIX}/report`, {});
      assert.equal(report.status, 200);
      assert.deepEqual(Object.keys(report.body).sort(), ['ignoredAcks', 'jobUrl', 'now', 'refused']);
      // the agent lets its containers reach this URL through its firewall (docs/fleet.md)
      assert.match(report.body.jobUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal((await call(url, credential, 'GET', `${AGENT_API_PREFIX}/operations?after=0`)).status, 200);
      const apiKey = (
        await services().accounts.createKey((await services().accounts.accountByName('admin')).id, { scope: 'write' })
      ).key;
      const forged = `${credential.slice(0, -4)}AAAA`;
      for (const presented of [apiKey, forged, null]) {
        for (const [method, path] of [
          ['POST', `${AGENT_API_PREFIX}/report`],
          ['GET', `${AGENT_API_PREFIX}/operations`],
        ] as const) {
          const res = await call(url, presented, method, path, method === 'POST' ? {} : undefined);
          assert.deepEqual([res.status, res.body.code], [401, 'UNAUTHORIZED'], `${presented?.slice(0, 4)} on ${path}`);
        }
      }
    });

    test('a host credential is no API key: the API answers 401 naming the agent protocol', async () => {
      const { credential } = await join();
      const res = await call(url, credential, 'GET', '/v2/pods');
      assert.equal(res.status, 401);
      assert.match(res.body.detail, /agent protocol/);
    });

    test('a revoked credential gets 401 HOST_REVOKED, and its waiting long-poll ends with it at once', async () => {
      const { hostId, credential } = await join();
      const started = performance.now();
      const poll = call(url, credential, 'GET', `${AGENT_API_PREFIX}/operations?after=0&waitMs=20000`);
      await until('the poll to wait', () => services().fleet.waiting(hostId) === 1);
      await services().fleet.revoke(hostId);
      const ended = await poll;
      assert.deepEqual([ended.status, ended.body.code], [401, 'HOST_REVOKED']);
      assert.ok(performance.now() - started < PROMPT_MS);
      const report = await call(url, credential, 'POST', `${AGENT_API_PREFIX}/report`, {});
      assert.deepEqual([report.status, report.body.code], [401, 'HOST_REVOKED']);
      assert.match(report.body.detail, new RegExp(`Host ${hostId} was revoked`));
    });

    test('an operation enqueued while the agent long-polls is delivered to it at once', async () => {
      const { hostId, credential } = await join();
      const started = performance.now();
      const poll = call(url, credential, 'GET', `${AGENT_API_PREFIX}/operations?after=0&waitMs=20000`);
      await until('the poll to wait', () => services().fleet.waiting(hostId) === 1);
      const op = await services().fleet.enqueue(hostId, {
        kind: 'start',
        instanceId: 'pod-1',
        spec: spec('pod-1', 'hunter2'),
      });
      const answer = await poll;
      assert.ok(performance.now() - started < PROMPT_MS, `took ${Math.round(performance.now() - started)} ms`);
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body.operations, [
        { kind: 'start', instanceId: 'pod-1', spec: spec('pod-1', 'hunter2'), id: op.id, seq: 1 },
      ]);
    });

    test('an unacknowledged operation is delivered again to an agent asking after=0; once acknowledged it is not', async () => {
      const { hostId, credential } = await join();
      const a = await services().fleet.enqueue(hostId, { kind: 'stop', instanceId: 'pod-a' });
      const b = await services().fleet.enqueue(hostId, { kind: 'removeVolume', volumeId: 'vol-1' });
      const ids = async (after: number) =>
        (await call(url, credential, 'GET', `${AGENT_API_PREFIX}/operations?after=${after}`)).body.operations.map(
          (o: { id: string }) => o.id,
        );
      assert.deepEqual(await ids(0), [a.id, b.id]);
      assert.deepEqual(await ids(1), [b.id], 'after names the last seq seen');
      assert.deepEqual(await ids(0), [a.id, b.id], 'a reconnecting agent gets them again');
      const ack = await call(url, credential, 'POST', `${AGENT_API_PREFIX}/report`, {
        acks: [{ opId: a.id, ok: true }],
      });
      assert.deepEqual(ack.body.ignoredAcks, []);
      assert.deepEqual(await ids(0), [b.id]);
    });

    test('an acknowledgement is idempotent: repeated, it changes nothing and the first result stands', async () => {
      const { hostId, credential } = await join();
      const op = await services().fleet.enqueue(hostId, { kind: 'remove', instanceId: 'pod-r' });
      const acked: unknown[] = [];
      const off = services().fleet.on('acks', (e) => acked.push(...e.acks));
      for (const ok of [false, true, false]) {
        const res = await call(url, credential, 'POST', `${AGENT_API_PREFIX}/report`, {
          acks: [{ opId: op.id, ok, ...(ok ? {} : { error: 'engine said no' }) }],
        });
        assert.equal(res.status, 200);
        assert.deepEqual(res.body.ignoredAcks, []);
      }
      off();
      assert.equal(acked.length, 1);
      const [row] = await services().fleet.operations.get([op.id]);
      assert.deepEqual([row?.state, row?.ackOk, row?.ackError], ['acked', false, 'engine said no']);
    });

    test('operation bodies are stored sealed: the registry password and the tenant env are not in the row', async () => {
      const { hostId } = await join();
      const password = `pw-${Math.random().toString(36).slice(2)}`;
      const op = await services().fleet.enqueue(hostId, {
        kind: 'start',
        instanceId: 'pod-s',
        spec: spec('pod-s', password),
      });
      const row = await services()
        .db.kysely.selectFrom('host_operations')
        .selectAll()
        .where('id', '=', op.id)
        .executeTakeFirstOrThrow();
      const text = JSON.stringify(row);
      assert.ok(!text.includes(password), 'the password is not stored in clear');
      assert.ok(!text.includes('robot') && !text.includes('MODEL'), 'nor the username or env');
      assert.equal(row.instance_id, 'pod-s');
    });

    test('a long-poll with nothing to deliver answers an empty list when its wait ends; waitMs over 30000 is refused naming it', async () => {
      const { credential } = await join();
      const started = performance.now();
      const res = await call(url, credential, 'GET', `${AGENT_API_PREFIX}/operations?after=0&waitMs=150`);
      assert.deepEqual([res.status, res.body], [200, { operations: [] }]);
      assert.ok(performance.now() - started >= 140);
      const bad = await call(url, credential, 'GET', `${AGENT_API_PREFIX}/operations?after=0&waitMs=30001`);
      assert.equal(bad.status, 400);
      assert.match(bad.body.detail, /waitMs/);
    });

    test('a long-poll whose agent hangs up leaves no waiter behind', async () => {
      const { hostId, credential } = await join();
      const hangUp = new AbortController();
      const poll = call(
        url,
        credential,
        'GET',
        `${AGENT_API_PREFIX}/operations?after=0&waitMs=20000`,
        undefined,
        hangUp.signal,
      ).catch((e: Error) => e);
      await until('the poll to wait', () => services().fleet.waiting(hostId) === 1);
      hangUp.abort();
      await poll;
      await until('the waiter to go', () => services().fleet.waiting(hostId) === 0);
    });

    test('the agent routes are not in the OpenAPI document', async () => {
      const doc = (await call(url, null, 'GET', '/v2/openapi.json')).body as { paths: Record<string, unknown> };
      assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/agent')));
    });
  });
}
