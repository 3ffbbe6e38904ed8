import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { capacity } from '../../test/support/fleet.js';
import { defaultCatalog } from '../domain/catalog.js';
import { FakeClock } from '../domain/clock.js';
import { isApiError, type ErrorCode } from '../domain/errors.js';
import { SecretBox } from '../store/secret-box.js';
import type { FleetEvents } from './fleet-events.js';
import { ACKED_RETENTION_MS, flushEveryTicks } from './fleet-chores.js';
import { FleetService } from './fleet-service.js';
import { HostStore } from './host-store.js';
import { OperationStore } from './operation-store.js';
import type { InstanceReport, JoinRequest } from './protocol.js';

const config = {
  heartbeatMs: 10_000,
  heartbeatTimeoutMs: 30_000,
  pollWaitMs: 25_000,
  lostGraceMs: 300_000,
  joinTokenTtlMs: 3_600_000,
  tunnels: { maxStreams: 8192, maxTunnelsPerAgent: 16, maxDialing: 2048, idleMs: 300_000, maxWindowBytes: 4 << 20 },
  downloads: { maxPerClient: 2, maxConcurrent: 16 },
};
const secrets = new SecretBox(Buffer.alloc(32, 7));

async function refusedWith(code: ErrorCode, promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    assert.ok(isApiError(err), String(err));
    assert.equal(err.code, code, err.detail);
    return err.detail;
  }
  assert.fail(`expected ${code}`);
}

const instance = (id: string, state: InstanceReport['state'] = 'running'): InstanceReport => ({
  id,
  owner: { kind: 'pod', accountId: 'acc' },
  state,
  startedAt: 1,
  exitCode: null,
  reason: null,
});

test('last-seen times are written often enough that the database never calls a live host quiet: every 5 s, every second with a short heartbeat timeout', () => {
  assert.equal(flushEveryTicks({ heartbeatMs: 10_000, heartbeatTimeoutMs: 30_000 }), 5);
  assert.equal(flushEveryTicks({ heartbeatMs: 500, heartbeatTimeoutMs: 2_500 }), 1);
  assert.equal(flushEveryTicks({ heartbeatMs: 1_000, heartbeatTimeoutMs: 7_000 }), 3);
  assert.equal(flushEveryTicks({ heartbeatMs: 1_000, heartbeatTimeoutMs: 1_001 }), 1);
});

