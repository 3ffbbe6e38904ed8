import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { PodProxyNames } from './pod-proxy-names.js';

test('a label names its pod and port, is one DNS label, and carries 100 bits no one without the key can make', () => {
  const names = new PodProxyNames(randomBytes(32));
  const label = names.label('abcdefghijklmn', 8888);
  assert.match(label, /^abcdefghijklmn-8888-[a-z2-7]{20}$/);
  assert.ok(label.length <= 63);
  assert.deepEqual(names.parse(label), { podId: 'abcdefghijklmn', port: 8888 });
  assert.deepEqual(names.parse(label.toUpperCase()), { podId: 'abcdefghijklmn', port: 8888 }, 'DNS names ignore case');
  const other = new PodProxyNames(randomBytes(32));
  assert.equal(other.parse(label), null, 'another installation’s key makes other names');
});

test('a label of another port, a changed token or a malformed name names nothing', () => {
  const names = new PodProxyNames(randomBytes(32));
  const label = names.label('pod1', 8888);
  const token = label.split('-').at(-1)!;
  assert.equal(names.parse(`pod1-8889-${token}`), null);
  assert.equal(names.parse(`pod2-8888-${token}`), null);
  const changed = token.slice(0, -1) + (token.endsWith('a') ? 'b' : 'a');
  assert.equal(names.parse(`pod1-8888-${changed}`), null);
  for (const bad of [
    '',
    'pod1',
    'pod1-8888',
    `pod1-08888-${token}`,
    `pod1-70000-${token}`,
    `pod1-0-${token}`,
    `-8888-${token}`,
  ])
    assert.equal(names.parse(bad), null, bad);
});

test('every replica sharing the key derives the same names', () => {
  const key = randomBytes(32);
  assert.equal(new PodProxyNames(key).label('p', 80), new PodProxyNames(Buffer.from(key)).label('p', 80));
});
