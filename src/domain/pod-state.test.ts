import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DESIRED_STATUSES,
  LIVE_POD_STATUSES,
  POD_ACTIONS,
  POD_STATUSES,
  STOPPED_POD_STATUSES,
  actionsFor,
  decideAction,
  isLivePodStatus,
  nextPodState,
  type PodStatus,
} from './pod-state.js';

test('actions per status follow the design: RUNNING stop/restart/terminate, EXITED and ERROR start/terminate, PROVISIONING and STARTING stop/terminate, TERMINATED none', () => {
  const expected: Record<PodStatus, string[]> = {
    RUNNING: ['stop', 'restart', 'terminate'],
    EXITED: ['start', 'terminate'],
    ERROR: ['start', 'terminate'],
    PROVISIONING: ['stop', 'terminate'],
    STARTING: ['stop', 'terminate'],
    TERMINATED: [],
  };
  for (const status of POD_STATUSES) assert.deepEqual(actionsFor(status, false), expected[status], status);
});

test('a locked pod lists neither stop nor restart', () => {
  assert.deepEqual(actionsFor('RUNNING', true), ['terminate']);
  assert.deepEqual(actionsFor('STARTING', true), ['terminate']);
  assert.deepEqual(actionsFor('EXITED', true), ['start', 'terminate']);
});

test('every action not listed for a status is refused as INVALID_STATE, and the listed ones are accepted', () => {
  for (const status of POD_STATUSES) {
    for (const action of POD_ACTIONS) {
      const d = decideAction(status, false, action);
      assert.equal(d.ok, actionsFor(status, false).includes(action), `${status} ${action}`);
      if (!d.ok) assert.equal(d.code, 'INVALID_STATE');
    }
  }
});

test('a locked pod refuses stop and restart with POD_LOCKED but can be terminated', () => {
  const stop = decideAction('RUNNING', true, 'stop');
  assert.equal(stop.ok, false);
  assert.equal(!stop.ok && stop.code, 'POD_LOCKED');
  const restart = decideAction('RUNNING', true, 'restart');
  assert.equal(!restart.ok && restart.code, 'POD_LOCKED');
  const terminate = decideAction('RUNNING', true, 'terminate');
  assert.deepEqual(terminate, { ok: true, status: 'TERMINATED', desired: 'TERMINATED' });
});

test('accepted actions set the next status and the desired status', () => {
  assert.deepEqual(decideAction('EXITED', false, 'start'), { ok: true, status: 'PROVISIONING', desired: 'RUNNING' });
  assert.deepEqual(decideAction('RUNNING', false, 'stop'), { ok: true, status: 'EXITED', desired: 'EXITED' });
  assert.deepEqual(decideAction('RUNNING', false, 'restart'), { ok: true, status: 'STARTING', desired: 'RUNNING' });
});

test('automatic moves go PROVISIONING → STARTING → RUNNING, and a live pod moves to EXITED or ERROR with the reason', () => {
  assert.deepEqual(nextPodState('PROVISIONING', { type: 'prepared' }), { ok: true, status: 'STARTING', reason: null });
  assert.deepEqual(nextPodState('STARTING', { type: 'ready' }), { ok: true, status: 'RUNNING', reason: null });
  assert.deepEqual(nextPodState('RUNNING', { type: 'exited', reason: 'exit code 3' }), {
    ok: true,
    status: 'EXITED',
    reason: 'exit code 3',
  });
  assert.deepEqual(nextPodState('STARTING', { type: 'failed', reason: 'spawn ENOENT' }), {
    ok: true,
    status: 'ERROR',
    reason: 'spawn ENOENT',
  });
});

test('events that do not apply to the status are refused, so a late event cannot revive a stopped pod', () => {
  assert.equal(nextPodState('EXITED', { type: 'ready' }).ok, false);
  assert.equal(nextPodState('TERMINATED', { type: 'exited', reason: 'x' }).ok, false);
  assert.equal(nextPodState('RUNNING', { type: 'prepared' }).ok, false);
  assert.equal(nextPodState('ERROR', { type: 'failed', reason: 'x' }).ok, false);
});

test('the live statuses are those an instance exiting or failing moves; the stopped ones are the rest', () => {
  const moved = POD_STATUSES.filter((s) => nextPodState(s, { type: 'failed', reason: 'x' }).ok);
  assert.deepEqual([...LIVE_POD_STATUSES], moved);
  assert.deepEqual(
    [...STOPPED_POD_STATUSES],
    POD_STATUSES.filter((s) => !isLivePodStatus(s)),
  );
  const desired = new Set<string>();
  for (const s of POD_STATUSES)
    for (const a of POD_ACTIONS) {
      const d = decideAction(s, false, a);
      if (d.ok) desired.add(d.desired);
    }
  assert.deepEqual([...desired].sort(), [...DESIRED_STATUSES].sort(), 'the desired statuses are those actions ask for');
});
