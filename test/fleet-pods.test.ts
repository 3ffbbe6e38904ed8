// Pods on fleet hosts, through the services and a real SQLite store, on a fake clock: the
// FleetRuntime under the pod controller, fed by in-memory stand-ins for the hosts' agents (a test
// seam: the agent process and the /agent/v1 routes are tested on their own). A host that stops
// reporting keeps its pods with the reason; past the lost grace their cost stops and it starts
// again when the host is back; a full report without a pod's container ends the pod.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { FakeClock } from '../src/domain/clock.js';
import { FleetRuntime } from '../src/fleet/fleet-runtime.js';
import type { InstanceReport, NewOperation, Operation } from '../src/fleet/protocol.js';
import { createTestApp, dialects, json, type DialectName, type TestApp } from './support/harness.js';
import { until } from './support/eventually.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const GRACE = 300_000;
const fleetHosts = [
  {
    id: 'host-a',
    dataCenterId: 'US-TX-3',
    gpuTypeId: GPU,
    gpuCount: 2,
    cudaVersion: '12.4',
    portRange: [32000, 32099],
  },
  {
    id: 'host-b',
    dataCenterId: 'US-TX-3',
    gpuTypeId: GPU,
    gpuCount: 2,
    cudaVersion: '12.4',
    portRange: [33000, 33099],
  },
];

/** A host's agent, in memory: applies the operations it is handed while online, acknowledges and reports them. */
class MemoryAgent {
  readonly containers = new Map<string, InstanceReport>();
  readonly applied: Operation[] = [];
  readonly #pending: Operation[] = [];
  online = true;
  constructor(
    readonly hostId: string,
    readonly fleet: FleetRuntime,
    readonly clock: FakeClock,
  ) {}

  deliver(op: Operation): void {
    this.#pending.push(op);
    if (this.online) setImmediate(() => void this.drain());
  }

  /** Applies what waits, then reports in one go (a reconnect: in full). */
  async drain(full = false): Promise<void> {
    const ops = this.#pending.splice(0);
    const changed: InstanceReport[] = [];
    for (const op of ops) {
      this.applied.push(op);
      if (op.kind === 'start') {
        const report: InstanceReport = {
          id: op.instanceId,
          owner: op.spec.owner,
          state: 'running',
          startedAt: this.clock.now(),
          exitCode: null,
          reason: null,
        };
        this.containers.set(op.instanceId, report);
        changed.push(report);
      } else if ('instanceId' in op) this.containers.delete(op.instanceId);
    }
    await this.fleet.receive(this.hostId, {
      acks: ops.map((o) => ({ opId: o.id, ok: true })),
      instances: { full, items: full ? [...this.containers.values()] : changed },
    });
  }
}

for (const { name, skip } of dialects()) describe(`pods on fleet hosts (${name})`, { skip }, () => suite(name));

