import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_SCALE_CONFIG,
  HEALTHY,
  decideScale,
  isBackedOff,
  recordWorkerEnd,
  recordWorkerHealthy,
  type CrashState,
  type ScaleQueue,
  type ScaleSettings,
  type ScaleWorker,
} from './autoscale.js';

const NOW = 1_767_225_600_000;
const S = 1_000;
const settings = (patch: Partial<ScaleSettings> = {}): ScaleSettings => ({
  workersMin: 0,
  workersMax: 3,
  scalerType: 'QUEUE_DELAY',
  scalerValue: 4,
  idleTimeout: 5,
  ...patch,
});
const queue = (patch: Partial<ScaleQueue> = {}): ScaleQueue => ({
  inQueue: 0,
  inQueueLowPriority: 0,
  inProgress: 0,
  oldestUrgentQueuedAt: null,
  ...patch,
});
let n = 0;
const worker = (state: ScaleWorker['state'], patch: Partial<ScaleWorker> = {}): ScaleWorker => ({
  id: `w${++n}`,
  state,
  startedAt: NOW - 60 * S,
  lastActiveAt: NOW,
  ...patch,
});
const decide = (s: ScaleSettings, q: ScaleQueue, w: ScaleWorker[] = [], crash: CrashState = HEALTHY, now = NOW) =>
  decideScale(s, q, w, crash, now, DEFAULT_SCALE_CONFIG);
const stopped = (d: ReturnType<typeof decide>) => d.stop.map((x) => x.id).sort();

test('workersMin workers are kept warm with an empty queue', () => {
  assert.equal(decide(settings({ workersMin: 2 }), queue()).start, 2);
  assert.equal(decide(settings({ workersMin: 2 }), queue(), [worker('idle')]).start, 1);
});

test('an endpoint with no jobs and workersMin 0 starts nothing (scale to zero)', () => {
  assert.deepEqual(decide(settings(), queue()), { start: 0, stop: [], desired: 0, heldBack: 0, reasons: [] });
});

test('a queued job with no worker up starts one at once, before the queue delay passes', () => {
  for (const scalerType of ['QUEUE_DELAY', 'REQUEST_COUNT'] as const) {
    const d = decide(settings({ scalerType, scalerValue: 10 }), queue({ inQueue: 1, oldestUrgentQueuedAt: NOW }));
    assert.equal(d.start, 1, scalerType);
  }
});

test('low-priority queued jobs never start a worker', () => {
  assert.equal(decide(settings(), queue({ inQueue: 5, inQueueLowPriority: 5, oldestUrgentQueuedAt: null })).start, 0);
  assert.equal(
    decide(settings({ scalerType: 'REQUEST_COUNT', scalerValue: 1 }), queue({ inQueue: 5, inQueueLowPriority: 5 }), [
      worker('running'),
    ]).start,
    0,
  );
});

test('QUEUE_DELAY adds one worker while the oldest queued job has waited longer than scalerValue seconds', () => {
  const busy = [worker('running'), worker('running')];
  assert.equal(
    decide(settings({ scalerValue: 4 }), queue({ inQueue: 3, oldestUrgentQueuedAt: NOW - 4 * S }), busy).start,
    0,
    'exactly the delay is not over it',
  );
  const d = decide(settings({ scalerValue: 4 }), queue({ inQueue: 3, oldestUrgentQueuedAt: NOW - 4 * S - 1 }), busy);
  assert.equal(d.start, 1);
  assert.match(d.reasons.join('\n'), /waited 4001 ms > 4 s/);
});

test('QUEUE_DELAY adds no second worker while one is still starting', () => {
  const d = decide(settings({ scalerValue: 1 }), queue({ inQueue: 9, oldestUrgentQueuedAt: NOW - 60 * S }), [
    worker('running'),
    worker('initializing', { startedAt: NOW - S }),
  ]);
  assert.equal(d.start, 0);
});

test('REQUEST_COUNT wants ceil((queued + in progress) / scalerValue) workers', () => {
  const s = settings({ scalerType: 'REQUEST_COUNT', scalerValue: 2, workersMax: 10 });
  assert.equal(
    decide(s, queue({ inQueue: 4, inProgress: 1, oldestUrgentQueuedAt: NOW }), [worker('running')]).start,
    2,
  );
  assert.equal(
    decide(s, queue({ inQueue: 4, inQueueLowPriority: 3, inProgress: 1, oldestUrgentQueuedAt: NOW }), [
      worker('running'),
    ]).start,
    0,
  );
});

test('never more than workersMax workers are started', () => {
  const s = settings({ scalerType: 'REQUEST_COUNT', scalerValue: 1, workersMax: 2 });
  const d = decide(s, queue({ inQueue: 50, oldestUrgentQueuedAt: NOW }));
  assert.equal(d.start, 2);
  assert.equal(decide(s, queue({ inQueue: 50 }), [worker('running'), worker('running')]).start, 0);
  assert.equal(decide(settings({ workersMax: 0 }), queue({ inQueue: 1, oldestUrgentQueuedAt: NOW - 60 * S })).start, 0);
});

