import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freeSubnet, parseCidr, parseSubnetPool, subnetAt } from './subnet-pool.js';

test('a pool is cut into subnets of the given prefix, counted and listed from its first address', () => {
  const pool = parseSubnetPool('10.224.0.0/12', 24);
  assert.equal(pool.count, 4096);
  assert.equal(subnetAt(pool, 0), '10.224.0.0/24');
  assert.equal(subnetAt(pool, 4095), '10.239.255.0/24');
  assert.equal(parseSubnetPool('10.224.7.9/12', 28).count, 65536, 'the base is masked to its prefix');
});

test('a pool that cannot hold one network with room for instances is refused, saying why', () => {
  assert.throws(() => parseSubnetPool('10.224.0.0', 24), /not an IPv4 CIDR/);
  assert.throws(() => parseSubnetPool('10.224.0.0/33', 24), /not an IPv4 CIDR/);
  assert.throws(() => parseSubnetPool('10.224.0.0/24', 16), /from the pool's own \(\/24\) to \/29/);
  assert.throws(() => parseSubnetPool('10.224.0.0/12', 30), /to \/29/);
});

test('a free subnet overlaps none the engine has, whatever their sizes, probing on from the start it is given', () => {
  const pool = parseSubnetPool('10.224.0.0/22', 24);
  assert.equal(freeSubnet(pool, [], 2), '10.224.2.0/24');
  assert.equal(freeSubnet(pool, ['10.224.2.0/24'], 2), '10.224.3.0/24');
  assert.equal(freeSubnet(pool, ['10.224.2.0/23'], 2), '10.224.0.0/24', 'wraps around past the end');
  assert.equal(freeSubnet(pool, ['10.224.2.128/25', '172.17.0.0/16'], 2), '10.224.3.0/24');
  assert.equal(freeSubnet(pool, ['10.0.0.0/8'], 0), null, 'a network covering the whole pool leaves nothing');
  assert.equal(
    freeSubnet(pool, ['not a cidr', '10.224.0.0/24'], 0),
    '10.224.1.0/24',
    'what is not a subnet is ignored',
  );
  assert.equal(freeSubnet(pool, [], -1), '10.224.3.0/24', 'any start lands in the pool');
});

test('a CIDR reads as the range it covers, its base masked', () => {
  assert.deepEqual(parseCidr('10.0.0.7/8'), { first: 167772160, last: 184549375 });
  assert.deepEqual(parseCidr('0.0.0.0/0'), { first: 0, last: 2 ** 32 - 1 });
  assert.equal(parseCidr('10.0.0.256/8'), null);
  assert.equal(parseCidr('10.0.0.0/40'), null);
});
