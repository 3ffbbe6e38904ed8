/**
 * Which IP addresses are not on the public internet: the ranges a webhook receiver may not be on
 * when the deployment refuses private receivers (SSRF: a tenant's webhook must not reach the
 * host's loopback services, the cloud metadata endpoint or the operator's private network).
 *
 * Addresses arrive in canonical text form: from the resolver, or from a URL host after the WHATWG
 * parser normalised it (`http://2130706433/`, `http://0x7f.1/` and `http://127.1/` all become
 * `127.0.0.1`; `[::ffff:127.0.0.1]` becomes `[::ffff:7f00:1]`). Anything that does not parse as
 * an address is answered as non-public: an unknown form must never pass as public.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** Why an address is not public (used in the refusal message: "… is loopback"). */
export type NonPublicKind =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'shared (carrier-grade NAT)'
  | 'reserved'
  | 'benchmarking'
  | 'documentation'
  | 'multicast'
  | 'not an IP address';

type Range4 = readonly [first: number, bits: number, kind: NonPublicKind];

const v4 = (a: number, b: number, c: number, d: number): number => ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;

/** IPv4 ranges that are not public (RFC 6890 and its successors). 240/4 includes 255.255.255.255. */
const V4_RANGES: readonly Range4[] = [
  [v4(0, 0, 0, 0), 8, 'unspecified'],
  [v4(10, 0, 0, 0), 8, 'private'],
  [v4(100, 64, 0, 0), 10, 'shared (carrier-grade NAT)'],
  [v4(127, 0, 0, 0), 8, 'loopback'],
  [v4(169, 254, 0, 0), 16, 'link-local'],
  [v4(172, 16, 0, 0), 12, 'private'],
  [v4(192, 0, 0, 0), 24, 'reserved'],
  [v4(192, 0, 2, 0), 24, 'documentation'],
  [v4(192, 88, 99, 0), 24, 'reserved'], // 6to4 relay anycast, deprecated
  [v4(198, 51, 100, 0), 24, 'documentation'],
  [v4(203, 0, 113, 0), 24, 'documentation'],
  [v4(192, 168, 0, 0), 16, 'private'],
  [v4(198, 18, 0, 0), 15, 'benchmarking'],
  [v4(224, 0, 0, 0), 4, 'multicast'],
  [v4(240, 0, 0, 0), 4, 'reserved'],
];

function kindOfV4(n: number): NonPublicKind | null {
  for (const [first, bits, kind] of V4_RANGES) {
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    if ((n & mask) >>> 0 === first) return kind;
  }
  return null;
}

/** Dotted-quad text → 32-bit number (callers have checked `isIPv4`). */
const parseV4 = (text: string): number => {
  const [a = 0, b = 0, c = 0, d = 0] = text.split('.').map(Number);
  return v4(a, b, c, d);
};

/** IPv6 text (with `::` and an optional dotted-quad tail) → 16 bytes; null when malformed. */
export function parseIPv6(text: string): Uint8Array | null {
  if (!isIPv6(text)) return null;
  // a zone index (fe80::1%eth0) names an interface, not part of the address
  let head = text.split('%')[0] ?? '';
  const lastColon = head.lastIndexOf(':');
  const last = head.slice(lastColon + 1);
  if (last.includes('.')) {
    // a dotted-quad tail is the last two groups written as IPv4
    const n = parseV4(last);
    head = `${head.slice(0, lastColon + 1)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [left = '', right] = head.split('::') as [string, string | undefined];
  const groups = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const l = groups(left);
  const r = right === undefined ? [] : groups(right);
  const fill = 8 - l.length - r.length;
  if (fill < 0 || (right === undefined && fill !== 0)) return null;
  const words = [...l, ...new Array<number>(fill).fill(0), ...r];
  const bytes = new Uint8Array(16);
  words.forEach((w, i) => {
    bytes[2 * i] = w >> 8;
    bytes[2 * i + 1] = w & 0xff;
  });
  return bytes;
}

const startsWith = (bytes: Uint8Array, prefix: readonly number[], bits: number): boolean => {
  for (let i = 0; i < bits; i += 8) {
    const take = Math.min(8, bits - i);
    const mask = (0xff << (8 - take)) & 0xff;
    if (((bytes[i / 8] ?? 0) & mask) !== ((prefix[i / 8] ?? 0) & mask)) return false;
  }
  return true;
};

const v4At = (b: Uint8Array, at: number): number => v4(b[at] ?? 0, b[at + 1] ?? 0, b[at + 2] ?? 0, b[at + 3] ?? 0);

function kindOfV6(b: Uint8Array): NonPublicKind | null {
  const zeros = (n: number): number[] => new Array<number>(n).fill(0);
  // ::ffff:a.b.c.d (IPv4-mapped): the socket talks IPv4 to the embedded address.
  if (startsWith(b, [...zeros(10), 0xff, 0xff], 96)) return kindOfV4(v4At(b, 12));
  // ::/96: the unspecified address, ::1, and the deprecated IPv4-compatible form.
  if (startsWith(b, zeros(12), 96)) {
    if (b.every((x, i) => x === (i === 15 ? 1 : 0))) return 'loopback';
    return b.every((x) => x === 0) ? 'unspecified' : 'reserved';
  }
  // NAT64 (64:ff9b::/96) translates to the embedded IPv4 address; its local-use /48 is private.
  if (startsWith(b, [0x00, 0x64, 0xff, 0x9b, ...zeros(8)], 96)) return kindOfV4(v4At(b, 12));
  if (startsWith(b, [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48)) return 'private';
  // 6to4 (2002::/16) tunnels to the IPv4 address in bits 16–47.
  if (startsWith(b, [0x20, 0x02], 16)) return kindOfV4(v4At(b, 2));
  // Teredo (2001::/32) tunnels through a relay to an address hidden in the suffix: no webhook
  // receiver lives there, and the embedded address cannot be judged without the relay.
  if (startsWith(b, [0x20, 0x01, 0x00, 0x00], 32)) return 'reserved';
  if (startsWith(b, [0x20, 0x01, 0x00, 0x02, 0x00, 0x00], 48)) return 'benchmarking';
  if (startsWith(b, [0x20, 0x01, 0x0d, 0xb8], 32)) return 'documentation';
  if (startsWith(b, [0x01, 0x00, ...zeros(6)], 64)) return 'reserved'; // discard-only (RFC 6666)
  if (startsWith(b, [0xfc], 7)) return 'private';
  if (startsWith(b, [0xfe, 0x80], 10)) return 'link-local';
  if (startsWith(b, [0xfe, 0xc0], 10)) return 'private'; // site-local, deprecated but routable inside sites
  if (startsWith(b, [0xff], 8)) return 'multicast';
  return null;
}

/**
 * Why `address` (IPv4 dotted quad or IPv6, without brackets) is not a public address, or null
 * when it is public.
 */
export function nonPublicKind(address: string): NonPublicKind | null {
  if (isIPv4(address)) return kindOfV4(parseV4(address));
  const bytes = parseIPv6(address);
  return bytes ? kindOfV6(bytes) : 'not an IP address';
}
