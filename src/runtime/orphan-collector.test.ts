import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { FakeClock } from '../domain/clock.js';
import { FakeRuntime } from '../../test/support/fake-runtime/fake-runtime.js';
import type { AttachedInstance } from './runtime.js';
import { OrphanCollector } from './orphan-collector.js';

const GRACE = 60_000;
const found = (id: string, kind: 'pod' | 'worker' = 'pod'): AttachedInstance => ({
  id,
  owner: { kind, accountId: 'acct1' },
  status: { id, state: 'running', startedAt: 0, exitCode: null, reason: null, stats: null },
});

function collector(claims: Set<string>, runtime = new FakeRuntime()) {
  const clock = new FakeClock(1_000_000);
  const asked: string[][] = [];
  const orphans = new OrphanCollector({
    runtime,
    clock,
    logger: pino({ level: 'silent' }),
    claimed: async (ids) => (asked.push([...ids]), new Set(ids.filter((id) => claims.has(id)))),
    config: { graceMs: GRACE },
  });
  return { orphans, clock, runtime, asked };
}

test('an instance no service claims is removed once the grace has passed on the clock, and not before', async () => {
  const { orphans, clock, runtime, asked } = collector(new Set());
  orphans.watch([found('gone-pod'), found('gone-worker', 'worker')]);
  try {
    clock.advance(GRACE - 1);
    assert.deepEqual(await orphans.collect(), []);
    assert.deepEqual(runtime.removed, []);
    assert.deepEqual(asked, [], 'claims are not even read before the grace has passed');
    clock.advance(1);
    assert.deepEqual((await orphans.collect()).sort(), ['gone-pod', 'gone-worker']);
    assert.deepEqual(runtime.removed.sort(), ['gone-pod', 'gone-worker']);
    assert.deepEqual(orphans.pending, []);
  } finally {
    await orphans.stop();
  }
});

test('a claimed instance is never removed and is forgotten once its claim was read', async () => {
  const claims = new Set(['pod-1']);
  const { orphans, clock, runtime } = collector(claims);
  orphans.watch([found('pod-1'), found('stray')]);
  try {
    clock.advance(GRACE);
    assert.deepEqual(await orphans.collect(), ['stray']);
    assert.deepEqual(runtime.removed, ['stray']);
    assert.deepEqual(orphans.pending, []);
    claims.delete('pod-1');
    clock.advance(GRACE);
    assert.deepEqual(await orphans.collect(), [], 'a claim read once makes the instance its service’s');
  } finally {
    await orphans.stop();
  }
});

test('a claim written during the grace period saves the instance', async () => {
  const claims = new Set<string>();
  const { orphans, clock, runtime } = collector(claims);
  orphans.watch([found('late')]);
  try {
    clock.advance(GRACE / 2);
    claims.add('late');
    clock.advance(GRACE / 2);
    assert.deepEqual(await orphans.collect(), []);
    assert.deepEqual(runtime.removed, []);
  } finally {
    await orphans.stop();
  }
});

test('an orphan whose removal fails stays pending and is removed at a later collection', async () => {
  const runtime = new FakeRuntime();
  const remove = runtime.remove.bind(runtime);
  let engineAway = true;
  runtime.remove = async (id) => {
    if (engineAway) throw new Error('engine unreachable');
    return remove(id);
  };
  const { orphans, clock } = collector(new Set(), runtime);
  orphans.watch([found('stray')]);
  try {
    clock.advance(GRACE);
    assert.deepEqual(await orphans.collect(), []);
    assert.deepEqual(orphans.pending, ['stray']);
    engineAway = false;
    assert.deepEqual(await orphans.collect(), ['stray']);
    assert.deepEqual(runtime.removed, ['stray']);
  } finally {
    await orphans.stop();
  }
});
