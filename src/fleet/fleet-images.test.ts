import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { FakeClock } from '../domain/clock.js';
import { FleetRuntime } from './fleet-runtime.js';
import type { NewOperation, Operation, OperationAck } from './protocol.js';

const IMAGE = 'registry.example/acme/model:1';
const AUTH = { username: 'alice', password: 'alice-pw' };

/** A fleet runtime over an in-memory operation queue; host-a has reported. */
async function fleet() {
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
  await runtime.receive('host-a', { instances: { full: true, items: [] } });
  /** The nth operation (from 1) enqueued, once it is (no fixed wait). */
  const enqueued = async (n: number): Promise<Operation> => {
    while (ops.length < n) await new Promise((resolve) => setImmediate(resolve));
    return ops[n - 1]!.op;
  };
  const ack = (a: OperationAck) => runtime.receive('host-a', { acks: [a] });
  return { runtime, ops, enqueued, ack };
}

describe('FleetRuntime pre-pulled images', () => {
  test("a pre-pull goes to the host with the image, the owner's account and credential, and resolves on the ack's result", async () => {
    const f = await fleet();
    const preparing = f.runtime.prepareImage('host-a', { image: IMAGE, accountId: 'acct-1', registryAuth: AUTH });
    const op = await f.enqueued(1);
    assert.deepEqual(
      { ...op, id: undefined, seq: undefined },
      {
        kind: 'prepareImage',
        image: IMAGE,
        accountId: 'acct-1',
        registryAuth: AUTH,
        id: undefined,
        seq: undefined,
      },
    );
    assert.equal(f.ops[0]!.hostId, 'host-a');
    await f.ack({ opId: op.id, ok: true, result: { pulled: true, sizeBytes: 123 } });
    assert.deepEqual(await preparing, { pulled: true, sizeBytes: 123 });

    const listing = f.runtime.preparedImages('host-a');
    const list = await f.enqueued(2);
    await f.ack({
      opId: list.id,
      ok: true,
      result: {
        images: [
          { image: IMAGE, sizeBytes: 123, pulledAt: 9, accountId: 'acct-1' },
          { image: `${IMAGE}-old`, sizeBytes: 5, pulledAt: 1 },
          { image: 7, sizeBytes: 1 } as never,
        ],
      },
    });
    assert.deepEqual(
      await listing,
      [
        { image: IMAGE, sizeBytes: 123, pulledAt: 9, accountId: 'acct-1' },
        { image: `${IMAGE}-old`, sizeBytes: 5, pulledAt: 1, accountId: null },
      ],
      'what is not an image is dropped; the account it was pulled for is kept (null from an agent that does not say)',
    );

    const discarding = f.runtime.discardImage('host-a', IMAGE);
    const discard = await f.enqueued(3);
    assert.equal(discard.kind, 'discardImage');
    await f.ack({ opId: discard.id, ok: true, result: { outcome: 'removed' } });
    assert.equal(await discarding, 'removed');
  });

  test('an ack whose result is missing or of another shape is not believed', async () => {
    const f = await fleet();
    const preparing = f.runtime.prepareImage('host-a', { image: IMAGE, accountId: 'acct-1', registryAuth: null });
    await f.ack({ opId: (await f.enqueued(1)).id, ok: true, result: { pulled: true, sizeBytes: -1 } });
    await assert.rejects(preparing, /acknowledged the pre-pull of ".*" without saying what it pulled/);
    const discarding = f.runtime.discardImage('host-a', IMAGE);
    await f.ack({ opId: (await f.enqueued(2)).id, ok: true });
    await assert.rejects(discarding, /without saying what it did/);
  });

  test('a call while the same operation is under way waits for it rather than queueing another', async () => {
    const f = await fleet();
    const request = { image: IMAGE, accountId: 'acct-1', registryAuth: null };
    const first = f.runtime.prepareImage('host-a', request);
    const op = await f.enqueued(1);
    const second = f.runtime.prepareImage('host-a', request);
    await new Promise((resolve) => setImmediate(resolve));
    await f.ack({ opId: op.id, ok: true, result: { pulled: true, sizeBytes: 5 } });
    assert.deepEqual(await Promise.all([first, second]), [
      { pulled: true, sizeBytes: 5 },
      { pulled: true, sizeBytes: 5 },
    ]);
    assert.equal(f.ops.length, 1);
  });

  test('an agent that does not know the operations turns pre-pulling off for its host only, until it reports in full again', async () => {
    const f = await fleet();
    const listing = f.runtime.preparedImages('host-a');
    const op = await f.enqueued(1);
    await f.ack({
      opId: op.id,
      ok: false,
      error: 'unknown operation kind "preparedImages": update gantry agent on this host',
    });
    await assert.rejects(listing, /host host-a cannot pre-pull images: .*update gantry agent on that host/);
    assert.equal(f.runtime.canPrepareImages('host-a'), false);
    assert.equal(f.runtime.canPrepareImages('host-b'), true);
    await assert.rejects(f.runtime.preparedImages('host-a'), /update gantry agent/);
    assert.equal(f.ops.length, 1, 'nothing more is sent to it');
    await f.runtime.receive('host-a', { instances: { full: true, items: [] } });
    assert.equal(f.runtime.canPrepareImages('host-a'), true);
  });

  test('a host that is unreachable is sent nothing; a refusal carries the agent’s reason', async () => {
    const f = await fleet();
    f.runtime.hostUnavailable('host-a', Date.UTC(2026, 0, 1));
    await assert.rejects(f.runtime.preparedImages('host-a'), /nothing sent to host host-a .*unreachable since/);
    assert.equal(f.ops.length, 0);
    f.runtime.hostAvailable('host-a');
    const preparing = f.runtime.prepareImage('host-a', { image: IMAGE, accountId: 'acct-1', registryAuth: null });
    await f.ack({ opId: (await f.enqueued(1)).id, ok: false, error: 'pull access denied' });
    await assert.rejects(preparing, /host host-a could not prepareImage ".*": pull access denied/);
  });
});