for (const { name, skip } of dialects()) {
  describe(`FleetService on ${name}`, { skip }, () => {
    let t: TestDb;
    let clock: FakeClock;
    let fleet: FleetService;
    const events: Array<[keyof FleetEvents, unknown]> = [];
    const join = async (over: Partial<JoinRequest> = {}) => {
      const { token } = await fleet.createJoinToken({ dataCenterId: 'EU-RO-1', cloud: 'COMMUNITY' });
      return fleet.join({
        token,
        name: 'gpu-01',
        publicIp: '203.0.113.7',
        portRange: [40000, 40999],
        agentVersion: '0.1.0',
        capacity: capacity(),
        ...over,
      });
    };

    before(async () => {
      t = await openTestDb(name);
      clock = new FakeClock(Date.UTC(2026, 0, 1));
      fleet = new FleetService({
        hosts: new HostStore(t.db),
        operations: new OperationStore(t.db),
        clock,
        secrets,
        catalog: defaultCatalog(),
        config,
      });
      for (const name of ['host:joined', 'host:capacity', 'host:revoked', 'host:seen', 'instances', 'acks'] as const)
        fleet.on(name, (p) => events.push([name, p]));
    });
    after(async () => {
      await fleet?.close();
      await t?.cleanup();
    });

    test('a join answers the host id, its credential, where it sits and the timings; the token joins once', async () => {
      const { token } = await fleet.createJoinToken({ dataCenterId: 'EU-RO-1', cloud: 'COMMUNITY' });
      const request = {
        token,
        name: 'gpu-01',
        publicIp: '203.0.113.7',
        portRange: [40000, 40999] as [number, number],
        agentVersion: '0.1.0',
        capacity: capacity(),
      };
      const answer = await fleet.join(request);
      assert.match(answer.hostId, /^host-[a-z0-9]{12}$/);
      assert.match(answer.credential, new RegExp(`^ghc_${answer.hostId}_[A-Za-z0-9]{32}$`));
      assert.deepEqual(
        { ...answer, hostId: '', credential: '' },
        {
          hostId: '',
          credential: '',
          dataCenterId: 'EU-RO-1',
          cloud: 'COMMUNITY',
          heartbeatMs: 10_000,
          pollWaitMs: 25_000,
        },
      );
      assert.deepEqual(await fleet.authenticate(answer.credential), { hostId: answer.hostId });
      await refusedWith('JOIN_TOKEN_INVALID', fleet.join({ ...request, capacity: capacity() }));
      assert.equal(events.filter(([n]) => n === 'host:joined').length, 1);
      const stored = await fleet.hosts.getHost(answer.hostId);
      assert.ok(
        stored && !JSON.stringify(stored).includes(answer.credential.slice(-32)),
        'the credential is stored hashed',
      );
    });

    test('a revoked host gives no sign of life: the end of the long-poll it held tells no listener it was seen', async () => {
      const { hostId } = await join();
      const poll = fleet.waitForOperations(hostId, 0, { waitMs: 20_000 });
      const seenBefore = events.filter(([n, p]) => n === 'host:seen' && (p as { hostId: string }).hostId === hostId);
      assert.equal(seenBefore.length, 1, 'the poll opening is a sign of life');
      await fleet.revoke(hostId);
      await refusedWith('HOST_REVOKED', poll);
      assert.equal(
        events.filter(([n, p]) => n === 'host:seen' && (p as { hostId: string }).hostId === hostId).length,
        1,
        'its ending is not',
      );
    });

    test('a token past its life on the injected clock is refused with the message of an unknown one', async () => {
      const { token } = await fleet.createJoinToken({ ttlMs: 60_000 });
      clock.advance(60_001);
      const expired = await refusedWith(
        'JOIN_TOKEN_INVALID',
        fleet.join({
          token,
          name: 'late',
          publicIp: '203.0.113.8',
          portRange: [40000, 40999],
          agentVersion: '0.1.0',
          capacity: capacity(),
        }),
      );
      const unknown = await refusedWith(
        'JOIN_TOKEN_INVALID',
        fleet.join({
          token: `gjt_${'x'.repeat(32)}`,
          name: 'late',
          publicIp: '203.0.113.8',
          portRange: [40000, 40999],
          agentVersion: '0.1.0',
          capacity: capacity(),
        }),
      );
      assert.equal(expired, unknown);
    });

    test('heartbeats stay in memory and are written together by a flush; a host polling counts as seen', async () => {
      const { hostId, credential } = await join();
      await fleet.authenticate(credential);
      const joinedAt = clock.now();
      assert.equal(await fleet.flush(), 0, 'nothing new since the join');
      for (let i = 0; i < 3; i++) {
        clock.advance(1000);
        await fleet.report(hostId, {});
      }
      assert.equal((await fleet.hosts.getHost(hostId))!.lastReportAt, joinedAt, 'no write per report');
      assert.equal(await fleet.flush(), 1);
      assert.equal((await fleet.hosts.getHost(hostId))!.lastReportAt, joinedAt + 3000);
      assert.equal(await fleet.flush(), 0);
      const poll = fleet.waitForOperations(hostId, 0, { waitMs: 5_000 });
      clock.advance(7000);
      assert.equal(await fleet.flush(), 1, 'the open poll is a sign of life');
      assert.equal((await fleet.hosts.getHost(hostId))!.lastReportAt, joinedAt + 10_000);
      assert.equal((await fleet.list()).find((h) => h.id === hostId)?.state, 'available');
      await fleet.enqueue(hostId, { kind: 'stop', instanceId: 'p1' });
      assert.equal((await poll).length, 1);
      clock.advance(31_000);
      assert.equal((await fleet.list()).find((h) => h.id === hostId)?.state, 'unreachable');
      assert.ok(events.some(([n, p]) => n === 'host:seen' && (p as { hostId: string }).hostId === hostId));
    });

    test('a capacity report changes the host only when it differs, and is checked like a join', async () => {
      const { hostId, credential } = await join();
      await fleet.authenticate(credential);
      const before = (await fleet.hosts.getHost(hostId))!.capacity;
      const count = () => events.filter(([n]) => n === 'host:capacity').length;
      const seen = count();
      await fleet.report(hostId, { capacity: before });
      assert.equal(count(), seen, 'the same capacity again is no change');
      await fleet.report(hostId, { capacity: { ...before, diskGb: 500 } });
      assert.equal(count(), seen + 1);
      assert.equal((await fleet.hosts.getHost(hostId))!.capacity.diskGb, 500);
      const detail = await refusedWith(
        'CAPACITY_INVALID',
        fleet.report(hostId, { capacity: { ...before, vcpus: -4 }, acks: [{ opId: 'op-x', ok: true }] }),
      );
      assert.match(detail, /capacity\.vcpus/);
      assert.equal((await fleet.hosts.getHost(hostId))!.capacity.vcpus, before.vcpus);
    });

    test('reported instances the ownership check refuses are answered and left out of the event', async () => {
      const { hostId, credential } = await join();
      await fleet.authenticate(credential);
      fleet.setOwnership(
        async (_host, ids) =>
          new Map(ids.filter((id) => id.startsWith('other-')).map((id) => [id, 'placed on another host'])),
      );
      const answer = await fleet.report(hostId, {
        instances: { full: true, items: [instance('mine-1'), instance('other-1', 'exited')] },
      });
      assert.deepEqual(answer.refused, [{ id: 'other-1', reason: 'placed on another host' }]);
      assert.deepEqual(answer.ignoredAcks, []);
      const last = events.filter(([n]) => n === 'instances').at(-1)![1] as FleetEvents['instances'];
      assert.deepEqual(last, { hostId, full: true, items: [instance('mine-1')] });
      fleet.setOwnership(async () => new Map());
    });

    test('acknowledgements fire the acks event once, with what was done; repeats and strangers change nothing', async () => {
      const a = await join();
      const b = await join();
      const op = await fleet.enqueue(a.hostId, { kind: 'remove', instanceId: 'pod-1' });
      const other = await fleet.enqueue(b.hostId, { kind: 'stop', instanceId: 'pod-2' });
      const first = await fleet.report(a.hostId, {
        acks: [
          { opId: op.id, ok: false, error: 'no such container' },
          { opId: other.id, ok: true },
        ],
      });
      assert.deepEqual(first.ignoredAcks, [{ opId: other.id, reason: 'no operation of this host has this id' }]);
      await fleet.report(a.hostId, { acks: [{ opId: op.id, ok: true }] });
      const acks = events.filter(([n]) => n === 'acks').map(([, p]) => p as FleetEvents['acks']);
      const mine = acks.filter((e) => e.hostId === a.hostId).flatMap((e) => e.acks);
      assert.deepEqual(
        mine.map((x) => [x.opId, x.kind, x.instanceId, x.ok, x.error]),
        [[op.id, 'remove', 'pod-1', false, 'no such container']],
      );
      assert.deepEqual(
        (await fleet.pending(b.hostId, 0)).map((o) => o.id),
        [other.id],
      );
    });

    test('a host revoked by another process is refused here after the next look, and announced once', async () => {
      const { hostId, credential } = await join();
      await fleet.authenticate(credential);
      await fleet.hosts.revokeHost(hostId, clock.now());
      assert.deepEqual(await fleet.authenticate(credential), { hostId }, 'cached until the look');
      await fleet.syncRevocations();
      await refusedWith('HOST_REVOKED', fleet.authenticate(credential));
      await fleet.syncRevocations();
      assert.equal(
        events.filter(([n, p]) => n === 'host:revoked' && (p as { hostId: string }).hostId === hostId).length,
        1,
      );
      await refusedWith('NOT_FOUND', fleet.enqueue(hostId, { kind: 'stop', instanceId: 'p' }));
    });

    test('an operation whose body no longer opens (the secret key changed) is acknowledged as failed rather than blocking the queue', async () => {
      const { hostId } = await join();
      const other = new FleetService({
        hosts: new HostStore(t.db),
        operations: new OperationStore(t.db),
        clock,
        secrets: new SecretBox(Buffer.alloc(32, 9)),
        catalog: defaultCatalog(),
        config,
      });
      const lost = await other.enqueue(hostId, { kind: 'stop', instanceId: 'p-lost' });
      const kept = await fleet.enqueue(hostId, { kind: 'stop', instanceId: 'p-kept' });
      assert.deepEqual(
        (await fleet.pending(hostId, 0)).map((o) => o.id),
        [kept.id],
      );
      const failed = events
        .filter(([n]) => n === 'acks')
        .flatMap(([, p]) => (p as FleetEvents['acks']).acks)
        .find((x) => x.opId === lost.id);
      assert.equal(failed?.ok, false);
      assert.match(failed?.error ?? '', /secret key changed/);
      await other.close();
    });

    test('acknowledged operations are pruned an hour after, pending ones kept', async () => {
      const { hostId } = await join();
      const done = await fleet.enqueue(hostId, { kind: 'stop', instanceId: 'p-done' });
      const open = await fleet.enqueue(hostId, { kind: 'stop', instanceId: 'p-open' });
      await fleet.ack(hostId, [{ opId: done.id, ok: true }]);
      clock.advance(ACKED_RETENTION_MS - 1);
      await fleet.prune();
      assert.equal((await fleet.operations.get([done.id])).length, 1);
      clock.advance(2);
      await fleet.prune();
      assert.deepEqual(
        (await fleet.operations.get([done.id, open.id])).map((o) => o.id),
        [open.id],
      );
    });
  });
}
