import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { OperationAck } from '../fleet/protocol.js';
import { AppliedOperations } from './applied-operations.js';
import { OperationApplier, type OperationApplierDeps } from './operation-applier.js';
import type { StreamOperation } from './stream-dialer.js';
import { readFileSync } from 'node:fs';
import { freePort, getJson, instanceSpec, startRunning } from '../runtime/runtime-contract-support.js';
import type { Operation } from '../fleet/protocol.js';
import { makeRuntime, removeDataDirs } from '../../test/support/process-runtime-harness.js';

after(removeDataDirs);

const idle = {
  start: async () => assert.fail('nothing starts'),
  stop: async () => undefined,
  remove: async () => undefined,
  removeVolume: async () => undefined,
  inspect: async () => null,
};

/** An applier over `runtime` and `streams`, its applied-operations file in `dir`, acknowledging into `acks`. */
async function applierIn(
  dir: string,
  acks: OperationAck[],
  deps: Pick<OperationApplierDeps, 'streams'> & { runtime?: OperationApplierDeps['runtime'] },
): Promise<OperationApplier> {
  return new OperationApplier({
    runtime: deps.runtime ?? idle,
    applied: await AppliedOperations.open(join(dir, 'applied.json'), { logger: pino({ level: 'silent' }) }),
    owners: new Map(),
    kept: new Set(),
    operated: () => undefined,
    logger: pino({ level: 'silent' }),
    acknowledge: (ack) => acks.push(ack),
    ...(deps.streams ? { streams: deps.streams } : {}),
  });
}

/** Resolves once `acks` holds `n` acknowledgements (whatever the machine's load: no fixed wait). */
async function acked(acks: OperationAck[], n: number): Promise<void> {
  while (acks.length < n) await new Promise((r) => setImmediate(r));
}

const streamOp = (id: string): StreamOperation => ({
  id,
  seq: 1,
  kind: 'stream',
  instanceId: 'pod-1',
  session: 'session-0001',
  secret: 's',
  request: { what: 'output', follow: true },
});

test('a stream operation delivered again while it connects, or after, is opened once and acknowledged each time after', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gantry-applier-'));
  try {
    const acks: OperationAck[] = [];
    let opened = 0;
    let connect!: () => void;
    const applier = await applierIn(dir, acks, {
      streams: {
        open: async () => {
          opened++;
          await new Promise<void>((resolve) => (connect = resolve));
          return { ok: true };
        },
      },
    });
    applier.dispatch(streamOp('op-1'));
    applier.dispatch(streamOp('op-1'));
    await new Promise((r) => setImmediate(r));
    assert.equal(opened, 1);
    assert.equal(acks.length, 0, 'acknowledged before it connected');
    connect();
    await applier.idle();
    assert.deepEqual(acks, [{ opId: 'op-1', ok: true }]);
    applier.dispatch(streamOp('op-1'));
    assert.equal(opened, 1, 'a redelivery after it connected opened it again');
    assert.deepEqual(acks.at(-1), { opId: 'op-1', ok: true });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a stream operation does not wait behind its instance’s operation under way, nor hold it up', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gantry-applier-'));
  try {
    const acks: OperationAck[] = [];
    let finishStart!: () => void;
    const applier = await applierIn(dir, acks, {
      runtime: {
        ...idle,
        start: () => new Promise<never>((resolve) => (finishStart = () => resolve(undefined as never))),
      },
      streams: { open: async () => ({ ok: false, error: 'instance "pod-1" is not running' }) },
    });
    const spec = {
      id: 'pod-1',
      owner: { kind: 'pod' as const, accountId: 'a' },
      image: 'i',
      args: '',
      env: {},
      platformEnv: {},
      hostId: 'h',
      gpuIndices: [],
      vcpus: 1,
      memoryGb: 1,
      diskGb: 0,
      ports: [],
      volumes: [],
    };
    applier.dispatch({ id: 'op-start', seq: 1, kind: 'start', instanceId: 'pod-1', spec });
    applier.dispatch(streamOp('op-stream'));
    await acked(acks, 1);
    assert.deepEqual(acks, [{ opId: 'op-stream', ok: false, error: 'instance "pod-1" is not running' }]);
    finishStart();
    await applier.idle();
    assert.deepEqual(
      acks.map((a) => a.opId),
      ['op-stream', 'op-start'],
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

/** The one-letter state of process `pid` in /proc (`T`: stopped by a signal). */
const procState = (pid: number): string => /\) (\S) /.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))![1]!;

