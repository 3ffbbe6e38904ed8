import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizePolicy, normalizeWait, RUNSYNC_WAIT, s3ConfigViolations, STREAM_WAIT } from './job-policy.js';

test('an absent policy takes the defaults: 10 minutes execution, 24 hours ttl, normal priority', () => {
  assert.deepEqual(normalizePolicy(undefined), {
    ok: true,
    value: { executionTimeout: 600_000, lowPriority: false, ttl: 86_400_000 },
  });
  assert.deepEqual(normalizePolicy({}), {
    ok: true,
    value: { executionTimeout: 600_000, lowPriority: false, ttl: 86_400_000 },
  });
});

test("the endpoint's execution timeout is the default, and a job's policy overrides it", () => {
  assert.deepEqual(normalizePolicy({}, 300_000), {
    ok: true,
    value: { executionTimeout: 300_000, lowPriority: false, ttl: 86_400_000 },
  });
  assert.deepEqual(normalizePolicy({ executionTimeout: 5000 }, 300_000), {
    ok: true,
    value: { executionTimeout: 5000, lowPriority: false, ttl: 86_400_000 },
  });
});

test('the bounds are inclusive: 5 s..7 days execution, 10 s..7 days ttl', () => {
  const week = 7 * 86_400_000;
  assert.equal(normalizePolicy({ executionTimeout: 5000, ttl: 10_000 }).ok, true);
  assert.equal(normalizePolicy({ executionTimeout: week, ttl: week, lowPriority: true }).ok, true);
});

test('each violation names its field and bound', () => {
  const res = normalizePolicy({ executionTimeout: 4999, ttl: 7 * 86_400_000 + 1, lowPriority: 'yes' });
  assert.deepEqual(res, {
    ok: false,
    violations: [
      'policy.executionTimeout must be between 5000 and 604800000 ms',
      'policy.ttl must be between 10000 and 604800000 ms',
      'policy.lowPriority must be a boolean',
    ],
  });
});

test('a non-integer duration, an unknown key and a non-object policy are violations', () => {
  assert.deepEqual(normalizePolicy({ ttl: 12_000.5 }), {
    ok: false,
    violations: ['policy.ttl must be an integer number of milliseconds'],
  });
  assert.deepEqual(normalizePolicy({ ttl: '20000' }), {
    ok: false,
    violations: ['policy.ttl must be an integer number of milliseconds'],
  });
  assert.deepEqual(normalizePolicy({ priority: 1 }), {
    ok: false,
    violations: ['policy.priority is not a known policy field'],
  });
  assert.deepEqual(normalizePolicy([1]), { ok: false, violations: ['policy must be an object'] });
});

test('runsync wait defaults to 90 s and is clamped into 1 s..300 s', () => {
  assert.deepEqual(normalizeWait(undefined, RUNSYNC_WAIT), { ok: true, value: 90_000 });
  assert.deepEqual(normalizeWait('5000', RUNSYNC_WAIT), { ok: true, value: 5000 });
  assert.deepEqual(normalizeWait('10', RUNSYNC_WAIT), { ok: true, value: 1000 });
  assert.deepEqual(normalizeWait(900_000, RUNSYNC_WAIT), { ok: true, value: 300_000 });
});

test('stream wait defaults to 10 s and 0 means answer at once', () => {
  assert.deepEqual(normalizeWait('', STREAM_WAIT), { ok: true, value: 10_000 });
  assert.deepEqual(normalizeWait('0', STREAM_WAIT), { ok: true, value: 0 });
});

test('a wait that is not a number is a violation naming the parameter', () => {
  assert.deepEqual(normalizeWait('soon', RUNSYNC_WAIT), {
    ok: false,
    violations: ['wait must be a number of milliseconds'],
  });
});

test('an s3Config is an object whose accessId, accessSecret, bucketName and endpointUrl are strings', () => {
  assert.deepEqual(s3ConfigViolations(undefined), []);
  assert.deepEqual(s3ConfigViolations(null), []);
  assert.deepEqual(
    s3ConfigViolations({
      accessId: 'AKIA',
      accessSecret: 's',
      bucketName: 'b',
      endpointUrl: 'https://s3.example.com',
      region: 'x',
    }),
    [],
  );
  assert.deepEqual(s3ConfigViolations('bucket'), ['s3Config must be an object']);
  assert.deepEqual(s3ConfigViolations({ accessId: 1, accessSecret: { a: 1 }, bucketName: ['b'], endpointUrl: true }), [
    's3Config.accessId must be a string',
    's3Config.accessSecret must be a string',
    's3Config.bucketName must be a string',
    's3Config.endpointUrl must be a string',
  ]);
});

test('an s3Config field past its length bound is named without quoting its value', () => {
  const secret = 'S'.repeat(1025);
  const violations = s3ConfigViolations({ accessSecret: secret, endpointUrl: `https://${'e'.repeat(2048)}` });
  assert.deepEqual(violations, [
    's3Config.accessSecret must be at most 1024 characters',
    's3Config.endpointUrl must be at most 2048 characters',
  ]);
  assert.ok(!violations.join().includes('SSS'));
});
