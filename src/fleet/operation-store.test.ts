import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dialects, openTestDb, type TestDb } from '../../test/support/harness.js';
import { HostStore, type HostRecord } from './host-store.js';
import { OperationStore, type NewOperationRow } from './operation-store.js';

const host = (id: string): HostRecord => ({
  id,
  name: id,
  credentialHash: `hash-${id}`,
  dataCenterId: 'US-TX-3',
  cloud: 'SECURE',
  publicIp: '203.0.113.7',
  portRange: [40000, 40999],
  capacity: {
    vcpus: 4,
    memoryGb: 8,
    diskGb: 100,
    gpus: [],
    cudaVersion: null,
    gpuMode: 'env-only',
    cpuFlavors: ['cpu3c'],
    notes: [],
  },
  agentVersion: '0.1.0',
  joinedAt: 1,
  lastReportAt: null,
  revokedAt: null,
});

const op = (id: string, over: Partial<NewOperationRow> = {}): NewOperationRow => ({
  id,
  kind: 'start',
  instanceId: `pod-${id}`,
  volumeId: null,
  body: `sealed-${id}`,
  ...over,
});

for (const { name, skip } of dialects()) {
  describe(`OperationStore on ${name}`, { skip }, () => {
    let t: TestDb;
    let store: OperationStore;
    before(async () => {
      t = await openTestDb(name);
      store = new OperationStore(t.db);
      const hosts = new HostStore(t.db);
      for (const id of ['host-a', 'host-b', 'host-r']) await hosts.insertHost(host(id));
      await hosts.revokeHost('host-r', 5);
    });
    after(() => t?.cleanup());

    test('each host numbers its operations from 1, in the order they were queued', async () => {
      assert.equal(await store.enqueue('host-a', op('a1'), 10), 1);
      assert.equal(await store.enqueue('host-a', op('a2', { kind: 'stop' }), 11), 2);
      assert.equal(
        await store.enqueue('host-b', op('b1', { kind: 'removeVolume', instanceId: null, volumeId: 'vol-1' }), 12),
        1,
      );
      assert.equal(await store.enqueue('host-a', op('a3', { kind: 'remove' }), 13), 3);
    });

    test('an unknown or revoked host gets no operation', async () => {
      assert.equal(await store.enqueue('host-none', op('x1'), 10), null);
      assert.equal(await store.enqueue('host-r', op('x2'), 10), null);
      assert.deepEqual(await store.get(['x1', 'x2']), []);
    });

    test('concurrent enqueues for one host take distinct, gapless sequence numbers', async () => {
      const seqs = await Promise.all(Array.from({ length: 20 }, (_, i) => store.enqueue('host-b', op(`c${i}`), 20)));
      assert.deepEqual(
        [...seqs].sort((x, y) => x! - y!),
        Array.from({ length: 20 }, (_, i) => i + 2),
      );
    });

    test("pending answers a host's own unacknowledged operations after a sequence number, oldest first, a page at a time", async () => {
      const pending = await store.pending('host-a', 0, 100);
      assert.deepEqual(
        pending.map((o) => [o.id, o.seq, o.kind, o.instanceId, o.body, o.state]),
        [
          ['a1', 1, 'start', 'pod-a1', 'sealed-a1', 'pending'],
          ['a2', 2, 'stop', 'pod-a2', 'sealed-a2', 'pending'],
          ['a3', 3, 'remove', 'pod-a3', 'sealed-a3', 'pending'],
        ],
      );
      assert.deepEqual(
        (await store.pending('host-a', 1, 1)).map((o) => o.id),
        ['a2'],
      );
      const b = await store.pending('host-b', 0, 1);
      assert.deepEqual([b[0]?.id, b[0]?.volumeId, b[0]?.instanceId], ['b1', 'vol-1', null]);
    });

    test('an ack applies once to the host’s own pending operation; other hosts’ and unknown ids are answered as unknown and change nothing', async () => {
      const first = await store.ack(
        'host-a',
        [
          { id: 'a1', ok: true, error: null },
          { id: 'a2', ok: false, error: 'pull failed' },
          { id: 'b1', ok: true, error: null },
          { id: 'op-none', ok: true, error: null },
        ],
        50,
      );
      assert.deepEqual(
        first.applied.map((o) => [o.id, o.state, o.ackOk, o.ackError, o.ackedAt]),
        [
          ['a1', 'acked', true, null, 50],
          ['a2', 'acked', false, 'pull failed', 50],
        ],
      );
      assert.deepEqual(first.unknown.sort(), ['b1', 'op-none']);
      const again = await store.ack('host-a', [{ id: 'a2', ok: true, error: null }], 60);
      assert.deepEqual(again, { applied: [], unknown: [] });
      const [a2] = await store.get(['a2']);
      assert.deepEqual([a2?.ackOk, a2?.ackError, a2?.ackedAt], [false, 'pull failed', 50], 'the first result stands');
      const [b1] = await store.get(['b1']);
      assert.equal(b1?.state, 'pending', "another host's ack changed nothing");
      assert.deepEqual(
        (await store.pending('host-a', 0, 100)).map((o) => o.id),
        ['a3'],
      );
    });

    test('acknowledged operations are pruned after their retention; pending ones stay', async () => {
      assert.equal(await store.pruneAcked(50), 0);
      assert.equal(await store.pruneAcked(51), 2);
      assert.deepEqual(
        (await store.get(['a1', 'a2', 'a3'])).map((o) => o.id),
        ['a3'],
      );
    });
  });
}
