/**
 * Which registries a tenant's image may be pulled from (`runtime.docker.registries`). The Docker
 * Engine pulls from the host's own network, and treats registries on 127.0.0.0/8 as plain-HTTP
 * "insecure" registries by default: an image named `127.0.0.1:5000/x`, `localhost:8080/x`,
 * `169.254.169.254/x` or `[::1]:5000/x` would make the engine send requests into the host's
 * loopback services, the cloud metadata endpoint or the operator's network on a tenant's behalf.
 *
 * The rule, in order:
 * 1. a registry matching an `allow` entry is allowed (the operator's word);
 * 2. with `only`, every other registry is refused;
 * 3. with `private: refuse` (the default), a registry that is not a public host is refused:
 *    `localhost` and `*.localhost`, an IP literal in a non-public range (ip-address.ts, every numeric
 *    spelling of IPv4 included), or a host name that resolves to such an address
 *    ({@link judgeResolved}; the caller resolves it).
 * Docker Hub (`docker.io`, what a reference naming no registry pulls from) is public without a lookup.
 *
 * Pure: the caller does the DNS lookup. What a refusal says names the registry and why, never the
 * address a host name resolved to (a tenant must not map the operator's DNS through refusals).
 */
import { isIP } from 'node:net';
import { nonPublicKind } from './ip-address.js';
import { DOCKER_HUB, parseRegistryHost, registryText, type RegistryHost } from './image-ref.js';

/** `runtime.docker.registries`. */
export interface RegistryPolicyConfig {
  /**
   * Registries always allowed, even on a private address: `host` (no port in the reference),
   * `host:port`, `[ipv6]:port`, or `*.domain` (any name under it; `*.domain:port` with that port).
   * Compared case-insensitively. @default []
   */
  allow: string[];
  /** Allow only the registries in `allow` (list `docker.io` to keep Docker Hub). @default false */
  only: boolean;
  /**
   * `refuse`: registries on loopback, private, link-local, carrier-grade-NAT, unique-local,
   * unspecified, multicast and other non-public addresses are refused unless in `allow`; `allow`:
   * they are not checked (a single trusted user). @default "refuse"
   */
  private: 'refuse' | 'allow';
}

export const DEFAULT_REGISTRY_POLICY: Readonly<RegistryPolicyConfig> = Object.freeze({
  allow: [],
  only: false,
  private: 'refuse',
});

/** Where an operator allows a registry (named in refusals). */
const ALLOW_SETTING = 'runtime.docker.registries.allow';

export type RegistryJudgement =
  | { verdict: 'allowed' }
  /** `reason` completes "its registry …"; `fix` says what would allow it. */
  | { verdict: 'refused'; reason: string; fix: string }
  /** A host name: allowed unless it resolves to a non-public address (see {@link judgeResolved}). */
  | { verdict: 'resolve'; host: string };

interface Pattern {
  /** `example.com` for `*.example.com`; the whole host otherwise */
  host: string;
  wildcard: boolean;
  port: number | null;
}

/** An allow entry, or why it cannot be one. */
export function parseRegistryPattern(text: string): Pattern | string {
  const wildcard = text.startsWith('*.');
  const parsed = parseRegistryHost(wildcard ? text.slice(2) : text);
  if (!parsed) return `"${text}" is not a registry: write host, host:port, [ipv6]:port or *.domain`;
  if (wildcard && (parsed.bracketed || isIP(parsed.host) !== 0))
    return `"${text}": a wildcard goes before a domain name, not an address`;
  return { host: parsed.host, wildcard, port: parsed.port };
}

const matches = (p: Pattern, r: RegistryHost): boolean =>
  p.port === r.port && (p.wildcard ? r.host.endsWith(`.${p.host}`) : r.host === p.host);

const ALLOW_FIX = `an operator can allow it with ${ALLOW_SETTING}`;
/** Why a non-public registry matters, in a refusal. */
const REACH = "and the Docker Engine would reach it from the host's own network";

/** How a registry is judged before any lookup: allowed, refused, or to be resolved. */
export function judgeRegistry(registry: string, policy: RegistryPolicyConfig): RegistryJudgement {
  const parsed = parseRegistryHost(registry);
  if (!parsed)
    return {
      verdict: 'refused',
      reason: `"${registry}" is not a valid registry host`,
      fix: 'name a registry as host, host:port or [ipv6]:port',
    };
  const patterns = policy.allow.map(parseRegistryPattern).filter((p): p is Pattern => typeof p !== 'string');
  if (patterns.some((p) => matches(p, parsed))) return { verdict: 'allowed' };
  const text = registryText(parsed);
  if (policy.only)
    return {
      verdict: 'refused',
      reason: `${text} is not one of the registries this server pulls from`,
      fix: `an operator can add it to ${ALLOW_SETTING}`,
    };
  if (policy.private === 'allow' || text === DOCKER_HUB) return { verdict: 'allowed' };
  const { host } = parsed;
  if (host === 'localhost' || host.endsWith('.localhost'))
    return { verdict: 'refused', reason: `${text} names the Docker host itself (loopback), ${REACH}`, fix: ALLOW_FIX };
  const literal = addressOf(parsed);
  if (literal === null) return { verdict: 'resolve', host };
  const kind = nonPublicKind(literal);
  return kind === null
    ? { verdict: 'allowed' }
    : { verdict: 'refused', reason: `${text} is not a public address (${kind}), ${REACH}`, fix: ALLOW_FIX };
}

/**
 * A host name's verdict once resolved: refused when any of its addresses is not public (the
 * engine may connect to any of them). No address (it did not resolve) is allowed: the pull fails
 * with its own reason.
 */
export function judgeResolved(registry: string, addresses: readonly string[]): RegistryJudgement {
  const kind = addresses.map(nonPublicKind).find((k) => k !== null);
  if (kind === undefined) return { verdict: 'allowed' };
  return {
    verdict: 'refused',
    reason: `host ${registry} resolves to an address that is not public (${kind}), ${REACH}`,
    fix: ALLOW_FIX,
  };
}

/**
 * The address a registry host is written as, or null for a name. Every numeric spelling of an
 * IPv4 address (`2130706433`, `0x7f.1`, `127.1`) counts as that address, as the system resolver
 * reads it: the URL parser applies the same rules and answers the dotted quad.
 */
function addressOf(r: RegistryHost): string | null {
  if (r.bracketed || isIP(r.host) !== 0) return r.host;
  let hostname: string;
  try {
    hostname = new URL(`http://${r.host}/`).hostname;
  } catch {
    return null;
  }
  return isIP(hostname) === 4 ? hostname : null;
}
