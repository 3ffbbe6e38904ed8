import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { FakeRuntime } from '../../test/support/fake-runtime/fake-runtime.js';
import { FakeTimers, settle } from '../../test/support/fake-timers.js';
import type {
  HostCapacity,
  JoinAnswer,
  JoinRequest,
  Operation,
  ReportAnswer,
  ReportRequest,
} from '../fleet/protocol.js';
import type { InstanceSpec, IsolationGap } from '../runtime/runtime.js';
import { AgentCore, type AgentCoreConfig } from './agent-core.js';
import { AgentFatal, JOIN_TOKEN_INVALID_MESSAGE } from './agent-fatal.js';
import { ControlPlaneRefusal, ControlPlaneUnreachable, type AgentTransport } from './agent-transport.js';
import { AppliedOperations } from './applied-operations.js';
import { CredentialFile } from './credential-file.js';
import { until as untilHolds } from '../../test/support/eventually.js';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const dataDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-agent-core-'));
  dirs.push(dir);
  return dir;
};

const HEARTBEAT_MS = 10_000;
const TOKEN = 'gjt_0123456789abcdefghijklmnopqrstuv';
const JOINED: JoinAnswer = {
  hostId: 'host-000000000001',
  credential: 'ghc_host-000000000001_secretsecretsecret',
  dataCenterId: 'US-TX-3',
  cloud: 'SECURE',
  heartbeatMs: HEARTBEAT_MS,
  pollWaitMs: 25_000,
};
const CAPACITY: HostCapacity = {
  vcpus: 16,
  memoryGb: 64,
  diskGb: 500,
  gpus: [{ uuid: 'GPU-6f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b01', name: 'NVIDIA GeForce RTX 4090', memoryMb: 24564 }],
  cudaVersion: '12.4',
  gpuMode: 'nvidia',
  cpuFlavors: [],
  notes: [],
};

const spec = (id: string, image: string = FakeRuntime.IMAGES.idle): InstanceSpec => ({
  id,
  owner: { kind: 'pod', accountId: 'acct1' },
  image,
  args: '',
  env: {},
  platformEnv: {},
  hostId: JOINED.hostId,
  gpuIndices: [],
  vcpus: 1,
  memoryGb: 1,
  diskGb: 0,
  ports: [],
  volumes: [],
});
let seq = 0;
const start = (id: string, image?: string): Operation => ({
  id: `op-${++seq}`,
  seq,
  kind: 'start',
  instanceId: id,
  spec: spec(id, image),
});
const stop = (id: string): Operation => ({ id: `op-${++seq}`, seq, kind: 'stop', instanceId: id });
const remove = (id: string): Operation => ({ id: `op-${++seq}`, seq, kind: 'remove', instanceId: id });
const OWNER = { kind: 'pod', accountId: 'acct1' } as const;
const keptItem = (id: string) => ({
  id,
  owner: OWNER,
  state: 'exited',
  startedAt: null,
  exitCode: null,
  reason: null,
  kept: true,
});

interface PendingPoll {
  server: string;
  after: number;
  answer(ops: Operation[]): void;
  fail(err: Error): void;
}

/** The control plane, scripted: records every call; polls wait until the test answers them. */
class ScriptedTransport implements AgentTransport {
  readonly joins: Array<{ server: string; body: JoinRequest; at: number }> = [];
  readonly reports: Array<{ server: string; body: ReportRequest; at: number }> = [];
  readonly polls: Array<{ server: string; after: number; waitMs: number; at: number }> = [];
  readonly #pending: PendingPoll[] = [];
  /** servers that do not answer */
  readonly down = new Set<string>();
  revoked = false;
  joinRefusal: ControlPlaneRefusal | null = null;
  refused: ReportAnswer['refused'] = [];
  /** the job API's URL the answers name; null: none (an older control plane) */
  jobUrl: string | null = null;

  constructor(readonly timers: FakeTimers) {}

  async join(server: string, body: JoinRequest): Promise<JoinAnswer> {
    this.joins.push({ server, body, at: this.timers.clock.now() });
    if (this.down.has(server)) throw new ControlPlaneUnreachable(`cannot reach ${server}: ECONNREFUSED`);
    if (this.joinRefusal) throw this.joinRefusal;
    return { ...JOINED };
  }

