import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../domain/clock.js';
import { isApiError } from '../../domain/errors.js';
import { RestRateLimiter } from './rate-limit.js';

const quotas = { minute: 1, hour: 100, day: 1000 };

const refusal = (run: () => unknown): string => {
  try {
    run();
  } catch (err) {
    assert.ok(isApiError(err) && err.code === 'RATE_LIMITED', String(err));
    return err.detail;
  }
  assert.fail('the request was admitted');
};

test('a limiter bounded to N counters forgets the one kept longest when an N+1th caller comes: memory stays bounded, and that caller starts afresh', () => {
  const limiter = new RestRateLimiter(quotas, new FakeClock(), { maxCounters: 2, subject: 'client address' });
  limiter.check('a');
  limiter.check('b');
  refusal(() => limiter.check('a'));
  refusal(() => limiter.check('b'));
  limiter.check('c'); // a third caller: "a" is forgotten
  limiter.check('a'); // and admitted again
  assert.match(
    refusal(() => limiter.check('c')),
    /this client address may make 1 requests per minute/,
  );
});

test('an unbounded limiter keeps every key`s counters and names the API key in its refusal', () => {
  const limiter = new RestRateLimiter(quotas, new FakeClock());
  for (const k of ['a', 'b', 'c']) limiter.check(k);
  for (const k of ['a', 'b', 'c'])
    assert.match(
      refusal(() => limiter.check(k)),
      /this API key may make/,
    );
});
