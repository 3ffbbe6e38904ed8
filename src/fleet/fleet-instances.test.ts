import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InstanceStatus } from '../runtime/runtime.js';
import { FleetInstances, type Tracked } from './fleet-instances.js';

const tracked = (id: string, hostId: string, state: InstanceStatus['state']): Tracked => ({
  id,
  hostId,
  owner: { kind: 'pod', accountId: 'a' },
  starting: false,
  status: { id, state, startedAt: 1, exitCode: null, reason: null, stats: null },
});

test('a host going away is told for each of its live instances, as unknown with why, and for none of the others', () => {
  const table = new FleetInstances();
  const heard: string[] = [];
  table.onChange((s) => heard.push(`${s.id} ${s.state}${s.reason ? ` (${s.reason})` : ''}`));
  for (const t of [
    tracked('live-a', 'h1', 'running'),
    tracked('done-a', 'h1', 'exited'),
    tracked('live-b', 'h2', 'running'),
  ])
    table.track(t);
  const host = table.host('h1');
  table.changeHost(host, () => (host.downSince = Date.UTC(2026, 0, 1)));
  assert.deepEqual(heard, ['live-a unknown (host h1 unreachable since 2026-01-01T00:00:00.000Z)']);
  assert.equal(table.visible(table.tracked.get('live-a')!).state, 'unknown');
  assert.equal(table.tracked.get('live-a')!.status.state, 'running', 'what the host said is kept beneath');
  table.changeHost(host, () => (host.downSince = null));
  assert.deepEqual(heard.at(-1), 'live-a running');
});

test('an update that changes nothing callers see tells nobody; a listener that throws stops no other', () => {
  const table = new FleetInstances();
  const heard: string[] = [];
  table.onChange(() => {
    throw new Error('a listener bug');
  });
  table.onChange((s) => heard.push(s.state));
  const t = tracked('p', 'h1', 'running');
  table.track(t);
  table.update(t, { ...t.status, stats: { cpuUtil: 5, memoryUtil: 5, memoryBytes: 1 } });
  assert.deepEqual(heard, []);
  table.update(t, { ...t.status, state: 'exited', exitCode: 0 });
  assert.deepEqual(heard, ['exited']);
  assert.equal(table.hostIdOf('p'), 'h1');
  table.untrack(t);
  assert.equal(table.hostIdOf('p'), undefined);
});
