import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { HealthProbe } from '../domain/image-spec.js';
import { FakeClock } from '../domain/clock.js';
import { ChangeRecorder, instanceSpec } from '../runtime/runtime-contract.js';
import type { InstanceOwner, InstanceSpec } from '../runtime/runtime.js';
import { FleetRuntime, type FleetCost, type PlacedInstance } from './fleet-runtime.js';
import { HostGoneError } from './operation-queue.js';
import type { InstanceReport, NewOperation, Operation } from './protocol.js';

const GRACE = 300_000;
const pod = (accountId = 'acct'): InstanceOwner => ({ kind: 'pod', accountId });

/** The seams FleetRuntime is built on, in memory: the operation queue, the control plane's records, the cost hooks. */
function fleet(
  options: {
    expected?: Array<PlacedInstance & { id: string }>;
    hosts?: Array<{ id: string; dataCenterId: string }>;
    healthOf?: (image: string) => HealthProbe | undefined;
  } = {},
) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const ops: Array<{ hostId: string; op: Operation }> = [];
  const placed = new Map<string, PlacedInstance>();
  const lookups: string[][] = [];
  /** hosts the queue refuses (revoked in the database, as the CLI does, before this runtime heard of it) */
  const gone = new Set<string>();
  const cost: Array<
    { call: 'pause'; hostId: string; at: number } | { call: 'resume'; podIds: readonly string[]; at: number }
  > = [];
  const costHooks: FleetCost = {
    pause: async (hostId, at) => void cost.push({ call: 'pause', hostId, at }),
    resume: async (podIds, at) => void cost.push({ call: 'resume', podIds, at }),
  };
  let seq = 0;
  const runtime = new FleetRuntime({
    enqueue: async (hostId: string, op: NewOperation) => {
      if (gone.has(hostId)) throw new HostGoneError(hostId);
      seq += 1;
      const full = { ...op, id: `op-${seq}`, seq };
      ops.push({ hostId, op: full });
      return full;
    },
    placements: {
      placed: async (ids) => {
        lookups.push([...ids]);
        return new Map(ids.flatMap((id) => (placed.has(id) ? [[id, placed.get(id)!] as const] : [])));
      },
      expected: async () => options.expected ?? [],
    },
    ...(options.hosts ? { hosts: () => options.hosts! } : {}),
    ...(options.healthOf ? { healthOf: options.healthOf } : {}),
    cost: costHooks,
    clock,
    logger: pino({ level: 'silent' }),
    config: { lostGraceMs: GRACE },
  });
  /** Starts `spec` as the pod controller would, recording its placement as the store would. */
  const start = async (overrides: Partial<InstanceSpec> = {}) => {
    const spec = instanceSpec({ hostId: 'host-a', owner: pod(), ...overrides });
    placed.set(spec.id, { hostId: spec.hostId, owner: spec.owner });
    await runtime.start(spec);
    return spec;
  };
  const opFor = (id: string, kind: Operation['kind']) =>
    ops.find((o) => o.op.kind === kind && 'instanceId' in o.op && o.op.instanceId === id)!.op;
  const item = (id: string, state: InstanceReport['state'], fields: Partial<InstanceReport> = {}): InstanceReport => ({
    id,
    owner: pod(),
    state,
    startedAt: clock.now(),
    exitCode: null,
    reason: null,
    ...fields,
  });
  return { runtime, clock, ops, placed, lookups, cost, gone, start, opFor, item };
}