test('workersMin above workersMax keeps workersMax', () => {
  assert.equal(decide(settings({ workersMin: 5, workersMax: 2 }), queue()).start, 2);
});

test('a worker idle for idleTimeout seconds stops; one idle for less stays', () => {
  const old = worker('idle', { lastActiveAt: NOW - 5 * S });
  const fresh = worker('idle', { lastActiveAt: NOW - 5 * S + 1 });
  const d = decide(settings({ idleTimeout: 5 }), queue(), [old, fresh]);
  assert.deepEqual(d.stop, [{ id: old.id, reason: 'idle' }]);
  assert.equal(d.start, 0);
});

test('idle workers never stop below workersMin, longest idle first', () => {
  const a = worker('idle', { lastActiveAt: NOW - 100 * S });
  const b = worker('idle', { lastActiveAt: NOW - 50 * S });
  const c = worker('idle', { lastActiveAt: NOW - 70 * S });
  const d = decide(settings({ workersMin: 1 }), queue(), [a, b, c]);
  assert.deepEqual(stopped(d), [a.id, c.id].sort());
  assert.equal(d.start, 0);
});

test('idle workers do not stop while jobs are queued, even low-priority ones', () => {
  const idle = worker('idle', { lastActiveAt: NOW - 100 * S });
  assert.deepEqual(decide(settings(), queue({ inQueue: 1, inQueueLowPriority: 1 }), [idle]).stop, []);
});

test('a busy worker is never stopped for idleness', () => {
  assert.deepEqual(
    decide(settings({ idleTimeout: 0 }), queue({ inProgress: 1 }), [worker('running', { lastActiveAt: NOW - 999 * S })])
      .stop,
    [],
  );
});

test('REQUEST_COUNT keeps the idle workers its target still needs', () => {
  const s = settings({ scalerType: 'REQUEST_COUNT', scalerValue: 1, idleTimeout: 0 });
  const d = decide(s, queue({ inProgress: 2 }), [
    worker('running'),
    worker('running'),
    worker('idle', { lastActiveAt: NOW - S }),
    worker('idle', { lastActiveAt: NOW - 2 * S }),
  ]);
  assert.equal(d.stop.length, 2, 'both idle workers are above the target of 2');
});

test('with workersMax lowered, starting and idle workers above it stop; busy ones are left to finish', () => {
  const busy1 = worker('running');
  const busy2 = worker('running');
  const idle = worker('idle');
  const init = worker('initializing', { startedAt: NOW - S });
  const d = decide(settings({ workersMax: 1 }), queue({ inProgress: 2 }), [busy1, busy2, idle, init]);
  assert.deepEqual(stopped(d), [idle.id, init.id].sort());
  assert.ok(d.stop.every((s) => s.reason === 'over-max'));
});

test('a worker that asked to be recycled stops once it holds no job and is replaced when still needed', () => {
  const r = worker('idle', { recycle: true });
  const d = decide(settings({ workersMin: 1 }), queue(), [r]);
  assert.deepEqual(d.stop, [{ id: r.id, reason: 'recycle' }]);
  assert.equal(d.start, 1);
  assert.deepEqual(
    decide(settings({ workersMin: 1 }), queue({ inProgress: 1 }), [worker('running', { recycle: true })]).stop,
    [],
  );
});

test('a worker still initializing after startTimeoutMs is stopped', () => {
  const stuck = worker('initializing', { startedAt: NOW - DEFAULT_SCALE_CONFIG.startTimeoutMs });
  const d = decide(settings(), queue({ inQueue: 1, oldestUrgentQueuedAt: NOW }), [stuck]);
  assert.deepEqual(d.stop, [{ id: stuck.id, reason: 'start-timeout' }]);
  assert.equal(d.start, 1);
});

test('crashes below the threshold do not back off; the threshold-th crash does, for backoffBaseMs', () => {
  let crash: CrashState = HEALTHY;
  const end = (at: number) => ({ startedAt: at - 2 * S, endedAt: at, reason: 'exit 1' });
  crash = recordWorkerEnd(crash, end(NOW));
  crash = recordWorkerEnd(crash, end(NOW));
  assert.equal(crash.consecutive, 2);
  assert.equal(isBackedOff(crash, NOW), false);
  crash = recordWorkerEnd(crash, end(NOW));
  assert.equal(crash.backoffUntil, NOW + DEFAULT_SCALE_CONFIG.backoffBaseMs);
  assert.equal(isBackedOff(crash, NOW + DEFAULT_SCALE_CONFIG.backoffBaseMs - 1), true);
  assert.equal(isBackedOff(crash, NOW + DEFAULT_SCALE_CONFIG.backoffBaseMs), false);
});

