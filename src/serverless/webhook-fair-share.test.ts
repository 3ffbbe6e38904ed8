import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebhookFairShare } from './webhook-fair-share.js';

test('turns start after the account served last and wrap around', () => {
  const share = new WebhookFairShare({ perAccount: 4, perReceiver: 2 });
  assert.deepEqual(share.turnOrder(['a', 'b', 'c']), ['a', 'b', 'c']);
  share.started('b', 'r1');
  assert.deepEqual(share.turnOrder(['a', 'b', 'c']), ['c', 'a', 'b']);
});

test('the account with the fewest calls in flight goes next, the earliest in turn among equals', () => {
  const share = new WebhookFairShare({ perAccount: 4, perReceiver: 2 });
  share.started('a', 'r1');
  share.started('a', 'r2');
  share.started('b', 'r3');
  const queue = ['a', 'b', 'c', 'd'];
  assert.equal(share.takeNext(queue), 'c');
  assert.equal(share.takeNext(queue), 'd');
  assert.equal(share.takeNext(queue), 'b');
  assert.equal(share.takeNext(queue), 'a');
  assert.equal(share.takeNext(queue), undefined);
});

test('an account at its cap is left out of the turn, and is back once a call ends', () => {
  const share = new WebhookFairShare({ perAccount: 2, perReceiver: 9 });
  share.started('a', 'r1');
  share.started('a', 'r2');
  assert.deepEqual(share.turnOrder(['a', 'b']), ['b']);
  share.ended('a', 'r1');
  assert.equal(share.hasRoom('a'), true);
});

test('receivers at their cap are passed over, whichever accounts call them', () => {
  const share = new WebhookFairShare({ perAccount: 9, perReceiver: 2 });
  share.started('a', 'http://x');
  share.started('b', 'http://x');
  share.started('a', 'http://y');
  assert.deepEqual(share.fullReceivers(), ['http://x']);
  share.ended('b', 'http://x');
  assert.deepEqual(share.fullReceivers(), []);
});