describe('FleetRuntime', () => {
  test('a start is enqueued for the spec’s host and answers starting at once, which listeners hear', async () => {
    const f = fleet();
    const changes = new ChangeRecorder(f.runtime);
    const spec = instanceSpec({ hostId: 'host-a', owner: pod() });
    const status = await f.runtime.start(spec);
    assert.equal(status.state, 'starting');
    assert.equal(status.startedAt, f.clock.now());
    assert.deepEqual(
      f.ops.map((o) => [o.hostId, o.op.kind]),
      [['host-a', 'start']],
    );
    assert.deepEqual((f.ops[0]!.op as { spec: InstanceSpec }).spec, spec);
    assert.deepEqual(changes.statesOf(spec.id), ['starting']);
    assert.equal((await f.runtime.inspect(spec.id))?.state, 'starting');
    await assert.rejects(f.runtime.start(spec), /already starting on host host-a/);
  });

  test('a start carries the readiness probe healthOf gives its image, and none for an image without one', async () => {
    const health: HealthProbe = { type: 'http', port: 8000, path: '/health', intervalMs: 200, timeoutMs: 60_000 };
    const f = fleet({ healthOf: (image) => (image === 'probed/image' ? health : undefined) });
    const probed = await f.start({ id: 'pod-probed', image: 'probed/image' });
    const plain = await f.start({ id: 'pod-plain', image: 'plain/image' });
    assert.deepEqual(f.opFor(probed.id, 'start'), {
      id: 'op-1',
      seq: 1,
      kind: 'start',
      instanceId: probed.id,
      spec: probed,
      health,
    });
    assert.deepEqual(f.opFor(plain.id, 'start'), {
      id: 'op-2',
      seq: 2,
      kind: 'start',
      instanceId: plain.id,
      spec: plain,
    });
  });

  test('a running report moves the instance to running, and listeners hear each change once', async () => {
    const f = fleet();
    const spec = await f.start();
    const changes = new ChangeRecorder(f.runtime);
    await f.runtime.receive('host-a', {
      acks: [{ opId: f.opFor(spec.id, 'start').id, ok: true }],
      instances: { full: false, items: [f.item(spec.id, 'starting')] },
    });
    await f.runtime.applyReport('host-a', { full: false, items: [f.item(spec.id, 'running')] });
    await f.runtime.applyReport('host-a', { full: false, items: [f.item(spec.id, 'running')] });
    assert.deepEqual(changes.statesOf(spec.id), ['running']);
    assert.equal((await f.runtime.inspect(spec.id))?.state, 'running');
    assert.deepEqual(
      (await f.runtime.list()).map((s) => s.id),
      [spec.id],
    );
  });

  test('a start the host could not apply fails with the agent’s error as the reason', async () => {
    const f = fleet();
    const spec = await f.start();
    const changes = new ChangeRecorder(f.runtime);
    await f.runtime.applyAcks('host-a', [
      { opId: f.opFor(spec.id, 'start').id, ok: false, error: 'pull failed: manifest for ghcr.io/x/y:1 not found' },
    ]);
    const failed = await changes.next(spec.id, 'failed', 0);
    assert.equal(failed.reason, 'pull failed: manifest for ghcr.io/x/y:1 not found');
    assert.equal((await f.runtime.inspect(spec.id))?.state, 'failed');
    // Already failed: the agent's own report of it changes the reason, not the state.
    await f.runtime.applyReport('host-a', {
      full: false,
      items: [f.item(spec.id, 'failed', { reason: 'image not found' })],
    });
    assert.deepEqual(changes.statesOf(spec.id), ['failed', 'failed']);
    // A failed instance may be started again.
    assert.equal(
      (await f.runtime.start({ ...instanceSpec({ hostId: 'host-a', owner: pod() }), id: spec.id })).state,
      'starting',
    );
  });

  test("an agent's reason loses the host's paths before a tenant reads it: its volume and layer folders, the engine's own", async () => {
    const f = fleet();
    const spec = await f.start();
    const changes = new ChangeRecorder(f.runtime);
    const id = 'c3b437b44a93b27d49e75490d95e9316f87e1476f0831a3d3f4ade5783826052';
    await f.runtime.applyAcks('host-a', [
      {
        opId: f.opFor(spec.id, 'start').id,
        ok: false,
        error: `error mounting "/var/lib/docker/volumes/gantry-p1/_data" to rootfs at "/etc/hosts": not a directory`,
      },
    ]);
    const failed = await changes.next(spec.id, 'failed', 0);
    assert.equal(failed.reason, 'error mounting "<volume>" to rootfs at "/etc/hosts": not a directory');
    await f.runtime.applyReport('host-a', {
      full: false,
      items: [f.item(spec.id, 'failed', { reason: `lstat /srv/docker/overlay2/${id}/merged/bin/x: not a directory` })],
    });
    assert.equal((await f.runtime.inspect(spec.id))?.reason, 'lstat /bin/x: not a directory');
  });

  test('an instance its agent reports exited or failed takes the agent’s code and reason', async () => {
    const f = fleet();
    const spec = await f.start();
    await f.runtime.applyReport('host-a', {
      full: false,
      items: [f.item(spec.id, 'exited', { exitCode: 3, reason: 'the process exited with code 3; last output:\nboom' })],
    });
    assert.deepEqual(await f.runtime.inspect(spec.id), {
      id: spec.id,
      state: 'exited',
      startedAt: f.clock.now(),
      exitCode: 3,
      reason: 'the process exited with code 3; last output:\nboom',
      stats: null,
    });
  });

  test('while its host is unreachable an instance reads unknown with since when, and reads as last reported once the host is back; other hosts are unaffected', async () => {
    const f = fleet();
    const a = await f.start();
    const b = await f.start({ hostId: 'host-b' });
    await f.runtime.applyReport('host-a', { full: true, items: [f.item(a.id, 'running')] });
    await f.runtime.applyReport('host-b', { full: true, items: [f.item(b.id, 'running')] });
    const changes = new ChangeRecorder(f.runtime);
    const since = f.clock.now() - 30_000;
    f.runtime.hostUnavailable('host-a', since);
    const reason = `host host-a unreachable since ${new Date(since).toISOString()}`;
    assert.deepEqual(await changes.next(a.id, 'unknown', 0), {
      id: a.id,
      state: 'unknown',
      startedAt: f.clock.now(),
      exitCode: null,
      reason,
      stats: null,
    });
    assert.equal((await f.runtime.inspect(a.id))?.reason, reason);
    assert.equal(f.runtime.unavailable('host-a'), reason);
    assert.equal(f.runtime.unavailable('host-b'), null);
    assert.equal(f.runtime.unavailable(), null, 'the fleet as a whole is available');
    assert.equal((await f.runtime.inspect(b.id))?.state, 'running');
    assert.deepEqual(changes.statesOf(b.id), []);
    // Marked again (a later heartbeat check): nothing changes.
    f.runtime.hostUnavailable('host-a', since + 10_000);
    assert.deepEqual(changes.statesOf(a.id), ['unknown']);
    f.runtime.hostAvailable('host-a');
    assert.deepEqual(changes.statesOf(a.id), ['unknown', 'running']);
    assert.equal((await f.runtime.inspect(a.id))?.reason, null);
    assert.equal(f.runtime.unavailable('host-a'), null);
  });

  test('a revoked host’s live instances read exited saying so; their stop and remove send nothing, a start there is refused, and nothing it said before changes that', async () => {
    const f = fleet({ hosts: [{ id: 'host-a', dataCenterId: 'US-TX-3' }] });
    const a = await f.start();
    const kept = await f.start();
    const b = await f.start({ hostId: 'host-b' });
    await f.runtime.applyReport('host-a', { full: true, items: [f.item(a.id, 'running'), f.item(kept.id, 'running')] });
    await f.runtime.stop(kept.id);
    f.runtime.hostUnavailable('host-a', f.clock.now() - 30_000);
    const changes = new ChangeRecorder(f.runtime);
    const at = f.clock.now();
    f.runtime.hostRevoked('host-a', at);
    const reason = `host host-a was revoked at ${new Date(at).toISOString()}`;
    const ended = await changes.next(a.id, 'exited', 0);
    assert.deepEqual([ended.reason, ended.exitCode], [reason, null]);
    assert.equal(f.runtime.unavailable('host-a'), reason);
    assert.equal((await f.runtime.inspect(b.id))?.state, 'starting', 'other hosts are unaffected');
    // What it reported before its revocation, applied late (another replica's journal), changes nothing.
    assert.deepEqual(await f.runtime.applyReport('host-a', { full: false, items: [f.item(a.id, 'running')] }), []);
    f.runtime.hostAvailable('host-a');
    f.runtime.hostUnavailable('host-a', at + 1);
    assert.equal((await f.runtime.inspect(a.id))?.reason, reason, 'revoked for good');
    const sent = f.ops.length;
    await f.runtime.stop(a.id);
    await f.runtime.remove(a.id);
    await f.runtime.remove(kept.id);
    await f.runtime.removeVolume({ kind: 'network', volumeId: 'vol-1', dataCenterId: 'US-TX-3' });
    assert.equal(f.ops.length, sent, 'nothing more is sent to a revoked host');
    assert.deepEqual(await f.runtime.attach(), [
      { id: b.id, owner: b.owner, status: (await f.runtime.inspect(b.id))! },
    ]);
    await assert.rejects(f.runtime.start({ ...instanceSpec({ hostId: 'host-a', owner: pod() }) }), new RegExp(reason));
    assert.equal(f.ops.length, sent);
  });

  test('a stop or remove whose host turns out revoked (nothing queued) is done, not an error', async () => {
    const f = fleet();
    const a = await f.start();
    const b = await f.start();
    f.gone.add('host-a');
    await f.runtime.stop(a.id);
    await f.runtime.remove(b.id);
    await f.runtime.remove(a.id);
    assert.equal(await f.runtime.inspect(a.id), null);
    assert.equal(await f.runtime.inspect(b.id), null);
    assert.deepEqual(await f.runtime.attach(), []);
  });

  test('a full report without a live instance makes it exited, gone from its host, unless its start is pending', async () => {
    const f = fleet();
    const gone = await f.start();
    const pending = await f.start();
    await f.runtime.applyAcks('host-a', [{ opId: f.opFor(gone.id, 'start').id, ok: true }]);
    await f.runtime.applyReport('host-a', { full: false, items: [f.item(gone.id, 'running')] });
    const changes = new ChangeRecorder(f.runtime);
    await f.runtime.applyReport('host-a', { full: false, items: [] });
    assert.deepEqual(changes.statesOf(gone.id), [], 'a partial report says nothing of what it leaves out');
    await f.runtime.applyReport('host-a', { full: true, items: [] });
    const exited = await changes.next(gone.id, 'exited', 0);
    assert.equal(exited.reason, 'its container is gone from host host-a');
    assert.equal(exited.exitCode, null);
    assert.equal(
      (await f.runtime.inspect(pending.id))?.state,
      'starting',
      'a start not yet acknowledged is not missing',
    );
  });

  test('ids a host may not claim are refused and change nothing, while the rest of its report applies; another host’s instance and an id never placed read alike', async () => {
    const f = fleet();
    const mine = await f.start();
    const theirs = await f.start({ hostId: 'host-b' });
    f.placed.set('pod-elsewhere', { hostId: 'host-b', owner: pod('victim') });
    const changes = new ChangeRecorder(f.runtime);
    const refused = await f.runtime.applyReport('host-a', {
      full: true,
      items: [
        f.item(mine.id, 'running'),
        f.item(theirs.id, 'exited'),
        f.item('pod-elsewhere', 'running'),
        f.item('never-placed', 'running'),
        f.item('x'.repeat(500), 'running'),
      ],
    });
    const notHere = 'the control plane placed no instance with this id on this host';
    assert.deepEqual(refused, [
      { id: theirs.id, reason: notHere },
      { id: 'x'.repeat(200), reason: 'not an instance id' },
      { id: 'pod-elsewhere', reason: notHere },
      { id: 'never-placed', reason: notHere },
    ]);
    assert.deepEqual(changes.statesOf(mine.id), ['running']);
    assert.deepEqual(changes.statesOf(theirs.id), []);
    assert.equal((await f.runtime.inspect(theirs.id))?.state, 'starting');
    assert.equal(await f.runtime.inspect('pod-elsewhere'), null);
    assert.equal(await f.runtime.inspect('never-placed'), null);
    assert.deepEqual(await f.runtime.refusals('host-b', [theirs.id, mine.id]), [{ id: mine.id, reason: notHere }]);
    // A state that is none of the port's is refused too.
    assert.deepEqual(
      await f.runtime.applyReport('host-a', { full: false, items: [f.item(mine.id, 'exploded' as 'running')] }),
      [{ id: mine.id, reason: 'state "exploded" is none of starting, running, suspended, exited, failed, unknown' }],
    );
    assert.equal((await f.runtime.inspect(mine.id))?.state, 'running');
  });

  test('an operation is acknowledged only by the host it was for', async () => {
    const f = fleet();
    const spec = await f.start();
    await f.runtime.applyAcks('host-b', [{ opId: f.opFor(spec.id, 'start').id, ok: false, error: 'forged' }]);
    assert.equal((await f.runtime.inspect(spec.id))?.state, 'starting');
    await f.runtime.applyAcks('host-a', [{ opId: 'op-unknown', ok: false, error: 'from another replica' }]);
    assert.equal((await f.runtime.inspect(spec.id))?.state, 'starting');
  });

  test('stop forgets the instance at once, and what its host says of it is ignored until the host acknowledged the stop', async () => {
    const f = fleet();
    const spec = await f.start();
    await f.runtime.applyReport('host-a', { full: true, items: [f.item(spec.id, 'running')] });
    await f.runtime.stop(spec.id);
    assert.equal(await f.runtime.inspect(spec.id), null);
    assert.deepEqual(
      f.ops.map((o) => o.op.kind),
      ['start', 'stop'],
    );
    const changes = new ChangeRecorder(f.runtime);
    await f.runtime.applyReport('host-a', { full: true, items: [f.item(spec.id, 'running')] });
    assert.equal(
      await f.runtime.inspect(spec.id),
      null,
      'a report sent before the stop was applied does not bring it back',
    );
    // Started again before the stop is acknowledged: the ack and the new run's state arrive together.
    await f.runtime.start(spec);
    await f.runtime.receive('host-a', {
      acks: [
        { opId: f.opFor(spec.id, 'stop').id, ok: true },
        { opId: f.ops.filter((o) => o.op.kind === 'start').at(-1)!.op.id, ok: true },
      ],
      instances: { full: false, items: [f.item(spec.id, 'running')] },
    });
    assert.deepEqual(changes.statesOf(spec.id), ['starting', 'running']);
  });

  test('remove and stop of an id this runtime does not track reach the host the records place it on; an unknown id is a no-op', async () => {
    const f = fleet();
    f.placed.set('pod-kept', { hostId: 'host-c', owner: pod() });
    await f.runtime.remove('pod-kept');
    await f.runtime.stop('pod-kept');
    await f.runtime.remove('no-such-instance');
    await f.runtime.stop('no-such-instance');
    assert.deepEqual(
      f.ops.map((o) => [o.hostId, o.op.kind, 'instanceId' in o.op ? o.op.instanceId : null]),
      [
        ['host-c', 'remove', 'pod-kept'],
        ['host-c', 'stop', 'pod-kept'],
      ],
    );
  });

  test('removing a network volume reaches every host of its data center and every host an instance mounting it started on', async () => {
    const f = fleet({
      hosts: [
        { id: 'host-a', dataCenterId: 'EU-RO-1' },
        { id: 'host-b', dataCenterId: 'US-TX-3' },
        { id: 'host-c', dataCenterId: 'EU-RO-1' },
      ],
    });
    await f.start({ hostId: 'host-d', volumes: [{ kind: 'network', volumeId: 'vol1', path: '/data' }] });
    await f.runtime.removeVolume({ kind: 'network', volumeId: 'vol1', dataCenterId: 'EU-RO-1' });
    const removals = f.ops.filter((o) => o.op.kind === 'removeVolume');
    assert.deepEqual(removals.map((o) => o.hostId).sort(), ['host-a', 'host-c', 'host-d']);
    assert.ok(removals.every((o) => o.op.kind === 'removeVolume' && o.op.volumeId === 'vol1'));
  });

  test('after the lost grace the cost of the host’s pods pauses once, as of the grace’s end; the first report once it is back resumes its running pods', async () => {
    const f = fleet();
    const running = await f.start();
    const worker = await f.start({ owner: { kind: 'worker', accountId: 'acct', endpointId: 'ep' } });
    const exited = await f.start();
    const other = await f.start({ hostId: 'host-b' });
    await f.runtime.applyReport('host-a', {
      full: true,
      items: [f.item(running.id, 'running'), f.item(worker.id, 'running'), f.item(exited.id, 'exited')],
    });
    await f.runtime.applyReport('host-b', { full: true, items: [f.item(other.id, 'running')] });
    f.cost.length = 0;
    const since = f.clock.now();
    f.runtime.hostUnavailable('host-a', since);
    f.clock.advance(GRACE - 1);
    await f.runtime.sweep();
    assert.deepEqual(f.cost, [], 'not before the grace has passed');
    f.clock.advance(60_000);
    await f.runtime.sweep();
    await f.runtime.sweep();
    assert.deepEqual(f.cost, [{ call: 'pause', hostId: 'host-a', at: since + GRACE }]);
    f.clock.advance(3_600_000);
    f.runtime.hostAvailable('host-a');
    assert.deepEqual(f.cost.length, 1, 'back, but nothing reported yet');
    await f.runtime.applyReport('host-a', {
      full: true,
      items: [f.item(running.id, 'running'), f.item(worker.id, 'running')],
    });
    assert.deepEqual(f.cost.at(-1), { call: 'resume', podIds: [running.id], at: f.clock.now() });
    await f.runtime.applyReport('host-a', {
      full: true,
      items: [f.item(running.id, 'running'), f.item(worker.id, 'running')],
    });
    assert.equal(f.cost.length, 2, 'resumed once');
    await f.runtime.close();
  });

  test('at server start, attach answers the instances meant to run as unknown until their host reports, and its first full report confirms them or marks them exited', async () => {
    const expected = [
      { id: 'pod-1', hostId: 'host-a', owner: pod() },
      { id: 'pod-2', hostId: 'host-a', owner: pod() },
      { id: 'worker-1', hostId: 'host-b', owner: { kind: 'worker' as const, accountId: 'acct', endpointId: 'ep' } },
    ];
    const f = fleet({ expected });
    for (const e of expected) f.placed.set(e.id, e);
    const attached = await f.runtime.attach();
    assert.deepEqual(
      attached.map((a) => [a.id, a.owner?.kind, a.status?.state, a.status?.reason]),
      expected.map((e) => [
        e.id,
        e.owner.kind,
        'unknown',
        `host ${e.hostId} has not reported since the control plane started`,
      ]),
    );
    const changes = new ChangeRecorder(f.runtime);
    await f.runtime.applyReport('host-a', { full: true, items: [f.item('pod-1', 'running')] });
    assert.deepEqual(changes.statesOf('pod-1'), ['running']);
    assert.equal((await changes.next('pod-2', 'exited', 0)).reason, 'its container is gone from host host-a');
    assert.equal((await f.runtime.inspect('worker-1'))?.state, 'unknown');
    assert.deepEqual(
      f.cost,
      [{ call: 'resume', podIds: ['pod-1'], at: f.clock.now() }],
      'the first report resumes what a lost grace may have paused',
    );
  });

  test('an instance its host reports that this runtime never started is adopted with the owner on record, and one stopped and kept is answered by attach as such', async () => {
    const f = fleet();
    f.placed.set('pod-live', { hostId: 'host-a', owner: pod('owner-on-record') });
    f.placed.set('pod-kept', { hostId: 'host-a', owner: pod('owner-on-record') });
    const changes = new ChangeRecorder(f.runtime);
    await f.runtime.applyReport('host-a', {
      full: true,
      items: [
        f.item('pod-live', 'running', { owner: pod('claimed-by-agent') }),
        f.item('pod-kept', 'exited', { kept: true }),
      ],
    });
    assert.deepEqual(changes.statesOf('pod-live'), ['running']);
    assert.equal(await f.runtime.inspect('pod-kept'), null, 'a kept instance is not live');
    const attached = await f.runtime.attach();
    assert.deepEqual(attached, [
      {
        id: 'pod-live',
        owner: pod('owner-on-record'),
        status: {
          id: 'pod-live',
          state: 'running',
          startedAt: f.clock.now(),
          exitCode: null,
          reason: null,
          stats: null,
        },
      },
      { id: 'pod-kept', owner: pod('owner-on-record'), status: null },
    ]);
    // Known now: its next report needs no lookup.
    const lookups = f.lookups.length;
    await f.runtime.applyReport('host-a', {
      full: true,
      items: [f.item('pod-live', 'running'), f.item('pod-kept', 'exited', { kept: true })],
    });
    assert.equal(f.lookups.length, lookups);
    await f.runtime.remove('pod-kept');
    assert.deepEqual(
      f.ops.map((o) => [o.hostId, o.op.kind]),
      [['host-a', 'remove']],
    );
  });

  test('a report applied after close changes nothing, and a start after close is refused', async () => {
    const f = fleet();
    const spec = await f.start();
    await f.runtime.close();
    await f.runtime.applyReport('host-a', { full: true, items: [] });
    assert.equal((await f.runtime.inspect(spec.id))?.state, 'starting');
    await assert.rejects(f.runtime.start(instanceSpec({ hostId: 'host-a' })), /shutting down/);
  });
});

