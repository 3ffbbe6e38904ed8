import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nonPublicKind, parseIPv6 } from './ip-address.js';

test('every non-public IPv4 range is refused, at its first and last address', () => {
  const cases: Array<[string, string]> = [
    ['0.0.0.0', 'unspecified'],
    ['0.255.255.255', 'unspecified'],
    ['10.0.0.5', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.0', 'shared (carrier-grade NAT)'],
    ['100.127.255.255', 'shared (carrier-grade NAT)'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['172.16.0.0', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['192.88.99.1', 'reserved'],
    ['198.51.100.255', 'documentation'],
    ['203.0.113.0', 'documentation'],
    ['192.168.1.1', 'private'],
    ['198.18.0.0', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.255', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
  ];
  for (const [address, kind] of cases) assert.equal(nonPublicKind(address), kind, address);
});

test('public IPv4 addresses next to the refused ranges are allowed', () => {
  for (const address of [
    '1.1.1.1',
    '8.8.8.8',
    '9.255.255.255',
    '11.0.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '169.253.255.255',
    '172.15.255.255',
    '172.32.0.0',
    '192.0.1.0',
    '192.0.3.0',
    '203.0.114.0',
    '192.167.255.255',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
  ])
    assert.equal(nonPublicKind(address), null, address);
});

test('non-public IPv6 addresses are refused, and embedded IPv4 addresses are judged as IPv4', () => {
  const cases: Array<[string, string]> = [
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::127.0.0.1', 'reserved'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fe80::1', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:a00:5', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['64:ff9b::10.0.0.5', 'private'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b:1::1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::1', 'link-local'],
    ['2002:c0a8:0101::1', 'private'],
    ['fe80::1%eth0', 'link-local'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
    ['2001::1', 'reserved'],
    ['2001:db8::1', 'documentation'],
    ['2001:2::1', 'benchmarking'],
    ['100::1', 'reserved'],
  ];
  for (const [address, kind] of cases) assert.equal(nonPublicKind(address), kind, address);
});

test('public IPv6 addresses, also when they embed a public IPv4 address, are allowed', () => {
  for (const address of [
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::8.8.8.8',
    '2002:808:808::1',
    'fbff::1',
    'fe7f::1',
    'fe00::1',
    '2a00:1450::1',
    '2001:db9::1',
  ])
    assert.equal(nonPublicKind(address), null, address);
});

test('text that is not an IP address is never answered as public', () => {
  for (const text of ['', 'localhost', '127.1', '2130706433', '0x7f.0.0.1', '[::1]', '1.2.3.4.5', 'example.com'])
    assert.equal(nonPublicKind(text), 'not an IP address', text);
});

test('IPv6 text parses to its 16 bytes, with :: and a dotted-quad tail', () => {
  assert.deepEqual([...parseIPv6('::ffff:1.2.3.4')!], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]);
  assert.deepEqual([...parseIPv6('1:2:3:4:5:6:7:8')!], [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]);
  assert.deepEqual([...parseIPv6('2002:c0a8:101::')!].slice(0, 6), [0x20, 0x02, 0xc0, 0xa8, 1, 1]);
  assert.equal(parseIPv6('1.2.3.4'), null);
});
