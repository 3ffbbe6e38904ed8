import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../domain/clock.js';
import { credentialFingerprint, FIRST_RETRY_MS, MAX_RETRY_MS, PrepullBackoff } from './prepull-backoff.js';

const alice = credentialFingerprint({ username: 'alice', password: 'pw-1' });

test('a failed pull waits a minute, then twice as long at each failure, up to an hour', () => {
  const clock = new FakeClock();
  const backoff = new PrepullBackoff();
  assert.equal(backoff.waitingUntil('h1', 'img', alice, clock.now()), null, 'never failed: tried');
  const waits: number[] = [];
  for (let i = 0; i < 9; i++) {
    const wait = backoff.failed('h1', 'img', alice, clock.now());
    waits.push(wait);
    clock.advance(wait - 1);
    assert.equal(
      backoff.waitingUntil('h1', 'img', alice, clock.now()),
      clock.now() + 1,
      'still waiting a millisecond before',
    );
    clock.advance(1);
    assert.equal(backoff.waitingUntil('h1', 'img', alice, clock.now()), null, 'tried at the end of the wait');
  }
  assert.deepEqual(
    waits.map((w) => w / FIRST_RETRY_MS),
    [1, 2, 4, 8, 16, 32, 60, 60, 60],
  );
  assert.equal(MAX_RETRY_MS, 60 * FIRST_RETRY_MS);
});

test("a change of the owner's credential ends the wait at once and counts failures afresh", () => {
  const clock = new FakeClock();
  const backoff = new PrepullBackoff();
  backoff.failed('h1', 'img', alice, clock.now());
  backoff.failed('h1', 'img', alice, clock.now());
  const fixed = credentialFingerprint({ username: 'alice', password: 'pw-2' });
  assert.notEqual(backoff.waitingUntil('h1', 'img', alice, clock.now()), null);
  assert.equal(backoff.waitingUntil('h1', 'img', fixed, clock.now()), null, 'a new password: tried now');
  assert.equal(
    backoff.failed('h1', 'img', fixed, clock.now()),
    FIRST_RETRY_MS,
    'its first failure waits the first wait',
  );
  assert.equal(
    backoff.waitingUntil('h1', 'img', credentialFingerprint(null), clock.now()),
    null,
    'none is a change too',
  );
});

test('the wait is per host and image, and a success ends it', () => {
  const clock = new FakeClock();
  const backoff = new PrepullBackoff();
  backoff.failed('h1', 'img', '', clock.now());
  assert.notEqual(backoff.waitingUntil('h1', 'img', '', clock.now()), null);
  assert.equal(backoff.waitingUntil('h2', 'img', '', clock.now()), null, 'another host');
  assert.equal(backoff.waitingUntil('h1', 'other', '', clock.now()), null, 'another image');
  backoff.succeeded('h1', 'img');
  assert.equal(backoff.waitingUntil('h1', 'img', '', clock.now()), null);
  assert.equal(backoff.failed('h1', 'img', '', clock.now()), FIRST_RETRY_MS, 'counted afresh');
});

test('a fingerprint never holds the secret and tells credentials apart', () => {
  assert.equal(credentialFingerprint(null), '');
  assert.ok(!alice.includes('pw-1'));
  assert.notEqual(alice, credentialFingerprint({ username: 'alice', password: 'pw-2' }));
  assert.notEqual(alice, credentialFingerprint({ username: 'alic', password: 'epw-1' }));
});
