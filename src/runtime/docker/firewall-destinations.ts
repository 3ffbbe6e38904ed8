/**
 * The firewall entries that let containers reach a URL (the job API): each IPv4 address its host
 * resolves to, on its port. Resolved when the rules are installed; a name whose addresses change
 * later is followed at the next install (each reconnect to the engine, each change of the URL).
 */
import { lookup } from 'node:dns/promises';
import { isIPv4 } from 'node:net';
import type { AllowedDestination } from './firewall-rules.js';

export type ResolveHost = (host: string) => Promise<string[]>;

const resolveIpv4: ResolveHost = async (host) => (await lookup(host, { all: true, family: 4 })).map((a) => a.address);

export async function firewallDestinations(
  url: string,
  resolve: ResolveHost = resolveIpv4,
): Promise<AllowedDestination[]> {
  const parsed = new URL(url);
  const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIPv4(host) ? [host] : host.includes(':') ? [] : await resolve(host);
  return [...new Set(addresses)].map((ip) => ({ cidr: `${ip}/32`, port }));
}