test('an id reported twice in one report, once with a state that is none of the port’s, is refused whole', async () => {
  const f = fleet();
  const spec = await f.start();
  const refused = await f.runtime.applyReport('host-a', {
    full: false,
    items: [f.item(spec.id, 'running'), f.item(spec.id, 'bogus' as 'running')],
  });
  assert.deepEqual(
    refused.map((r) => r.id),
    [spec.id],
  );
  assert.equal((await f.runtime.inspect(spec.id))?.state, 'starting');
});

test("a host's utilisation figures reach its own running instances, outlive state reports, and are ignored for another host's", async () => {
  const f = fleet();
  const mine = await f.start();
  const theirs = await f.start({ hostId: 'host-b' });
  await f.runtime.receive('host-a', {
    acks: [{ opId: f.opFor(mine.id, 'start').id, ok: true }],
    instances: { full: false, items: [f.item(mine.id, 'running')] },
  });
  const figures = { cpuUtil: 42, memoryUtil: 17, memoryBytes: 1_000_000, gpus: [{ util: 90, memoryUtil: 55 }] };
  f.runtime.applyStats('host-a', { [mine.id]: figures, [theirs.id]: figures });
  assert.deepEqual((await f.runtime.inspect(mine.id))?.stats, figures);
  assert.equal((await f.runtime.inspect(theirs.id))?.stats, null, 'host-a spoke for an instance of host-b');
  await f.runtime.applyReport('host-a', { full: false, items: [f.item(mine.id, 'running')] });
  assert.deepEqual((await f.runtime.inspect(mine.id))?.stats, figures, 'a state report wiped the last sample');
  await f.runtime.applyReport('host-a', { full: false, items: [f.item(mine.id, 'exited', { exitCode: 0 })] });
  assert.equal((await f.runtime.inspect(mine.id))?.stats, null, 'an exited instance kept its figures');
});