test('each further crash doubles the back-off, up to backoffMaxMs', () => {
  let crash: CrashState = HEALTHY;
  const delays: number[] = [];
  for (let i = 0; i < 12; i++) {
    crash = recordWorkerEnd(crash, { startedAt: NOW, endedAt: NOW + S, reason: 'exit 1' });
    if (crash.backoffUntil !== null) delays.push(crash.backoffUntil - (NOW + S));
  }
  assert.deepEqual(delays.slice(0, 6), [10_000, 20_000, 40_000, 80_000, 160_000, 300_000]);
  assert.ok(delays.every((d) => d <= DEFAULT_SCALE_CONFIG.backoffMaxMs));
});

test('a worker that ends after the crash window is not a crash', () => {
  const crash = recordWorkerEnd(HEALTHY, {
    startedAt: NOW,
    endedAt: NOW + DEFAULT_SCALE_CONFIG.crashWindowMs + 1,
    reason: 'exit 0',
  });
  assert.equal(crash, HEALTHY);
});

test('a worker taking a job resets the crash count and ends the back-off', () => {
  const crash: CrashState = { consecutive: 5, backoffUntil: NOW + 60 * S, lastReason: 'x' };
  assert.deepEqual(recordWorkerHealthy(crash), HEALTHY);
});

test('a backed-off endpoint starts nothing, not even for workersMin, and says how many starts it held back', () => {
  const crash: CrashState = { consecutive: 3, backoffUntil: NOW + 10 * S, lastReason: 'exit 1' };
  const d = decide(settings({ workersMin: 1 }), queue({ inQueue: 2, oldestUrgentQueuedAt: NOW - 60 * S }), [], crash);
  assert.equal(d.start, 0);
  assert.equal(d.heldBack, 1);
  assert.match(d.reasons.join('\n'), /crash-looping/);
  assert.equal(
    decide(settings({ workersMin: 1 }), queue(), [], crash, NOW + 10 * S).start,
    1,
    'once the back-off ends it tries again',
  );
});

test('a crash-looping endpoint is retried at most once per back-off period, never in a hot loop', () => {
  // Simulate one decision per second for 10 minutes with a worker that always dies 1 s after start.
  let crash: CrashState = HEALTHY;
  let starts = 0;
  for (let t = 0; t < 600; t++) {
    const now = NOW + t * S;
    const d = decide(settings({ workersMin: 1 }), queue(), [], crash, now);
    starts += d.start;
    for (let i = 0; i < d.start; i++)
      crash = recordWorkerEnd(crash, { startedAt: now, endedAt: now + S, reason: 'exit 1' });
  }
  // 3 before the first back-off, then 10 s, 20 s, 40 s, 80 s, 160 s, 300 s back-offs: ~9 starts, far from 600.
  assert.ok(starts <= 10, `started ${starts} times`);
});

test('decisions are deterministic: the same inputs give the same answer', () => {
  const ws = [
    worker('idle', { lastActiveAt: NOW - 10 * S }),
    worker('idle', { lastActiveAt: NOW - 10 * S }),
    worker('running'),
  ];
  const a = decide(settings({ workersMax: 2 }), queue(), ws);
  const b = decide(settings({ workersMax: 2 }), queue(), [...ws].reverse());
  assert.deepEqual(stopped(a), stopped(b));
});

test('property: for random inputs the result never exceeds workersMax nor stops a busy worker for idleness', () => {
  let seed = 42;
  const rnd = (k: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % k;
  };
  for (let i = 0; i < 2_000; i++) {
    const s = settings({
      workersMin: rnd(4),
      workersMax: rnd(6),
      scalerType: rnd(2) ? 'QUEUE_DELAY' : 'REQUEST_COUNT',
      scalerValue: 1 + rnd(5),
      idleTimeout: rnd(10),
    });
    const ws = Array.from({ length: rnd(7) }, () =>
      worker((['initializing', 'idle', 'running'] as const)[rnd(3)]!, {
        lastActiveAt: NOW - rnd(20) * S,
        startedAt: NOW - rnd(20) * S,
      }),
    );
    const inQueue = rnd(10);
    const q = queue({
      inQueue,
      inQueueLowPriority: rnd(inQueue + 1),
      inProgress: rnd(5),
      oldestUrgentQueuedAt: NOW - rnd(20) * S,
    });
    const d = decide(s, q, ws);
    const after = ws.length - d.stop.length + d.start;
    assert.ok(
      d.start === 0 || after <= Math.max(s.workersMax, 0),
      `start over max: ${JSON.stringify({ s, d, n: ws.length })}`,
    );
    for (const x of d.stop) if (x.reason === 'idle') assert.notEqual(ws.find((w) => w.id === x.id)?.state, 'running');
    const idleStops = d.stop.filter((x) => x.reason === 'idle').length;
    if (idleStops > 0)
      assert.ok(
        ws.length - d.stop.length >= Math.min(s.workersMin, s.workersMax),
        'never below workersMin by idleness',
      );
  }
});
