import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { FakeClock } from '../domain/clock.js';
import { ChangeRecorder, instanceSpec } from '../runtime/runtime-contract.js';
import type { InstanceOwner } from '../runtime/runtime.js';
import { FleetRuntime } from './fleet-runtime.js';
import type { InstanceReport, NewOperation, Operation } from './protocol.js';

const pod: InstanceOwner = { kind: 'pod', accountId: 'acct' };
/** What an agent from before suspend and resume acknowledges them with (operation-applier.ts's default branch). */
const OLD_AGENT_ERROR = (kind: string): string => `unknown operation kind "${kind}": update gantry agent on this host`;

/** A fleet runtime over an in-memory operation queue, with one instance running on host-a. */
async function running() {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const ops: Array<{ hostId: string; op: Operation }> = [];
  const runtime = new FleetRuntime({
    enqueue: async (hostId: string, op: NewOperation) => {
      const full = { ...op, id: `op-${ops.length + 1}`, seq: ops.length + 1 };
      ops.push({ hostId, op: full });
      return full;
    },
    placements: { placed: async () => new Map(), expected: async () => [] },
    clock,
    logger: pino({ level: 'silent' }),
  });
  const spec = instanceSpec({ hostId: 'host-a', owner: pod });
  await runtime.start(spec);
  const item = (state: InstanceReport['state']): InstanceReport => ({
    id: spec.id,
    owner: pod,
    state,
    startedAt: clock.now(),
    exitCode: null,
    reason: null,
  });
  await runtime.receive('host-a', {
    acks: [{ opId: ops[0]!.op.id, ok: true }],
    instances: { full: false, items: [item('running')] },
  });
  /** The operation of `kind` enqueued for the instance, once it is (no fixed wait). */
  const enqueued = async (kind: Operation['kind']): Promise<Operation> => {
    for (;;) {
      const found = ops.find((o) => o.op.kind === kind && o.hostId === 'host-a');
      if (found) return found.op;
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { runtime, ops, id: spec.id, item, enqueued };
}

describe('FleetRuntime suspend and resume', () => {
  test('a suspend goes to the instance`s host and resolves on its ack, the instance then suspended; a resume likewise', async () => {
    const f = await running();
    const changes = new ChangeRecorder(f.runtime);
    const suspending = f.runtime.suspend(f.id);
    const op = await f.enqueued('suspend');
    assert.deepEqual(
      { kind: op.kind, instanceId: 'instanceId' in op && op.instanceId },
      { kind: 'suspend', instanceId: f.id },
    );
    assert.equal((await f.runtime.inspect(f.id))?.state, 'running', 'running until the host acknowledged it');
    await f.runtime.receive('host-a', { acks: [{ opId: op.id, ok: true }] });
    await suspending;
    assert.equal((await f.runtime.inspect(f.id))?.state, 'suspended');
    await f.runtime.suspend(f.id);
    assert.equal(f.ops.filter((o) => o.op.kind === 'suspend').length, 1, 'a suspended instance is not suspended again');
    // The agent's report of the new state changes nothing more.
    await f.runtime.receive('host-a', { instances: { full: false, items: [f.item('suspended')] } });

    const resuming = f.runtime.resume(f.id);
    const resume = await f.enqueued('resume');
    await f.runtime.receive('host-a', { acks: [{ opId: resume.id, ok: true }] });
    await resuming;
    assert.equal((await f.runtime.inspect(f.id))?.state, 'running');
    assert.deepEqual(changes.statesOf(f.id), ['suspended', 'running']);
    assert.equal(f.runtime.canSuspend('host-a'), true);
  });

  test('a host whose agent does not know suspend is named, told to update gantry agent, and counted unable until it reports in full', async () => {
    const f = await running();
    const suspending = f.runtime.suspend(f.id);
    const op = await f.enqueued('suspend');
    await f.runtime.receive('host-a', { acks: [{ opId: op.id, ok: false, error: OLD_AGENT_ERROR('suspend') }] });
    await assert.rejects(suspending, /host host-a cannot suspend instances: .*update gantry agent on that host/);
    assert.equal((await f.runtime.inspect(f.id))?.state, 'running', 'the instance runs on');
    assert.equal(f.runtime.canSuspend('host-a'), false);
    assert.equal(f.runtime.canSuspend('host-b'), true, 'other hosts keep the capability');
    await assert.rejects(f.runtime.suspend(f.id), /update gantry agent on that host/);
    assert.equal(f.ops.filter((o) => o.op.kind === 'suspend').length, 1, 'nothing more is sent to that host');

    // Its agent reconnected (perhaps updated): it reports in full, and is asked again.
    await f.runtime.receive('host-a', { instances: { full: true, items: [f.item('running')] } });
    assert.equal(f.runtime.canSuspend('host-a'), true);
  });

  test('a suspend the host could not apply rejects with its reason, and the instance stays running', async () => {
    const f = await running();
    const suspending = f.runtime.suspend(f.id);
    const op = await f.enqueued('suspend');
    await f.runtime.receive('host-a', { acks: [{ opId: op.id, ok: false, error: 'the engine said no' }] });
    await assert.rejects(suspending, /host host-a could not suspend instance ".*": the engine said no/);
    assert.equal((await f.runtime.inspect(f.id))?.state, 'running');
    assert.equal(f.runtime.canSuspend('host-a'), true);
  });

  test('suspending an unknown id, or resuming an instance that is not suspended, is refused without an operation', async () => {
    const f = await running();
    await assert.rejects(f.runtime.suspend('no-such-instance'), /"no-such-instance": it does not run on any host/);
    await f.runtime.resume(f.id);
    await f.runtime.receive('host-a', { instances: { full: false, items: [f.item('exited')] } });
    await assert.rejects(f.runtime.suspend(f.id), /is exited: only a running instance can be suspended/);
    await assert.rejects(f.runtime.resume(f.id), /is exited: only a suspended instance can be resumed/);
    assert.deepEqual(
      f.ops.map((o) => o.op.kind),
      ['start'],
    );
  });
  test("a resume of an instance adopted at the control plane's start waits for its host's first full report, then goes to the host; a host found unreachable ends the wait", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const ops: Operation[] = [];
    const worker: InstanceOwner = { kind: 'worker', accountId: 'acct', endpointId: 'ep' };
    const runtime = new FleetRuntime({
      enqueue: async (_hostId: string, op: NewOperation) => {
        const full = { ...op, id: `op-${ops.length + 1}`, seq: ops.length + 1 };
        ops.push(full);
        return full;
      },
      placements: {
        placed: async () => new Map(),
        expected: async () => [
          { id: 'w-1', hostId: 'host-a', owner: worker },
          { id: 'w-2', hostId: 'host-b', owner: worker },
        ],
      },
      clock,
      logger: pino({ level: 'silent' }),
    });
    const adopted = await runtime.attach();
    assert.deepEqual(
      adopted.map((a) => [a.id, a.status?.state]),
      [
        ['w-1', 'unknown'],
        ['w-2', 'unknown'],
      ],
    );
    const item = (id: string): InstanceReport => ({
      id,
      owner: worker,
      state: 'suspended',
      startedAt: clock.now(),
      exitCode: null,
      reason: null,
    });

    let settled = false;
    const resuming = runtime.resume('w-1').finally(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual([ops.length, settled], [0, false], 'nothing sent, nothing refused, before the host said anything');
    await runtime.receive('host-a', { instances: { full: true, items: [item('w-1')] } });
    const resume = await (async () => {
      for (;;) {
        if (ops[0]) return ops[0];
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    assert.deepEqual(
      { kind: resume.kind, instanceId: 'instanceId' in resume && resume.instanceId },
      {
        kind: 'resume',
        instanceId: 'w-1',
      },
    );
    await runtime.receive('host-a', { acks: [{ opId: resume.id, ok: true }] });
    await resuming;
    assert.equal((await runtime.inspect('w-1'))?.state, 'running');

    // A host that never reports: found unreachable, the wait ends and the resume is refused saying so.
    const refused = runtime.resume('w-2');
    await new Promise((resolve) => setImmediate(resolve));
    runtime.hostUnavailable('host-b', clock.now());
    await assert.rejects(refused, /unknown \(host host-b unreachable since/);
    assert.equal(ops.length, 1, 'nothing sent to it');
  });
});
