import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../domain/errors.js';
import { LogStreamSlots } from './log-stream-slots.js';

test('an account takes slots up to its cap, each account its own; the next is a 429 with Retry-After', () => {
  const slots = new LogStreamSlots(2);
  slots.take('a');
  slots.take('a');
  slots.take('b');
  assert.throws(
    () => slots.take('a'),
    (err: unknown) =>
      err instanceof ApiError &&
      err.status === 429 &&
      err.code === 'TOO_MANY_LOG_STREAMS' &&
      err.headers?.['Retry-After'] === '5' &&
      /holds 2 open log streams.*quotas\.logStreams = 2/.test(err.detail),
  );
  assert.equal(slots.held('a'), 2);
  assert.equal(slots.held('b'), 1);
});

test('a slot released twice frees one slot only', () => {
  const slots = new LogStreamSlots(2);
  const first = slots.take('a');
  slots.take('a');
  first.release();
  first.release();
  assert.equal(slots.held('a'), 1);
  slots.take('a');
  assert.throws(() => slots.take('a'), ApiError);
});