  async report(server: string, credential: string, body: ReportRequest): Promise<ReportAnswer> {
    assert.equal(credential, JOINED.credential);
    this.reports.push({ server, body: structuredClone(body), at: this.timers.clock.now() });
    if (this.down.has(server)) throw new ControlPlaneUnreachable(`cannot reach ${server}: ECONNREFUSED`);
    if (this.revoked) throw new ControlPlaneRefusal(401, 'HOST_REVOKED', 'this host was revoked');
    return {
      now: this.timers.clock.now(),
      refused: this.refused,
      ignoredAcks: [],
      ...(this.jobUrl ? { jobUrl: this.jobUrl } : {}),
    };
  }

  operations(
    server: string,
    credential: string,
    query: { after: number; waitMs: number },
    signal: AbortSignal,
  ): Promise<Operation[]> {
    assert.equal(credential, JOINED.credential);
    this.polls.push({ server, ...query, at: this.timers.clock.now() });
    if (this.down.has(server))
      return Promise.reject(new ControlPlaneUnreachable(`cannot reach ${server}: ECONNREFUSED`));
    if (this.revoked) return Promise.reject(new ControlPlaneRefusal(401, 'HOST_REVOKED', 'this host was revoked'));
    return new Promise((resolve, reject) => {
      const poll: PendingPoll = {
        server,
        after: query.after,
        answer: (ops) => {
          this.#pending.splice(this.#pending.indexOf(poll), 1);
          resolve(structuredClone(ops));
        },
        fail: (err) => {
          this.#pending.splice(this.#pending.indexOf(poll), 1);
          reject(err);
        },
      };
      this.#pending.push(poll);
      signal.addEventListener('abort', () => poll.fail(signal.reason as Error), { once: true });
    });
  }