test('suspend and resume operations freeze and continue the instance through the agent`s runtime, acknowledged each', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gantry-applier-'));
  const { runtime } = makeRuntime();
  try {
    const acks: OperationAck[] = [];
    const applier = await applierIn(dir, acks, { runtime });
    const port = await freePort();
    const spec = instanceSpec({ image: 'test/http', ports: [{ private: 8000, public: port, protocol: 'http' }] });
    await startRunning(runtime, spec);
    const { pid } = (await getJson(port, '/info')) as { pid: number };
    const op = (id: string, kind: 'suspend' | 'resume', instanceId = spec.id): Operation => ({
      id,
      seq: 1,
      kind,
      instanceId,
    });

    applier.dispatch(op('op-s', 'suspend'));
    await applier.idle();
    assert.deepEqual(acks, [{ opId: 'op-s', ok: true }]);
    assert.equal((await runtime.inspect(spec.id))?.state, 'suspended');
    assert.equal(procState(pid), 'T', 'its process is stopped');
    applier.dispatch(op('op-s', 'suspend'));
    assert.deepEqual(acks.at(-1), { opId: 'op-s', ok: true }, 'a redelivery is acknowledged again');

    applier.dispatch(op('op-r', 'resume'));
    await applier.idle();
    assert.deepEqual(acks.at(-1), { opId: 'op-r', ok: true });
    assert.equal((await runtime.inspect(spec.id))?.state, 'running');
    assert.notEqual(procState(pid), 'T');
    assert.equal(((await getJson(port, '/info')) as { pid: number }).pid, pid, 'the same process answers');

    applier.dispatch(op('op-x', 'suspend', 'no-such-instance'));
    await applier.idle();
    assert.equal(acks.at(-1)?.ok, false);
    assert.match(acks.at(-1)?.error ?? '', /no-such-instance/);
  } finally {
    await runtime.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('a suspend for a runtime without the capability, or naming no instance, fails saying why', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gantry-applier-'));
  try {
    const acks: OperationAck[] = [];
    const applier = await applierIn(dir, acks, {});
    applier.dispatch({ id: 'op-1', seq: 1, kind: 'suspend', instanceId: 'pod-1' });
    applier.dispatch({ id: 'op-2', seq: 2, kind: 'resume', instanceId: '' });
    await applier.idle();
    const byId = new Map(acks.map((a) => [a.opId, a]));
    assert.match(byId.get('op-1')?.error ?? '', /this host's runtime cannot suspend instances/);
    assert.match(byId.get('op-2')?.error ?? '', /the resume operation names no instance/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('an operation of a kind this agent does not know fails, saying to update gantry agent (what an older agent answers a suspend)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gantry-applier-'));
  try {
    const acks: OperationAck[] = [];
    const applier = await applierIn(dir, acks, {});
    applier.dispatch({ id: 'op-1', seq: 1, kind: 'hibernate', instanceId: 'pod-1' } as unknown as Operation);
    await applier.idle();
    assert.deepEqual(acks, [
      { opId: 'op-1', ok: false, error: 'unknown operation kind "hibernate": update gantry agent on this host' },
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("image operations go to the agent's runtime and are acknowledged with their result, kept for a redelivery; the credential is neither logged nor written down", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gantry-applier-'));
  try {
    const given: unknown[] = [];
    const runtime: OperationApplierDeps['runtime'] = {
      ...idle,
      prepareImage: async (hostId, request) => {
        given.push({ hostId, ...request });
        return { pulled: true, sizeBytes: 4_711 };
      },
      preparedImages: async () => [{ image: 'registry.example/acme/model:1', sizeBytes: 4_711, pulledAt: 5 }],
      discardImage: async () => 'in-use',
    };
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const acks: OperationAck[] = [];
    const open = async () =>
      new OperationApplier({
        runtime,
        hostId: 'host-1',
        applied: await AppliedOperations.open(join(dir, 'applied.json'), { logger: pino({ level: 'silent' }) }),
        owners: new Map(),
        kept: new Set(),
        operated: () => undefined,
        logger,
        acknowledge: (ack) => acks.push(ack),
      });
    const applier = await open();
    const auth = { username: 'alice', password: 'alice-secret-4711' };
    const image = 'registry.example/acme/model:1';
    applier.dispatch({ id: 'op-1', seq: 1, kind: 'prepareImage', image, accountId: 'acct-1', registryAuth: auth });
    applier.dispatch({ id: 'op-2', seq: 2, kind: 'preparedImages' });
    applier.dispatch({ id: 'op-3', seq: 3, kind: 'discardImage', image });
    applier.dispatch({ id: 'op-4', seq: 4, kind: 'discardImage', image: '' });
    await applier.idle();
    assert.deepEqual(given, [{ hostId: 'host-1', image, accountId: 'acct-1', registryAuth: auth }]);
    const byId = new Map(acks.map((a) => [a.opId, a]));
    assert.deepEqual(byId.get('op-1'), { opId: 'op-1', ok: true, result: { pulled: true, sizeBytes: 4_711 } });
    assert.deepEqual(byId.get('op-2')?.result, { images: [{ image, sizeBytes: 4_711, pulledAt: 5 }] });
    assert.deepEqual(byId.get('op-3')?.result, { outcome: 'in-use' });
    assert.match(byId.get('op-4')?.error ?? '', /the discardImage operation names no image/);
    assert.ok(
      lines.some((l) => l.includes(image)),
      'the operations are logged',
    );
    assert.ok(!lines.some((l) => l.includes(auth.password)), 'the credential is not');
    assert.doesNotMatch(readFileSync(join(dir, 'applied.json'), 'utf8'), /alice-secret-4711/);

    // A restarted agent given the operation again answers what it answered, without pulling again.
    acks.length = 0;
    const again = await open();
    again.dispatch({ id: 'op-1', seq: 1, kind: 'prepareImage', image, accountId: 'acct-1', registryAuth: auth });
    await again.idle();
    assert.deepEqual(acks, [{ opId: 'op-1', ok: true, result: { pulled: true, sizeBytes: 4_711 } }]);
    assert.equal(given.length, 1);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('image operations on a runtime that cannot pre-pull (the process runtime) fail saying so', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gantry-applier-'));
  try {
    const acks: OperationAck[] = [];
    const applier = await applierIn(dir, acks, {});
    applier.dispatch({ id: 'op-1', seq: 1, kind: 'preparedImages' });
    await applier.idle();
    assert.deepEqual(acks, [{ opId: 'op-1', ok: false, error: "this host's runtime cannot pre-pull images" }]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
