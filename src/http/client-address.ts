import { isIPv4, isIPv6 } from 'node:net';

/**
 * The key one client's connections are counted under (the per-client connection cap): an IPv4
 * address as it is; an IPv6 address by its /64 prefix (`2001:db8:0:1::/64`), because a single
 * subscriber is routed a whole /64 and picks any of its 2^64 addresses at will; an IPv4-mapped
 * IPv6 address (`::ffff:203.0.113.7`, what a dual-stack listener reports for an IPv4 peer) as the
 * IPv4 address it carries, so one client is one key whichever listener it reached. Anything else
 * (not an address) is its own key.
 */
export function clientKey(address: string): string {
  if (isIPv4(address)) return address;
  const groups = ipv6Groups(address);
  if (!groups) return address;
  // ::ffff:0:0/96
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [hi, lo] = [groups[6]!, groups[7]!];
    return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (a zone such as `%eth0` ignored), or null. */
function ipv6Groups(address: string): number[] | null {
  const bare = address.split('%')[0]!;
  if (!isIPv6(bare)) return null;
  let text = bare.toLowerCase();
  // a trailing dotted quad is the last two groups
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const front = parse(head);
  if (tail === undefined) return front;
  const back = parse(tail);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}
