import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../domain/errors.js';
import { bucketStart, MAX_BUCKETS, nextBucket, resolveWindow, rfc3339 } from './billing-window.js';

const at = (iso: string): number => Date.parse(iso);
const span = (w: { start: number; end: number }) => [rfc3339(w.start), rfc3339(w.end)];
const NOW = at('2026-06-17T15:42:10.250Z'); // a Wednesday

const refused = (fn: () => unknown, detail: RegExp) =>
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'INVALID_PARAMETER');
    assert.match(err.detail, detail);
    return true;
  });

describe('bucket boundaries', () => {
  test('an hour bucket starts on the hour and a day bucket at midnight UTC', () => {
    assert.equal(rfc3339(bucketStart(NOW, 'hour')), '2026-06-17T15:00:00Z');
    assert.equal(rfc3339(bucketStart(NOW, 'day')), '2026-06-17T00:00:00Z');
  });

  test('a week bucket starts on Monday midnight UTC, also for a Sunday and for a Monday itself', () => {
    assert.equal(rfc3339(bucketStart(NOW, 'week')), '2026-06-15T00:00:00Z');
    assert.equal(rfc3339(bucketStart(at('2026-06-21T23:59:59Z'), 'week')), '2026-06-15T00:00:00Z');
    assert.equal(rfc3339(bucketStart(at('2026-06-22T00:00:00Z'), 'week')), '2026-06-22T00:00:00Z');
    assert.equal(rfc3339(bucketStart(at('1969-12-31T12:00:00Z'), 'week')), '1969-12-29T00:00:00Z');
  });

  test('a month bucket runs from the first of the month to the first of the next, whatever its length', () => {
    assert.equal(rfc3339(bucketStart(NOW, 'month')), '2026-06-01T00:00:00Z');
    assert.equal(rfc3339(nextBucket(at('2026-02-01T00:00:00Z'), 'month')), '2026-03-01T00:00:00Z');
    assert.equal(rfc3339(nextBucket(at('2026-12-01T00:00:00Z'), 'month')), '2027-01-01T00:00:00Z');
  });

  test('a year bucket runs from January 1st to the next January 1st', () => {
    assert.equal(rfc3339(bucketStart(NOW, 'year')), '2026-01-01T00:00:00Z');
    assert.equal(rfc3339(nextBucket(at('2026-01-01T00:00:00Z'), 'year')), '2027-01-01T00:00:00Z');
  });
});

describe('resolving the window', () => {
  test('without parameters the window is the last 30 days by day, snapped to midnights, ending with the current day', () => {
    const w = resolveWindow({}, NOW);
    assert.equal(w.bucketSize, 'day');
    assert.deepEqual(span(w), ['2026-05-18T00:00:00Z', '2026-06-18T00:00:00Z']);
    assert.equal(w.buckets.length, 31);
  });

  test('startTime snaps down and endTime snaps up to the bucket boundaries; a boundary endTime stays', () => {
    const w = resolveWindow(
      { startTime: '2026-06-01T10:30:00Z', endTime: '2026-06-03T00:00:00Z', bucketSize: 'day' },
      NOW,
    );
    assert.deepEqual(span(w), ['2026-06-01T00:00:00Z', '2026-06-03T00:00:00Z']);
    assert.deepEqual(
      w.buckets.map((b) => rfc3339(b.start)),
      ['2026-06-01T00:00:00Z', '2026-06-02T00:00:00Z'],
    );
    const up = resolveWindow({ startTime: '2026-06-01T00:00:00Z', endTime: '2026-06-02T00:00:01Z' }, NOW);
    assert.deepEqual(span(up), ['2026-06-01T00:00:00Z', '2026-06-03T00:00:00Z']);
  });

  test('an offset time zone is read as the instant it names', () => {
    const w = resolveWindow(
      { startTime: '2026-06-01T02:00:00+02:00', endTime: '2026-06-01T03:00:00+02:00', bucketSize: 'hour' },
      NOW,
    );
    assert.deepEqual(span(w), ['2026-06-01T00:00:00Z', '2026-06-01T01:00:00Z']);
  });

  test('lastN counts back from the current, in-progress bucket for every bucket size', () => {
    assert.deepEqual(span(resolveWindow({ lastN: 1, bucketSize: 'hour' }, NOW)), [
      '2026-06-17T15:00:00Z',
      '2026-06-17T16:00:00Z',
    ]);
    assert.deepEqual(span(resolveWindow({ lastN: 3, bucketSize: 'day' }, NOW)), [
      '2026-06-15T00:00:00Z',
      '2026-06-18T00:00:00Z',
    ]);
    assert.deepEqual(span(resolveWindow({ lastN: 2, bucketSize: 'week' }, NOW)), [
      '2026-06-08T00:00:00Z',
      '2026-06-22T00:00:00Z',
    ]);
    const months = resolveWindow({ lastN: 7, bucketSize: 'month' }, NOW);
    assert.deepEqual(span(months), ['2025-12-01T00:00:00Z', '2026-07-01T00:00:00Z']);
    assert.equal(months.buckets.length, 7);
    assert.deepEqual(span(resolveWindow({ lastN: 2, bucketSize: 'year' }, NOW)), [
      '2025-01-01T00:00:00Z',
      '2027-01-01T00:00:00Z',
    ]);
  });

  test('lastN with startTime or endTime answers 400 saying they are exclusive', () => {
    refused(() => resolveWindow({ lastN: 2, startTime: '2026-06-01T00:00:00Z' }, NOW), /lastN cannot be combined/);
    refused(() => resolveWindow({ lastN: 2, endTime: '2026-06-01T00:00:00Z' }, NOW), /lastN cannot be combined/);
  });

  test('a startTime not before endTime answers 400 naming both instants', () => {
    refused(
      () => resolveWindow({ startTime: '2026-06-02T00:00:00Z', endTime: '2026-06-01T00:00:00Z' }, NOW),
      /startTime must be before endTime .*2026-06-02T00:00:00.000Z.*2026-06-01T00:00:00.000Z/,
    );
    refused(() => resolveWindow({ startTime: '2026-07-01T00:00:00Z' }, NOW), /endTime defaults to now/);
  });

  test('a date-time without a time zone, or no date-time at all, answers 400 with an example', () => {
    refused(() => resolveWindow({ startTime: '2026-06-01T00:00:00' }, NOW), /RFC 3339.*2026-05-01T00:00:00Z/);
    refused(() => resolveWindow({ endTime: 'yesterday' }, NOW), /endTime must be an RFC 3339/);
  });

  test('a window of more buckets than answered at once answers 400 suggesting a larger bucketSize', () => {
    refused(() => resolveWindow({ lastN: MAX_BUCKETS + 1, bucketSize: 'hour' }, NOW), /at most 10000/);
    refused(
      () =>
        resolveWindow({ startTime: '2020-01-01T00:00:00Z', endTime: '2026-01-01T00:00:00Z', bucketSize: 'hour' }, NOW),
      /larger bucketSize/,
    );
    assert.equal(resolveWindow({ lastN: MAX_BUCKETS, bucketSize: 'hour' }, NOW).buckets.length, MAX_BUCKETS);
  });
});
