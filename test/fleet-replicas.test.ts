/**
 * Two control-plane replicas on one PostgreSQL schema, agents talking to either (docs/fleet.md
 * "Replicas"): an operation queued on one wakes the agent's long-poll held by the other at once,
 * through the notify relay; a revocation and a join on one are known to the other at once.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FLEET_HOST_TOPIC } from '../src/fleet/fleet-relay.js';
import type { FleetEvents } from '../src/fleet/fleet-events.js';
import { AGENT_API_PREFIX } from '../src/fleet/protocol.js';
import { notifyReplicasOnce } from '../src/store/notify-relay.js';
import { openTestDb, postgresUrl, type TestDb } from './support/harness.js';
import { call, joinBody, startFleetServer, until, type FleetServer } from './support/fleet.js';

/**
 * The agents' long-polls below wait POLL_WAIT_MS; one not woken by the relay answers only then.
 * "At once" is measured against that, not against a wall-clock guess: a relayed wake-up takes
 * milliseconds on a quiet machine and seconds on a loaded one, both far under half the wait.
 */
const POLL_WAIT_MS = 20_000;
const PROMPT_MS = POLL_WAIT_MS / 2;

describe(
  'the agent protocol across two replicas on one PostgreSQL schema',
  { skip: postgresUrl() ? false : 'GANTRY_TEST_DATABASE_URL is not set' },
  () => {
    let t: TestDb;
    let a: FleetServer;
    let b: FleetServer;
    const eventsOnB: Array<[keyof FleetEvents, unknown]> = [];

    /** A host joined through replica A: its id and credential. */
    const join = async () => {
      const { token } = await a.server.services.fleet.createJoinToken();
      const res = await call(a.url, null, 'POST', `${AGENT_API_PREFIX}/join`, joinBody(token));
      assert.equal(res.status, 201);
      return res.body as { hostId: string; credential: string };
    };

    before(async () => {
      t = await openTestDb('postgres');
      a = await startFleetServer({ dialect: 'postgres', schema: t.schema });
      b = await startFleetServer({ dialect: 'postgres', schema: t.schema });
      for (const name of ['host:joined', 'host:revoked', 'acks'] as const)
        b.server.services.fleet.on(name, (p) => eventsOnB.push([name, p]));
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await t?.cleanup();
    });

    test('an operation queued on replica B wakes the agent long-polling replica A at once', async () => {
      const { hostId, credential } = await join();
      const poll = call(a.url, credential, 'GET', `${AGENT_API_PREFIX}/operations?after=0&waitMs=${POLL_WAIT_MS}`);
      await until('the poll to wait on A', () => a.server.services.fleet.waiting(hostId) === 1);
      const started = performance.now();
      const op = await b.server.services.fleet.enqueue(hostId, { kind: 'stop', instanceId: 'pod-1' });
      const answer = await poll;
      const elapsed = performance.now() - started;
      assert.deepEqual(
        answer.body.operations.map((o: { id: string }) => o.id),
        [op.id],
      );
      assert.ok(elapsed < PROMPT_MS, `took ${Math.round(elapsed)} ms`);
    });

    test('a join on A is announced on B, and its credential works on B', async () => {
      const { hostId, credential } = await join();
      await until('B to hear of the join', () =>
        eventsOnB.some(([n, p]) => n === 'host:joined' && (p as { id: string }).id === hostId),
      );
      assert.equal((await call(b.url, credential, 'POST', `${AGENT_API_PREFIX}/report`, {})).status, 200);
    });

    test('an operation acknowledged through A is announced on B, where it was queued', async () => {
      const { hostId, credential } = await join();
      const op = await b.server.services.fleet.enqueue(hostId, { kind: 'remove', instanceId: 'pod-2' });
      const res = await call(a.url, credential, 'POST', `${AGENT_API_PREFIX}/report`, {
        acks: [{ opId: op.id, ok: true }],
      });
      assert.equal(res.status, 200);
      await until('B to hear of the ack', () =>
        eventsOnB.some(
          ([n, p]) => n === 'acks' && (p as FleetEvents['acks']).acks.some((x) => x.opId === op.id && x.ok),
        ),
      );
    });

    test('a host revoked on B is refused on A at once, its long-poll there ended', async () => {
      const { hostId, credential } = await join();
      assert.equal((await call(a.url, credential, 'POST', `${AGENT_API_PREFIX}/report`, {})).status, 200);
      const poll = call(a.url, credential, 'GET', `${AGENT_API_PREFIX}/operations?after=0&waitMs=${POLL_WAIT_MS}`);
      await until('the poll to wait on A', () => a.server.services.fleet.waiting(hostId) === 1);
      const started = performance.now();
      await b.server.services.fleet.revoke(hostId);
      const ended = await poll;
      assert.deepEqual([ended.status, ended.body.code], [401, 'HOST_REVOKED']);
      assert.ok(performance.now() - started < PROMPT_MS);
    });

    test('a revocation written from outside (as the CLI does) reaches both replicas through the relay and is refused there', async () => {
      const { hostId, credential } = await join();
      for (const r of [a, b])
        assert.equal((await call(r.url, credential, 'POST', `${AGENT_API_PREFIX}/report`, {})).status, 200);
      const relayed: string[] = [];
      for (const r of [a, b]) {
        const fleet = r.server.services.fleet;
        const deliver = fleet.deliver.bind(fleet);
        fleet.deliver = (topic, key) => {
          if (topic === FLEET_HOST_TOPIC) relayed.push(key);
          deliver(topic, key);
        };
      }
      await a.server.services.fleet.hosts.revokeHost(hostId, Date.now());
      await notifyReplicasOnce(t.db, FLEET_HOST_TOPIC, `revoked:${hostId}`);
      await until('both replicas to be told', () => relayed.filter((k) => k === `revoked:${hostId}`).length === 2);
      await until('B to announce it', () =>
        eventsOnB.some(([n, p]) => n === 'host:revoked' && (p as { hostId: string }).hostId === hostId),
      );
      for (const r of [a, b]) {
        const res = await call(r.url, credential, 'POST', `${AGENT_API_PREFIX}/report`, {});
        assert.deepEqual([res.status, res.body.code], [401, 'HOST_REVOKED']);
      }
    });
  },
);
