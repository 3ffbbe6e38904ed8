import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AttachedInstance, InstanceState } from '../runtime/runtime.js';
import { AttachedInstances } from './attached-instances.js';

const status = (id: string, state: InstanceState) => ({
  id,
  state,
  startedAt: 1,
  exitCode: null,
  reason: null,
  stats: null,
});

const found: AttachedInstance[] = [
  { id: 'pod1', owner: { kind: 'pod', accountId: 'a' }, status: status('pod1', 'running') },
  { id: 'pod2', owner: { kind: 'pod', accountId: 'a' }, status: null },
  { id: 'pod3', owner: null, status: status('pod3', 'unknown') },
  { id: 'w1', owner: { kind: 'worker', accountId: 'a', endpointId: 'ep1' }, status: status('w1', 'starting') },
  { id: 'w2', owner: { kind: 'worker', accountId: 'a', endpointId: 'ep1' }, status: status('w2', 'exited') },
  { id: 'w3', owner: { kind: 'worker', accountId: 'a', endpointId: 'ep1' }, status: status('w3', 'suspended') },
];

test('an instance found running, starting, suspended or unseen is claimed by its kind, and an unlabelled one by anyone', () => {
  const attached = new AttachedInstances(found);
  assert.deepEqual(attached.claim('pod1', { kind: 'pod' }), { ok: true, status: found[0]!.status });
  assert.equal(attached.claim('pod3', { kind: 'pod' }).ok, true, 'its engine cannot see it: it may run on');
  assert.equal(attached.claim('w1', { kind: 'worker', endpointId: 'ep1' }).ok, true);
  assert.deepEqual(
    attached.claim('w3', { kind: 'worker', endpointId: 'ep1' }),
    { ok: true, status: found[5]!.status },
    'a suspended worker (a paused container) is adopted as suspended, not restarted',
  );
});

test('an instance of another kind or another endpoint, a stopped or ended one, and one not found are not claimed, each saying why', () => {
  const attached = new AttachedInstances(found);
  const why = (id: string, owner: { kind: 'pod' | 'worker'; endpointId?: string }) => {
    const claim = attached.claim(id, owner);
    return claim.ok ? null : claim.reason;
  };
  assert.equal(why('pod1', { kind: 'worker', endpointId: 'ep1' }), 'its instance belongs to something else');
  assert.equal(why('w1', { kind: 'worker', endpointId: 'ep2' }), 'its instance belongs to something else');
  assert.equal(why('pod2', { kind: 'pod' }), 'its instance no longer runs');
  assert.equal(why('w2', { kind: 'worker', endpointId: 'ep1' }), 'its instance no longer runs');
  assert.equal(why('nothing', { kind: 'pod' }), 'the runtime found no instance of it');
  assert.equal(attached.has('pod2'), true, 'a stopped instance was still found');
});