test("an instance's output and shell go to its host's agent, and a host that is unreachable says so at once", async () => {
  const f = fleet();
  const spec = await f.start();
  await f.runtime.receive('host-a', {
    acks: [{ opId: f.opFor(spec.id, 'start').id, ok: true }],
    instances: { full: false, items: [f.item(spec.id, 'running')] },
  });
  const asked: string[] = [];
  f.runtime.useStreams({
    async *output(hostId, id) {
      asked.push(`output ${hostId} ${id}`);
      yield { ts: 1, line: 'hello' };
    },
    async shell(hostId, id) {
      asked.push(`shell ${hostId} ${id}`);
      throw new Error('stand-in');
    },
  });
  const lines = [];
  for await (const l of f.runtime.output(spec.id, { follow: false, signal: new AbortController().signal }))
    lines.push(l.line);
  assert.deepEqual(lines, ['hello']);
  await assert.rejects(f.runtime.shell(spec.id, { cols: 80, rows: 24 }), /stand-in/);
  assert.deepEqual(asked, [`output host-a ${spec.id}`, `shell host-a ${spec.id}`]);
  f.runtime.hostUnavailable('host-a', f.clock.now());
  await assert.rejects(async () => {
    for await (const _ of f.runtime.output(spec.id, { follow: false, signal: new AbortController().signal }));
  }, /host host-a unreachable since .*: the output stays on the host until its agent is back/);
  await assert.rejects(f.runtime.shell(spec.id, { cols: 80, rows: 24 }), /is not running/);
  assert.equal(asked.length, 2, 'an unreachable host was asked');
});
