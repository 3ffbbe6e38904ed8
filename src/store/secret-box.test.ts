import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SecretBox } from './secret-box.js';

test('a sealed secret opens to the plaintext and does not contain it', () => {
  const box = new SecretBox(randomBytes(32));
  const sealed = box.seal('hunter2-very-secret');
  assert.ok(!sealed.includes('hunter2'));
  assert.equal(box.open(sealed), 'hunter2-very-secret');
  assert.equal(box.open(box.seal('')), '');
  assert.equal(box.open(box.seal('pässwörd ✓')), 'pässwörd ✓');
});

test('sealing the same secret twice gives different ciphertexts (fresh IV)', () => {
  const box = new SecretBox(randomBytes(32));
  assert.notEqual(box.seal('same'), box.seal('same'));
});

test('a tampered ciphertext or another key fails to open', () => {
  const box = new SecretBox(randomBytes(32));
  const sealed = box.seal('secret');
  const [iv, tag, data] = sealed.split('.') as [string, string, string];
  const flipped = Buffer.from(data, 'base64');
  flipped[0] = flipped[0]! ^ 1;
  assert.throws(() => box.open([iv, tag, flipped.toString('base64')].join('.')));
  assert.throws(() => new SecretBox(randomBytes(32)).open(sealed));
  assert.throws(() => box.open('not-sealed'), /Malformed/);
});

test('keys load from 64 hex characters or base64 of 32 bytes, and other lengths are refused', () => {
  const raw = randomBytes(32);
  const sealed = new SecretBox(raw).seal('x');
  assert.equal(SecretBox.fromString(raw.toString('hex')).open(sealed), 'x');
  assert.equal(SecretBox.fromString(` ${raw.toString('base64')}\n`).open(sealed), 'x');
  assert.match(SecretBox.generateKey(), /^[0-9a-f]{64}$/);
  assert.throws(() => new SecretBox(randomBytes(16)), /32 bytes/);
  assert.throws(() => SecretBox.fromString('abcd'), /32 bytes/);
});
