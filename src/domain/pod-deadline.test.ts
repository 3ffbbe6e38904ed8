import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from './errors.js';
import { deadlineOf, dueAction } from './pod-deadline.js';

const NOW = Date.parse('2026-07-01T10:00:00Z');

test('RFC 3339 times in the future are kept as instants, with Z or an offset; empty strings ask for none', () => {
  assert.deepEqual(
    deadlineOf({ stopAfter: '2026-07-01T11:00:00Z', terminateAfter: '2026-07-01T14:00:00+02:00' }, NOW),
    {
      stopAfter: Date.parse('2026-07-01T11:00:00Z'),
      terminateAfter: Date.parse('2026-07-01T12:00:00Z'),
    },
  );
  assert.deepEqual(deadlineOf({ stopAfter: '2026-07-01T10:00:00.5Z' }, NOW), {
    stopAfter: NOW + 500,
    terminateAfter: null,
  });
  assert.equal(deadlineOf({ stopAfter: '', terminateAfter: '  ' }, NOW), null);
  assert.equal(deadlineOf({}, NOW), null);
});

test('a time that is not a date-time with a zone, or not after now, or a century away, is refused naming the field', () => {
  const refusal = (input: { stopAfter?: string; terminateAfter?: string }) => {
    try {
      deadlineOf(input, NOW);
    } catch (err) {
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, 'BAD_REQUEST');
      return err.detail;
    }
    assert.fail(`${JSON.stringify(input)} was accepted`);
  };
  assert.match(refusal({ stopAfter: 'tomorrow' }), /^stopAfter "tomorrow" is not a date-time/);
  assert.match(refusal({ stopAfter: '2026-07-01T11:00:00' }), /is not a date-time/, 'no zone');
  assert.match(refusal({ terminateAfter: '2026-02-30T11:00:00Z' }), /^terminateAfter "2026-02-30T11:00:00Z"/);
  assert.match(
    refusal({ stopAfter: '2026-07-01T10:00:00Z' }),
    /^stopAfter 2026-07-01T10:00:00.000Z is not in the future/,
  );
  assert.match(refusal({ terminateAfter: '2200-01-01T00:00:00Z' }), /more than 100 years ahead/);
});

test('termination is due from its time on and wins over a stop due too; nothing is due before', () => {
  const deadline = { stopAfter: NOW + 1000, terminateAfter: NOW + 2000 };
  assert.equal(dueAction(deadline, NOW + 999), null);
  assert.equal(dueAction(deadline, NOW + 1000), 'stop');
  assert.equal(dueAction(deadline, NOW + 2000), 'terminate');
  assert.equal(dueAction({ stopAfter: null, terminateAfter: NOW }, NOW), 'terminate');
  assert.equal(dueAction({ stopAfter: null, terminateAfter: null }, NOW), null);
});