function suite(dialect: DialectName): void {
  let t: TestApp;
  let key: string;
  let accountId: string;
  const clock = new FakeClock(Date.now());
  const agents = new Map<string, MemoryAgent>();
  let seq = 0;
  const runtime = new FleetRuntime({
    enqueue: async (hostId: string, op: NewOperation) => {
      seq += 1;
      const full = { ...op, id: `op-${seq}`, seq };
      agents.get(hostId)!.deliver(full);
      return full;
    },
    placements: {
      placed: async (ids) => {
        const rows = await t.services.db.kysely
          .selectFrom('pods')
          .select(['id', 'host_id', 'account_id'])
          .where('id', 'in', [...ids])
          .execute();
        return new Map(
          rows
            .filter((r) => r.host_id !== null)
            .map((r) => [r.id, { hostId: r.host_id!, owner: { kind: 'pod' as const, accountId: r.account_id } }]),
        );
      },
    },
    clock,
    logger: pino({ level: 'silent' }),
    config: { lostGraceMs: GRACE },
  });
  for (const h of fleetHosts) agents.set(h.id, new MemoryAgent(h.id, runtime, clock));

  /** What the fleet service does when a host misses its heartbeats, and when it reports again. */
  const hostLost = (hostId: string, since: number) => {
    agents.get(hostId)!.online = false;
    t.services.inventory.setAvailable(hostId, false);
    runtime.hostUnavailable(hostId, since);
  };
  const hostBack = async (hostId: string) => {
    const agent = agents.get(hostId)!;
    agent.online = true;
    t.services.inventory.setAvailable(hostId, true);
    runtime.hostAvailable(hostId);
    await agent.drain(true);
  };

  const get = async (id: string) => json(await t.request(key, 'GET', `/v2/pods/${id}`));
  const create = async () => {
    const res = await t.request(key, 'POST', '/v2/pods', { name: 'fleet', image: 'ubuntu:22.04', gpu: { id: GPU } });
    assert.equal(res.statusCode, 201, res.body);
    const pod = json(res);
    await until('the pod runs', async () => (await get(pod.id)).status === 'RUNNING');
    return (await get(pod.id)) as { id: string; machine: { hostId?: string } } & Record<string, unknown>;
  };
  const hostOf = async (id: string) => (await t.services.podController.store.get(id))!.hostId!;

  before(async () => {
    t = await createTestApp({
      dialect,
      clock,
      runtime,
      file: { fleet: fleetHosts, pods: { reconcileIntervalMs: 50 } },
    });
    runtime.useCost({
      pause: (h, at) => t.services.podController.pauseUsage(h, at),
      resume: (ids, at) => t.services.podController.resumeUsage(ids, at),
    });
    ({ key, accountId } = await t.newAccount('fleet'));
    await t.services.podController.start(await runtime.attach());
  });
  after(() => t.close());

  test('a pod whose host stops reporting stays RUNNING saying since when; past the lost grace its cost stops, and starts again once the host is back showing it running', async () => {
    const pod = await create();
    const hostId = await hostOf(pod.id);
    const since = clock.now();
    hostLost(hostId, since);
    await until(
      'the pod says its host is unreachable',
      async () =>
        (await get(pod.id)).statusReason === `host ${hostId} unreachable since ${new Date(since).toISOString()}`,
    );
    assert.equal((await get(pod.id)).status, 'RUNNING');
    // Placement skips the lost host meanwhile.
    const elsewhere = await create();
    assert.notEqual(await hostOf(elsewhere.id), hostId);

    clock.advance(GRACE + 60_000);
    await runtime.sweep();
    const paused = await t.services.podController.store.listUsage(pod.id);
    assert.deepEqual(
      paused.map((u) => u.endedAt),
      [since + GRACE],
      'its usage ends with the grace',
    );
    const hours = (await t.services.pods.usage(accountId, pod.id)).hours;
    clock.advance(3_600_000);
    assert.equal(
      (await t.services.pods.usage(accountId, pod.id)).hours,
      hours,
      'no cost accrues while the host is lost',
    );

    await hostBack(hostId);
    await until('the reason clears', async () => (await get(pod.id)).statusReason === null);
    assert.equal((await get(pod.id)).status, 'RUNNING');
    const resumed = await t.services.podController.store.listUsage(pod.id);
    assert.equal(resumed.length, 2);
    assert.deepEqual([resumed[1]!.startedAt, resumed[1]!.endedAt], [clock.now(), null]);
    assert.equal(
      agents.get(hostId)!.applied.filter((o) => o.kind === 'start' && o.instanceId === pod.id).length,
      1,
      'nothing was restarted',
    );
  });

  test('a pod whose container is missing from its host’s full report becomes EXITED saying so', async () => {
    const pod = await create();
    const hostId = await hostOf(pod.id);
    agents.get(hostId)!.containers.delete(pod.id);
    await agents.get(hostId)!.drain(true);
    await until('the pod exits', async () => (await get(pod.id)).status === 'EXITED');
    assert.equal((await get(pod.id)).statusReason, `its container is gone from host ${hostId}`);
    assert.equal(
      (await t.services.podController.store.listUsage(pod.id)).every((u) => u.endedAt !== null),
      true,
    );
  });

  test('a pod on an unreachable host cannot be started, restarted or changed so it restarts (409 naming the host) but can be renamed, stopped and terminated, which reach the host once it is back', async () => {
    const running = await create();
    const pod = await create();
    const hostId = await hostOf(pod.id);
    assert.equal((await t.request(key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'stop' })).statusCode, 200);
    const since = clock.now();
    // both pods on one host: the other's host goes too
    const runningHost = await hostOf(running.id);
    hostLost(hostId, since);
    if (runningHost !== hostId) hostLost(runningHost, since);
    const refusals = [
      await t.request(key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'start' }),
      await t.request(key, 'POST', `/v2/pods/${running.id}/action`, { action: 'restart' }),
      await t.request(key, 'PATCH', `/v2/pods/${running.id}`, { image: 'ubuntu:24.04' }),
    ];
    for (const refused of refusals) {
      assert.equal(refused.statusCode, 409, refused.body);
      assert.match(refused.headers['content-type'] as string, /application\/problem\+json/);
      assert.equal(json(refused).code, 'HOST_UNAVAILABLE');
      assert.match(json(refused).detail, /host host-[ab] unreachable since .*It can still be stopped or terminated/);
    }
    assert.equal((await get(running.id)).image, 'ubuntu:22.04', 'the refused change changed nothing');
    const renamed = await t.request(key, 'PATCH', `/v2/pods/${running.id}`, { name: 'renamed' });
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.equal((await t.request(key, 'DELETE', `/v2/pods/${pod.id}`)).statusCode, 204);
    assert.equal((await t.request(key, 'DELETE', `/v2/pods/${running.id}`)).statusCode, 204);
    const agent = agents.get(hostId)!;
    assert.equal(
      agent.applied.some((o) => o.kind === 'remove' && o.instanceId === pod.id),
      false,
      'queued, not applied, while away',
    );
    await hostBack(hostId);
    if (runningHost !== hostId) await hostBack(runningHost);
    assert.ok(agent.applied.some((o) => o.kind === 'remove' && o.instanceId === pod.id));
    assert.equal(agent.containers.has(pod.id), false);
    assert.equal(agents.get(runningHost)!.containers.has(running.id), false);
  });

  test('a pod on a revoked host ends saying so; it cannot be started again (409) and is terminated at once, nothing being sent to the host', async () => {
    const pod = await create();
    const hostId = await hostOf(pod.id);
    const at = clock.now();
    const agent = agents.get(hostId)!;
    agent.online = false;
    // What the fleet wiring does when a host is revoked.
    t.services.inventory.removeHost(hostId);
    runtime.hostRevoked(hostId, at);
    try {
      await until('the pod ends', async () => (await get(pod.id)).status === 'EXITED');
      assert.equal((await get(pod.id)).statusReason, `host ${hostId} was revoked at ${new Date(at).toISOString()}`);
      assert.equal(
        (await t.services.podController.store.listUsage(pod.id)).every((u) => u.endedAt !== null),
        true,
        'its cost stops with it',
      );
      const refused = await t.request(key, 'POST', `/v2/pods/${pod.id}/action`, { action: 'start' });
      assert.equal(refused.statusCode, 409, refused.body);
      assert.equal(json(refused).code, 'HOST_UNAVAILABLE');
      assert.match(json(refused).detail, /was revoked at .*terminate the pod and create a new one/);
      const applied = agent.applied.length;
      assert.equal((await t.request(key, 'DELETE', `/v2/pods/${pod.id}`)).statusCode, 204);
      assert.equal((await get(pod.id)).status, 'TERMINATED');
      await agent.drain();
      assert.equal(
        agent.applied.slice(applied).some((o) => 'instanceId' in o && o.instanceId === pod.id),
        false,
        'nothing more is sent to a revoked host',
      );
    } finally {
      agent.online = true;
    }
  });
}
