/**
 * Containers no record places on their host (docs/fleet.md "Return"), over HTTP with two joined
 * hosts whose agents are stand-ins: a host that keeps reporting one gets a `remove` for it after
 * `runtime.orphanGraceMs`; a host claiming another host's pod gets the `remove` for its own
 * container of that name, and the host that runs the pod is told nothing.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AGENT_API_PREFIX, type InstanceReport, type Operation } from '../src/fleet/protocol.js';
import { call, capacity, joinBody, startFleetServer, type FleetServer } from './support/fleet.js';

const KEY = 'fleet-orphans-admin-key-0123456789abcdef';
const GRACE_MS = 300;

describe('containers no record places on their host', () => {
  let s: FleetServer;
  const hosts: Array<{ hostId: string; credential: string }> = [];
  const item = (id: string, accountId = 'someone'): InstanceReport => ({
    id,
    owner: { kind: 'pod', accountId },
    state: 'running',
    startedAt: Date.now(),
    exitCode: null,
    reason: null,
  });
  const pending = async (credential: string): Promise<Operation[]> =>
    (await call(s.url, credential, 'GET', `${AGENT_API_PREFIX}/operations?after=0&waitMs=0`)).body.operations;

  before(async () => {
    s = await startFleetServer({
      file: { runtime: { kind: 'fleet', orphanGraceMs: GRACE_MS } },
      env: { GANTRY_BOOTSTRAP_KEY: KEY },
    });
    for (let i = 0; i < 2; i++) {
      const { token } = await s.server.services.fleet.createJoinToken();
      const joined = await call(
        s.url,
        null,
        'POST',
        `${AGENT_API_PREFIX}/join`,
        joinBody(token, { capacity: capacity() }),
      );
      assert.equal(joined.status, 201, JSON.stringify(joined.body));
      hosts.push(joined.body);
    }
  });
  after(async () => {
    await s?.close();
  });

  test('a container its host keeps reporting with no record is removed on that host after the grace', async () => {
    const [host] = hosts as [{ hostId: string; credential: string }];
    const r = await call(s.url, host.credential, 'POST', `${AGENT_API_PREFIX}/report`, {
      instances: { full: true, items: [item('strayabc0001')] },
    });
    assert.deepEqual(
      r.body.refused.map((x: { id: string }) => x.id),
      ['strayabc0001'],
    );
    const removes = async () => (await pending(host.credential)).filter((o) => o.kind === 'remove');
    const deadline = Date.now() + 30_000;
    while ((await removes()).length === 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
    assert.deepEqual(
      (await removes()).map((o) => (o as { instanceId: string }).instanceId),
      ['strayabc0001'],
    );
  });

  test('a host claiming another host’s pod gets the remove for its own container; the pod’s host is told nothing', async () => {
    const created = await fetch(`${s.url}/v2/pods`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'victim',
        image: 'gantry-test/http:1',
        gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
        disk: 5,
      }),
    });
    assert.equal(created.status, 201);
    const pod = (await created.json()) as { id: string };
    const row = await s.server.services.db.kysely
      .selectFrom('pods')
      .select('host_id')
      .where('id', '=', pod.id)
      .executeTakeFirstOrThrow();
    const owner = hosts.find((h) => h.hostId === row.host_id)!;
    const claimer = hosts.find((h) => h.hostId !== row.host_id)!;
    const before = (await pending(owner.credential)).map((o) => o.kind);
    const r = await call(s.url, claimer.credential, 'POST', `${AGENT_API_PREFIX}/report`, {
      instances: { full: true, items: [item(pod.id)] },
    });
    assert.deepEqual(
      r.body.refused.map((x: { id: string }) => x.id),
      [pod.id],
    );
    const deadline = Date.now() + 30_000;
    const removesOn = async (credential: string) =>
      (await pending(credential)).filter(
        (o) => o.kind === 'remove' && (o as { instanceId: string }).instanceId === pod.id,
      );
    while ((await removesOn(claimer.credential)).length === 0 && Date.now() < deadline)
      await new Promise((res) => setTimeout(res, 50));
    assert.equal(
      (await removesOn(claimer.credential)).length,
      1,
      'the claiming host removes its own container of that name',
    );
    assert.deepEqual(
      (await pending(owner.credential)).map((o) => o.kind),
      before,
      'the pod’s own host is told nothing new',
    );
  });
});
