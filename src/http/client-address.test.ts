import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientKey } from './client-address.js';

test('an IPv4 client is counted by its address', () => {
  assert.equal(clientKey('203.0.113.7'), '203.0.113.7');
  assert.equal(clientKey('127.0.0.1'), '127.0.0.1');
});

test('every address of one IPv6 /64 is counted as one client, and the next /64 as another', () => {
  const key = clientKey('2001:db8:0:1::1');
  assert.equal(key, '2001:db8:0:1::/64');
  for (const address of [
    '2001:db8:0:1:ffff:ffff:ffff:ffff',
    '2001:0db8:0000:0001:1234:5678:9abc:def0',
    '2001:DB8:0:1:a::b',
    '2001:db8::1:0:0:0:2',
    '2001:db8:0:1::1%eth0',
  ])
    assert.equal(clientKey(address), key, address);
  assert.equal(clientKey('2001:db8:0:2::1'), '2001:db8:0:2::/64');
  assert.equal(clientKey('::1'), '0:0:0:0::/64');
  assert.equal(clientKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
});

test('an IPv4-mapped IPv6 address is counted as the IPv4 address it carries', () => {
  assert.equal(clientKey('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(clientKey('::FFFF:127.0.0.1'), '127.0.0.1');
  assert.equal(clientKey('::ffff:cb00:7107'), '203.0.113.7');
  assert.equal(clientKey('0:0:0:0:0:ffff:203.0.113.7'), '203.0.113.7');
});

test('something that is not an address is its own key', () => {
  assert.equal(clientKey('not-an-address'), 'not-an-address');
  assert.equal(clientKey(''), '');
});
