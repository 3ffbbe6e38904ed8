/**
 * Who a proxied request comes from, behind a reverse proxy (`server.trustedProxies`,
 * docs/deploy.md "HTTPS"): the pod proxy and the load balancer tell the pod or worker the client's
 * address and scheme (`X-Forwarded-For`, `X-Forwarded-Proto`). From a peer that is not a trusted
 * proxy, those are the connection's own and whatever the request says is ignored (a client
 * cannot pose as another address). From a trusted one, the client is the right-most address of
 * `X-Forwarded-For` that is not itself a trusted proxy, and the scheme the one the nearest proxy
 * says (`X-Forwarded-Proto`'s last value, when it is `http` or `https`) — the rule the main
 * listener follows (Fastify's `trustProxy` with the same list).
 */
import type { IncomingMessage } from 'node:http';
import { BlockList, isIPv4, isIPv6 } from 'node:net';

export interface ForwardedClient {
  clientAddress: string;
  proto: 'http' | 'https';
}

/** `::ffff:203.0.113.7` as `203.0.113.7`; an IPv6 zone dropped. */
function plain(address: string): string {
  const bare = address.split('%')[0]!.trim();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  return mapped ? mapped[1]! : bare;
}

/** The peers whose forwarded headers are believed: addresses and CIDR ranges (checked by config-tls.ts). */
export class TrustedProxies {
  readonly #list = new BlockList();
  readonly #empty: boolean;

  constructor(entries: readonly string[]) {
    this.#empty = entries.length === 0;
    for (const entry of entries) {
      const [address, bits] = entry.split('/') as [string, string | undefined];
      const ip = plain(address);
      const type = isIPv4(ip) ? 'ipv4' : 'ipv6';
      if (bits === undefined) this.#list.addAddress(ip, type);
      else this.#list.addSubnet(ip, Number(bits), type);
    }
  }

  trusts(address: string): boolean {
    if (this.#empty) return false;
    const ip = plain(address);
    if (isIPv4(ip)) return this.#list.check(ip, 'ipv4');
    return isIPv6(ip) && this.#list.check(ip, 'ipv6');
  }

  /** The request's client and scheme, forwarded headers believed only from a trusted peer. */
  clientOf(req: IncomingMessage): ForwardedClient {
    const peer = plain(req.socket.remoteAddress ?? '');
    const own: ForwardedClient = {
      clientAddress: peer,
      proto: (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http',
    };
    if (!this.trusts(peer)) return own;
    let client = peer;
    const chain = headerValues(req.headers['x-forwarded-for']);
    for (let i = chain.length - 1; i >= 0 && this.trusts(client); i--) {
      const hop = plain(chain[i]!);
      // a hop that is no address ends the chain where it is: what is left of it is unproven
      if (!isIPv4(hop) && !isIPv6(hop)) break;
      client = hop;
    }
    const proto = headerValues(req.headers['x-forwarded-proto']).at(-1)?.toLowerCase();
    return { clientAddress: client, proto: proto === 'https' || proto === 'http' ? proto : own.proto };
  }
}

/** A header's comma-separated values, repeated lines joined in order. */
function headerValues(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value.join(',') : value)
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

/** Trusts no peer: every request's client is its connection's. */
export const NO_TRUSTED_PROXIES = new TrustedProxies([]);