  /** Answers the poll waiting now (waits for one) with `ops`; answers that poll. */
  async deliver(ops: Operation[]): Promise<PendingPoll> {
    await until(() => this.#pending.length > 0, 'a poll');
    const poll = this.#pending[0]!;
    poll.answer(ops);
    return poll;
  }

  /** The connection drops: every waiting poll fails. */
  drop(): void {
    for (const poll of [...this.#pending]) poll.fail(new ControlPlaneUnreachable(`${poll.server}: socket hang up`));
  }

  acks(): Array<{ opId: string; ok: boolean; error?: string }> {
    return this.reports.flatMap((r) => r.body.acks ?? []);
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Waits (in real time: file writes) until `cond` holds, moving no clock. */
const until = (cond: () => boolean, what: string): Promise<void> => untilHolds(what, cond);

/**
 * Lets batches go out until a report satisfies `cond`: the fake clock moves to the next timer the
 * agent set (a batch window, a heartbeat, a backoff), a real millisecond between steps for its
 * file writes. Moving it by a fixed few milliseconds made a wait for three heartbeats thousands of
 * steps, more than a loaded machine runs in the real-time ceiling.
 */
async function reportWhere(
  t: ScriptedTransport,
  cond: (body: ReportRequest) => boolean,
  what: string,
): Promise<ReportRequest> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = t.reports.find((r) => cond(r.body));
    if (found) return found.body;
    if (Date.now() > deadline)
      throw new Error(`no report with ${what}; reports: ${JSON.stringify(t.reports.map((r) => r.body))}`);
    const next = t.timers.dues[0];
    await t.timers.advance(next === undefined ? 5 : Math.max(0, next - t.timers.clock.now()));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const ackOf = (opId: string) => (body: ReportRequest) => (body.acks ?? []).some((a) => a.opId === opId);

interface AgentSetup {
  dir?: string;
  runtime?: FakeRuntime;
  timers?: FakeTimers;
  transport?: ScriptedTransport;
  config?: Partial<AgentCoreConfig>;
  discoverCapacity?: () => Promise<HostCapacity>;
}

async function startAgent(setup: AgentSetup = {}) {
  const dir = setup.dir ?? dataDir();
  const timers = setup.timers ?? new FakeTimers();
  const transport = setup.transport ?? new ScriptedTransport(timers);
  const runtime = setup.runtime ?? new FakeRuntime();
  const logger = pino({ level: 'silent' });
  const core = new AgentCore({
    transport,
    credentials: new CredentialFile(dir),
    applied: await AppliedOperations.open(join(dir, 'applied.json'), { logger }),
    createRuntime: () => runtime,
    capacity: CAPACITY,
    discoverCapacity: setup.discoverCapacity ?? (async () => CAPACITY),
    clock: timers.clock,
    timers,
    logger,
    random: () => 0,
    config: {
      servers: ['http://cp-a.test'],
      token: TOKEN,
      name: 'gpu-07',
      publicIp: '203.0.113.7',
      portRange: [40000, 40999],
      agentVersion: 'test',
      ...setup.config,
    },
  });
  const running = core.run();
  running.catch(() => undefined);
  return { core, running, transport, timers, runtime, dir };
}

test('operations are applied in order per instance, other instances meanwhile, and each is acknowledged', async () => {
  const gate = deferred();
  const runtime = new (class extends FakeRuntime {
    override async start(s: InstanceSpec) {
      if (s.id === 'pod-a') await gate.promise;
      return super.start(s);
    }
  })();
  const { core, transport } = await startAgent({ runtime });
  const ops = [start('pod-a'), stop('pod-a'), start('pod-b')];
  await transport.deliver(ops);
  await until(() => runtime.started.includes('pod-b'), 'pod-b to start');
  await reportWhere(transport, ackOf(ops[2]!.id), "pod-b's start acknowledged");
  assert.deepEqual(runtime.stopped, [], 'the stop of pod-a waits for its start');
  assert.ok(!transport.acks().some((a) => a.opId === ops[0]!.id || a.opId === ops[1]!.id));
  gate.resolve();
  await reportWhere(transport, ackOf(ops[1]!.id), "pod-a's stop acknowledged");
  assert.deepEqual(runtime.started, ['pod-b', 'pod-a']);
  assert.deepEqual(runtime.stopped, ['pod-a']);
  assert.deepEqual(
    ops.map((op) => transport.acks().find((a) => a.opId === op.id)),
    ops.map((op) => ({ opId: op.id, ok: true })),
  );
  assert.equal(
    transport.polls.at(-1)!.after,
    ops[2]!.seq,
    'the next poll asks for what follows the last operation seen',
  );
  await core.stop();
});

test('a redelivered operation is acknowledged again but applied once', async () => {
  const { core, transport, runtime } = await startAgent();
  const ops = [start('pod-a'), stop('pod-a')];
  await transport.deliver(ops);
  await reportWhere(transport, ackOf(ops[1]!.id), 'the first acknowledgements');
  const before = transport.reports.length;
  // The acknowledgements were lost with the connection: the control plane sends both again.
  await transport.deliver(ops);
  await reportWhere(
    transport,
    (b) => transport.reports.findIndex((r) => r.body === b) >= before && ackOf(ops[1]!.id)(b),
    'the second acknowledgements',
  );
  assert.deepEqual(runtime.started, ['pod-a'], 'not started again after its stop');
  assert.deepEqual(runtime.stopped, ['pod-a']);
  for (const op of ops)
    assert.equal(transport.acks().filter((a) => a.opId === op.id && a.ok).length, 2, `${op.kind} acknowledged twice`);
  await core.stop();
});

test('operations applied before a restart are acknowledged, not applied again, by the agent restarted on the same data dir', async () => {
  const first = await startAgent();
  const ops = [start('pod-a'), start('pod-b'), stop('pod-b')];
  await first.transport.deliver(ops);
  await until(() => first.runtime.stopped.length === 1, 'the stop');
  // Killed before its acknowledgements went out: only applied.json knows.
  await until(() => {
    try {
      return JSON.parse(readFileSync(join(first.dir, 'applied.json'), 'utf8')).operations.length === 3;
    } catch {
      return false;
    }
  }, 'applied.json');
  first.transport.down.add('http://cp-a.test');
  await first.core.stop();

  const runtime = first.runtime.reopen();
  const second = await startAgent({ dir: first.dir, runtime });
  await second.transport.deliver(ops);
  await reportWhere(second.transport, ackOf(ops[2]!.id), 'the acknowledgements');
  assert.deepEqual(
    ops.map((op) => second.transport.acks().find((a) => a.opId === op.id)),
    ops.map((op) => ({ opId: op.id, ok: true })),
  );
  assert.deepEqual([runtime.started, runtime.stopped], [[], []], 'nothing started or stopped again');
  assert.equal(second.transport.joins.length, 0, 'the stored credential is used, not the token');
  const firstReport = second.transport.reports[0]!.body;
  assert.equal(firstReport.instances?.full, true);
  assert.deepEqual(
    firstReport.instances?.items.map((i) => [i.id, i.state, i.owner, i.kept ?? false]),
    [
      ['pod-a', 'running', OWNER, false],
      ['pod-b', 'exited', OWNER, true],
    ],
    'the adopted instance is in the first, full report, with its owner, and so is the one stopped and kept',
  );
  assert.deepEqual(firstReport.capacity, CAPACITY, 'a restarted agent tells its capacity once');
  await second.core.stop();
});

test('an instance the agent stopped is reported kept with the stop’s acknowledgement, never with its status from before, and in every full report until a remove', async () => {
  const { core, transport } = await startAgent();
  await reportWhere(transport, (b) => b.instances?.full === true, 'the first report');
  // Delivered together: the start's "running" is still waiting for the batch when the stop is applied.
  const ops = [start('pod-a'), stop('pod-a')];
  await transport.deliver(ops);
  const stopped = await reportWhere(transport, ackOf(ops[1]!.id), "the stop's acknowledgement");
  assert.deepEqual(
    stopped.instances?.items.filter((i) => i.id === 'pod-a'),
    [keptItem('pod-a')],
    'the report acknowledging the stop shows the instance as the stop left it',
  );

  // The connection drops: the full report that follows still lists it, kept.
  const reports = transport.reports.length;
  transport.drop();
  await transport.timers.advance(250);
  const full = await reportWhere(
    transport,
    (b) => transport.reports.findIndex((r) => r.body === b) >= reports && b.instances?.full === true,
    'a full report',
  );
  assert.deepEqual(full.instances?.items, [keptItem('pod-a')]);

  const gone = remove('pod-a');
  await transport.deliver([gone]);
  const removed = await reportWhere(transport, ackOf(gone.id), "the remove's acknowledgement");
  assert.equal(
    removed.instances?.items.some((i) => i.id === 'pod-a') ?? false,
    false,
    'a removed instance is not listed',
  );
  const after = transport.reports.length;
  transport.drop();
  await transport.timers.advance(250);
  const last = await reportWhere(
    transport,
    (b) => transport.reports.findIndex((r) => r.body === b) >= after && b.instances?.full === true,
    'the full report after the remove',
  );
  assert.deepEqual(last.instances?.items, [], 'nor in the next full report');
  await core.stop();
});

test('an instance started again after its stop is reported as it runs, not kept', async () => {
  const { core, transport } = await startAgent();
  const ops = [start('pod-a'), stop('pod-a')];
  await transport.deliver(ops);
  await reportWhere(transport, ackOf(ops[1]!.id), "the stop's acknowledgement");
  const since = transport.reports.length;
  const again = start('pod-a');
  await transport.deliver([again]);
  await reportWhere(transport, ackOf(again.id), "the second start's acknowledgement");
  const items = () => transport.reports.slice(since).flatMap((r) => r.body.instances?.items ?? []);
  await reportWhere(transport, () => items().length > 0, 'the instance reported again');
  assert.deepEqual(
    items().map((i) => [i.id, i.state, i.kept]),
    [['pod-a', 'running', undefined]],
  );
  // And so in the full report after a reconnect.
  const before = transport.reports.length;
  transport.drop();
  await transport.timers.advance(250);
  const full = await reportWhere(
    transport,
    (b) => transport.reports.findIndex((r) => r.body === b) >= before && b.instances?.full === true,
    'a full report',
  );
  assert.deepEqual(
    full.instances?.items.map((i) => [i.id, i.state, i.kept]),
    [['pod-a', 'running', undefined]],
  );
  await core.stop();
});

test('a restarted agent lists the instances stopped and kept before its restart, as kept, in its first full report', async () => {
  const first = await startAgent();
  const ops = [start('pod-a'), start('pod-b'), stop('pod-b')];
  await first.transport.deliver(ops);
  await reportWhere(first.transport, ackOf(ops[2]!.id), 'the acknowledgements');
  await first.core.stop();

  // attach() answers pod-b with status null: stopped and kept.
  const runtime = first.runtime.reopen();
  const second = await startAgent({ dir: first.dir, runtime });
  const report = await reportWhere(second.transport, (b) => b.instances?.full === true, 'the first report');
  assert.deepEqual(
    report.instances?.items.map((i) => [i.id, i.state, i.kept ?? false]),
    [
      ['pod-a', 'running', false],
      ['pod-b', 'exited', true],
    ],
  );
  assert.deepEqual(report.instances?.items[1], keptItem('pod-b'));
  await second.core.stop();
});

test('a start’s health probe reaches the runtime with its spec; a start without one starts the spec as sent', async () => {
  const { core, transport, runtime } = await startAgent();
  const health = { type: 'http', port: 8000, path: '/health', intervalMs: 200, timeoutMs: 60_000 } as const;
  const probed: Operation = { ...start('pod-a'), health } as Operation;
  const plain = start('pod-b');
  await transport.deliver([probed, plain]);
  await reportWhere(transport, () => transport.acks().length === 2, 'both acknowledgements');
  assert.deepEqual(runtime.specs.get('pod-a'), { ...spec('pod-a'), health });
  assert.deepEqual(runtime.specs.get('pod-b'), spec('pod-b'));
  await core.stop();
});

test('a start whose health probe is malformed is acknowledged not ok, saying what is wrong, and nothing starts', async () => {
  const { core, transport, runtime } = await startAgent();
  const op = {
    ...start('pod-a'),
    health: { type: 'exec', port: 8000, path: '/', intervalMs: 200, timeoutMs: 1_000 },
  } as unknown as Operation;
  await transport.deliver([op]);
  const report = await reportWhere(transport, ackOf(op.id), 'the acknowledgement');
  assert.deepEqual(report.acks, [
    { opId: op.id, ok: false, error: "the start operation's health probe type is neither http nor tcp" },
  ]);
  assert.deepEqual(runtime.started, []);
  await core.stop();
});

test('a start that fails is acknowledged not ok, with the reason', async () => {
  const { core, transport, runtime } = await startAgent();
  runtime.failStart = true;
  const op = start('pod-a');
  await transport.deliver([op]);
  const report = await reportWhere(transport, ackOf(op.id), 'the acknowledgement');
  assert.deepEqual(report.acks, [{ opId: op.id, ok: false, error: 'image not found' }]);
  await core.stop();
});

test('the first report after a (re)connect lists every instance, the others only what changed, and a reconnected poll asks from 0', async () => {
  const { core, transport, runtime } = await startAgent();
  await reportWhere(transport, (b) => b.instances?.full === true, 'the first report');
  assert.deepEqual(transport.reports[0]!.body.instances, { full: true, items: [] });
  assert.equal(transport.reports[0]!.body.capacity, undefined, 'the join carried the capacity');
  const a = start('pod-a');
  await transport.deliver([a]);
  const changed = await reportWhere(
    transport,
    (b) => b.instances?.items.some((i) => i.id === 'pod-a') ?? false,
    'the change',
  );
  assert.equal(changed.instances?.full, false);
  const b = start('pod-b', FakeRuntime.IMAGES.idle);
  await transport.deliver([b]);
  const withB = await reportWhere(transport, (r) => r.instances?.items.some((i) => i.id === 'pod-b') ?? false, 'pod-b');
  assert.deepEqual(
    withB.instances?.items.map((i) => i.id),
    ['pod-b'],
    'only the instance that changed',
  );

  // The connection drops: the next poll asks from 0, and the next report is full.
  const polls = transport.polls.length;
  transport.drop();
  await transport.timers.advance(250);
  await until(() => transport.polls.length > polls, 'the poll after the drop');
  assert.equal(transport.polls.at(-1)!.after, 0);
  const full = await reportWhere(
    transport,
    (r) => r.instances?.full === true && r.instances.items.length === 2,
    'a full report',
  );
  assert.deepEqual(full.instances?.items.map((i) => i.id).sort(), ['pod-a', 'pod-b']);
  runtime.crash('pod-a', 3, 'boom');
  const crash = await reportWhere(
    transport,
    (r) => r.instances?.items.some((i) => i.id === 'pod-a' && i.state === 'exited') ?? false,
    'the crash',
  );
  assert.deepEqual(crash.instances, {
    full: false,
    items: [
      {
        id: 'pod-a',
        owner: { kind: 'pod', accountId: 'acct1' },
        state: 'exited',
        startedAt: 0,
        exitCode: 3,
        reason: 'process exited with code 3; last output:\nboom',
      },
    ],
  });
  await core.stop();
});

test('a bare heartbeat goes out when nothing was reported for heartbeatMs; a change goes out at once, and those within the batch window after a report go together', async () => {
  const { core, transport, timers, runtime } = await startAgent();
  await until(() => transport.reports.length === 1, 'the first report');
  const t0 = transport.reports[0]!.at;
  await timers.advance(HEARTBEAT_MS - 1);
  assert.equal(transport.reports.length, 1, 'no report before the heartbeat is due');
  await timers.advance(1);
  assert.equal(transport.reports.length, 2);
  assert.deepEqual(transport.reports[1], { server: 'http://cp-a.test', body: {}, at: t0 + HEARTBEAT_MS });

  await timers.advance(1_000);
  await transport.deliver([start('pod-x')]);
  await until(() => transport.reports.length === 3, 'the change, with no wait');
  const changeAt = transport.reports[2]!.at;
  assert.equal(changeAt, t0 + HEARTBEAT_MS + 1_000, 'nothing went out in the last 20 ms: the change goes at once');
  assert.deepEqual(
    transport.reports[2]!.body.instances?.items.map((i) => [i.id, i.state]),
    [['pod-x', 'running']],
  );

  // Two more starts right after: they wait out the window that report opened, then go in one report.
  await timers.advance(5);
  await transport.deliver([start('pod-y'), start('pod-z')]);
  await until(() => runtime.started.length === 3, 'the starts');
  await timers.advance(14);
  assert.equal(transport.reports.length, 3, 'at most one report per batch window');
  await timers.advance(1);
  await until(() => transport.reports.length === 4, 'the batched changes');
  assert.equal(transport.reports[3]!.at, changeAt + 20);
  assert.deepEqual(
    transport.reports[3]!.body.instances?.items.map((i) => i.id),
    ['pod-y', 'pod-z'],
  );

  // The acknowledgements follow (each start recorded in applied.json first), one window apart at most.
  await reportWhere(transport, () => transport.acks().length === 3, 'the three acknowledgements');
  const gaps = transport.reports.slice(2).map((r, i, all) => (i === 0 ? 20 : r.at - all[i - 1]!.at));
  assert.ok(
    gaps.every((gap) => gap >= 20),
    `reports at least 20 ms apart: ${gaps.join(', ')}`,
  );
  const reports = transport.reports.length;
  const lastAt = transport.reports.at(-1)!.at;
  await timers.advance(lastAt + HEARTBEAT_MS - 1 - timers.clock.now());
  assert.equal(transport.reports.length, reports, 'the heartbeat counts from the last report');
  await timers.advance(1);
  assert.deepEqual(transport.reports[reports], { server: 'http://cp-a.test', body: {}, at: lastAt + HEARTBEAT_MS });
  await core.stop();
});

test('a server that does not answer is left for the next URL after a backoff that doubles, up to its cap', async () => {
  const timers = new FakeTimers();
  const transport = new ScriptedTransport(timers);
  const [a, b] = ['http://cp-a.test', 'http://cp-b.test'];
  transport.down.add(a);
  const { core } = await startAgent({
    timers,
    transport,
    config: { servers: [a, b], backoff: { initialMs: 250, maxMs: 1_000 } },
  });
  await until(() => transport.joins.length === 1, 'the join');
  // random() = 0: each delay is half its ceiling (250 → 125 ms).
  await timers.advance(124);
  assert.equal(transport.joins.length, 1, 'no retry before the backoff');
  await timers.advance(1);
  assert.deepEqual(
    transport.joins.map((j) => [j.server, j.at - transport.joins[0]!.at]),
    [
      [a, 0],
      [b, 125],
    ],
  );
  await until(() => transport.reports.length === 1 && transport.polls.length === 1, 'the first report and poll');
  assert.equal(transport.reports[0]!.server, b);

  // Both servers go away: the poll and the report fail together, one server move per failure.
  transport.down.add(b);
  transport.drop();
  const calls = () =>
    [
      ...transport.polls.map((p) => ({ server: p.server, at: p.at })),
      ...transport.reports.map((r) => ({ server: r.server, at: r.at })),
    ].sort((x, y) => x.at - y.at);
  const since = timers.clock.now();
  await timers.advance(2_000);
  const retries = calls().filter((c) => c.at > since);
  const distinct = [...new Map(retries.map((c) => [`${c.at}`, c])).values()];
  assert.deepEqual(
    distinct.map((c) => [c.server, c.at - since]),
    [
      [a, 125],
      [b, 125 + 250],
      [a, 125 + 250 + 500],
      [b, 125 + 250 + 500 + 500],
      [a, 125 + 250 + 500 + 500 + 500],
    ],
    'delays 125, 250, 500, then capped at 500 (half of 1000), alternating servers',
  );
  transport.down.clear();
  await timers.advance(500);
  const back = transport.reports.at(-1)!;
  assert.equal(back.body.instances?.full, true, 'the first report after the outage is full');
  await core.stop();
});

/** A runtime that notes what its container firewall is told to let through, and may have failed to install it. */
class FirewalledRuntime extends FakeRuntime {
  readonly allowed: string[][] = [];
  gaps: IsolationGap[] = [];
  async allowJobUrls(urls: readonly string[]): Promise<void> {
    this.allowed.push([...urls]);
  }
  isolationGaps(): IsolationGap[] {
    return this.gaps;
  }
}

test("containers may reach the control plane's URLs until a report's answer names its job API, then that, told again only when it changes", async () => {
  const runtime = new FirewalledRuntime();
  const { core, transport } = await startAgent({ runtime });
  await until(() => transport.reports.length >= 1, 'the first report');
  assert.deepEqual(runtime.allowed, [['http://cp-a.test']], 'before attach: the control plane itself');
  transport.jobUrl = 'http://jobs.cp-a.test:8081';
  const reports = transport.reports.length;
  // three heartbeats' worth of answers, each naming the same URL
  await reportWhere(transport, () => transport.reports.length >= reports + 3, 'three more reports');
  assert.deepEqual(runtime.allowed, [['http://cp-a.test'], ['http://jobs.cp-a.test:8081']]);
  await core.stop();
});

test('an agent whose container firewall could not be installed refuses to run, saying what to do', async () => {
  const runtime = new FirewalledRuntime();
  runtime.gaps = [
    { kind: 'firewall', detail: 'the container firewall could not be installed (iptables-save: Permission denied)' },
  ];
  const { running } = await startAgent({ runtime });
  const err = await running.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof AgentFatal, String(err));
  assert.equal(err.exitCode, 1);
  assert.match(
    err.message,
    /^refusing to run: the container firewall could not be installed \(iptables-save: Permission denied\)/,
  );
  assert.match(err.message, /CAP_NET_ADMIN/);
  assert.match(err.message, /--firewall off/);
});

test('a revoked host ends the agent with exit status 3, its instances left running', async () => {
  const { running, transport, runtime } = await startAgent();
  const op = start('pod-a');
  await transport.deliver([op]);
  await reportWhere(transport, ackOf(op.id), 'the acknowledgement');
  transport.revoked = true;
  transport.drop();
  await transport.timers.advance(250);
  const err = await running.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof AgentFatal, String(err));
  assert.equal(err.exitCode, 3);
  assert.match(err.message, /this host \(host-000000000001\) was revoked on the control plane/);
  assert.match(err.message, /credential\.json/);
  assert.deepEqual(
    (await runtime.reopen().list()).map((s) => [s.id, s.state]),
    [['pod-a', 'running']],
    'close() detached: nothing stopped',
  );
  assert.deepEqual(runtime.stopped, []);
});

test('a join token the control plane refuses ends the agent with exit status 2, the message saying what to do, and nothing stored', async () => {
  const timers = new FakeTimers();
  const transport = new ScriptedTransport(timers);
  transport.joinRefusal = new ControlPlaneRefusal(
    401,
    'JOIN_TOKEN_INVALID',
    'the join token is unknown, used or expired',
  );
  const { running, dir } = await startAgent({ timers, transport });
  const err = await running.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof AgentFatal);
  assert.equal(err.exitCode, 2);
  assert.equal(err.message, JOIN_TOKEN_INVALID_MESSAGE);
  assert.equal(await new CredentialFile(dir).load(), null);
});

test('a control plane that refuses the agent for its version ends it with exit status 2, its message passed on, and nothing stored', async () => {
  const timers = new FakeTimers();
  const transport = new ScriptedTransport(timers);
  const detail = 'This agent is version 0.1.0 and the control plane 0.3.0: … Upgrade the agent on the host: curl …';
  transport.joinRefusal = new ControlPlaneRefusal(409, 'AGENT_VERSION_UNSUPPORTED', detail);
  const { running, dir } = await startAgent({ timers, transport });
  const err = await running.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof AgentFatal);
  assert.equal(err.exitCode, 2);
  assert.ok(err.message.includes(detail) && err.message.includes('AGENT_VERSION_UNSUPPORTED'), err.message);
  assert.equal(transport.joins.length, 1, 'not retried');
  assert.equal(await new CredentialFile(dir).load(), null);
});

test('the join carries the capacity and where the host is; the answer is stored as the credential', async () => {
  const { core, transport, dir } = await startAgent();
  await until(() => transport.reports.length === 1, 'the first report');
  assert.deepEqual(transport.joins[0]!.body, {
    token: TOKEN,
    name: 'gpu-07',
    publicIp: '203.0.113.7',
    portRange: [40000, 40999],
    agentVersion: 'test',
    capacity: CAPACITY,
  });
  const stored = await new CredentialFile(dir).load();
  assert.deepEqual({ ...stored, joinedAt: undefined }, { ...JOINED, joinedAt: undefined });
  await core.stop();
});

test('capacity discovered again is reported when it differs, and only then', async () => {
  let capacity = CAPACITY;
  let discoveries = 0;
  const { core, transport, timers } = await startAgent({
    discoverCapacity: async () => {
      discoveries += 1;
      return capacity;
    },
    config: { capacityIntervalMs: 60_000 },
  });
  await until(() => transport.reports.length === 1, 'the first report');
  await timers.advance(60_000);
  assert.equal(discoveries, 1);
  assert.ok(
    transport.reports.every((r) => r.body.capacity === undefined),
    'the same capacity is not reported',
  );
  capacity = { ...CAPACITY, gpus: [], cudaVersion: null, notes: ['nvidia-smi failed'] };
  await timers.advance(60_000);
  const report = await reportWhere(transport, (r) => r.capacity !== undefined, 'the new capacity');
  assert.deepEqual(report.capacity, capacity);
  await core.stop();
});

test('stop waits for the operation under way, sends its acknowledgement in a last report, and detaches the runtime', async () => {
  const gate = deferred();
  let closed = false;
  const runtime = new (class extends FakeRuntime {
    override async start(s: InstanceSpec) {
      await gate.promise;
      return super.start(s);
    }
    override async close() {
      closed = true;
      return super.close();
    }
  })();
  const { core, transport, running } = await startAgent({ runtime });
  const op = start('pod-a');
  await transport.deliver([op]);
  await until(() => transport.reports.length === 1, 'the first report');
  const stopped = core.stop();
  await settle();
  assert.equal(closed, false, 'the runtime stays open while the start runs');
  const polls = transport.polls.length;
  gate.resolve();
  await stopped;
  await running;
  assert.equal(transport.polls.length, polls, 'no poll after stop');
  assert.deepEqual(transport.reports.at(-1)!.body.acks, [{ opId: op.id, ok: true }]);
  assert.equal(closed, true);
  assert.deepEqual(runtime.stopped, [], 'containers keep running');
});
