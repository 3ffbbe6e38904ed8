import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GlobalAddressPool, internalDns, lowestFreeAddress, parsePool } from './global-network.js';

test('a pool excludes its network and broadcast addresses', () => {
  const r = parsePool('10.200.0.0/24');
  assert.equal(lowestFreeAddress(r, new Set()), '10.200.0.1');
  const all = new Set(Array.from({ length: 253 }, (_, i) => `10.200.0.${i + 1}`));
  assert.equal(lowestFreeAddress(r, all), '10.200.0.254');
  all.add('10.200.0.254');
  assert.equal(lowestFreeAddress(r, all), null);
});

test('a /16 pool spans the third octet and an unaligned base is aligned', () => {
  const r = parsePool('10.200.7.9/16');
  const used = new Set(Array.from({ length: 255 }, (_, i) => `10.200.0.${i + 1}`));
  assert.equal(lowestFreeAddress(r, used), '10.200.1.0');
});

test('malformed pools are rejected', () => {
  for (const bad of ['10.200.0.0', '10.200.0.0/33', '300.1.1.1/16', 'x/16', '10.0.0.0/31'])
    assert.throws(() => parsePool(bad), /Invalid global networking pool/);
});

test('the pool hands out the lowest free address, skips those held by stored pods and reuses released ones', async () => {
  const pool = new GlobalAddressPool('10.9.0.0/24', async () => ['10.9.0.1', '10.9.0.3']);
  assert.equal(await pool.allocate(), '10.9.0.2');
  assert.equal(await pool.allocate(), '10.9.0.4');
  pool.release('10.9.0.2');
  assert.equal(await pool.allocate(), '10.9.0.2');
});

test('concurrent allocations never share an address', async () => {
  const pool = new GlobalAddressPool('10.9.0.0/24', async () => []);
  const ips = await Promise.all(Array.from({ length: 20 }, () => pool.allocate()));
  assert.equal(new Set(ips).size, 20);
});

test('internal DNS names are <pod_id>.<domain>.internal', () => {
  assert.equal(internalDns('abc123', 'gantry'), 'abc123.gantry.internal');
});
