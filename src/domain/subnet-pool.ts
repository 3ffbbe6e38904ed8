/**
 * The address pool instance networks take their subnets from (`runtime.docker.networks`): a large
 * IPv4 range cut into equal subnets, one per network on an engine. Pure: which subnets are free is
 * decided from what the engine already has, which the caller lists.
 */

export interface SubnetPool {
  /** the pool's first address, as a 32-bit integer */
  base: number;
  /** the pool's prefix length (`/12`) */
  poolPrefix: number;
  /** each network's prefix length (`/24`) */
  subnetPrefix: number;
  /** how many subnets the pool holds */
  count: number;
}

/** An IPv4 range as integers, both ends included. */
interface Range {
  first: number;
  last: number;
}

/** `a.b.c.d` as a 32-bit integer, or null. */
export function ipv4ToInt(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    n = n * 256 + Number(p);
  }
  return n;
}

export const intToIpv4 = (n: number): string => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');

/** `a.b.c.d/len` as the range it covers (the base masked to its prefix), or null. */
export function parseCidr(text: string): Range | null {
  const m = /^([\d.]+)\/(\d{1,2})$/.exec(text.trim());
  const ip = m ? ipv4ToInt(m[1]!) : null;
  const len = m ? Number(m[2]) : NaN;
  if (ip === null || !(len >= 0 && len <= 32)) return null;
  const size = 2 ** (32 - len);
  const first = ip - (ip % size);
  return { first, last: first + size - 1 };
}

/**
 * The pool `cidr` cut into subnets of `subnetPrefix` bits. Refuses what cannot hold one subnet
 * with room for a gateway and an instance.
 */
export function parseSubnetPool(cidr: string, subnetPrefix: number): SubnetPool {
  const m = /^([\d.]+)\/(\d{1,2})$/.exec(cidr.trim());
  const range = parseCidr(cidr);
  if (!m || !range) throw new Error(`the network pool "${cidr}" is not an IPv4 CIDR such as 10.224.0.0/12`);
  const poolPrefix = Number(m[2]);
  if (!Number.isInteger(subnetPrefix) || subnetPrefix < poolPrefix || subnetPrefix > 29)
    throw new Error(
      `a network's prefix (/${subnetPrefix}) must be from the pool's own (/${poolPrefix}) to /29 (a gateway and at least a few instances)`,
    );
  return { base: range.first, poolPrefix, subnetPrefix, count: 2 ** (subnetPrefix - poolPrefix) };
}

/** The `index`-th subnet of the pool, as CIDR text. */
export const subnetAt = (pool: SubnetPool, index: number): string =>
  `${intToIpv4(pool.base + index * 2 ** (32 - pool.subnetPrefix))}/${pool.subnetPrefix}`;

const overlaps = (a: Range, b: Range): boolean => a.first <= b.last && b.first <= a.last;

/**
 * The first subnet of the pool, probing from `start` (wrapping around), that overlaps none of
 * `taken` (every subnet the engine's networks already use, the engine's own and other
 * installations' included); null when the pool is full.
 */
export function freeSubnet(pool: SubnetPool, taken: readonly string[], start: number): string | null {
  const used = taken.map(parseCidr).filter((r): r is Range => r !== null);
  const size = 2 ** (32 - pool.subnetPrefix);
  const from = ((start % pool.count) + pool.count) % pool.count;
  for (let i = 0; i < pool.count; i++) {
    const index = (from + i) % pool.count;
    const first = pool.base + index * size;
    const candidate = { first, last: first + size - 1 };
    if (!used.some((r) => overlaps(r, candidate))) return subnetAt(pool, index);
  }
  return null;
}
