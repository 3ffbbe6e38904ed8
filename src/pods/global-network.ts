/**
 * Global networking addresses (spec 2.8): each globally-networked pod gets one IPv4 address from
 * the configured pool, the lowest one not held by another pod that is not TERMINATED.
 */
import { intToIpv4, ipv4ToInt } from '../domain/subnet-pool.js';

export interface AddressRange {
  /** first and last usable address, as 32-bit integers (network and broadcast excluded) */
  first: number;
  last: number;
}

/** Parses `a.b.c.d/len` (len 8-30) into its usable range. */
export function parsePool(cidr: string): AddressRange {
  const m = /^([\d.]+)\/(\d{1,2})$/.exec(cidr.trim());
  const base = m ? ipv4ToInt(m[1]!) : null;
  const len = m ? Number(m[2]) : NaN;
  if (base === null || !(len >= 8 && len <= 30))
    throw new Error(`Invalid global networking pool "${cidr}": expected an IPv4 CIDR such as 10.200.0.0/16`);
  const size = 2 ** (32 - len);
  const network = base - (base % size);
  return { first: network + 1, last: network + size - 2 };
}

/** The lowest address of the range not in `used`, or null when the pool is exhausted. */
export function lowestFreeAddress(range: AddressRange, used: ReadonlySet<string>): string | null {
  for (let n = range.first; n <= range.last; n++) {
    const ip = intToIpv4(n);
    if (!used.has(ip)) return ip;
  }
  return null;
}

/** `<pod_id>.<internalDomain>.internal` */
export const internalDns = (podId: string, internalDomain: string): string => `${podId}.${internalDomain}.internal`;

/**
 * The in-memory view of which addresses are taken. It is loaded once from the store (addresses of
 * pods that are not TERMINATED) and then kept in step by allocate/release.
 */
export class GlobalAddressPool {
  readonly #range: AddressRange;
  readonly #used = new Set<string>();
  #loading: Promise<void> | null = null;

  constructor(
    cidr: string,
    private readonly loadUsed: () => Promise<string[]>,
  ) {
    this.#range = parsePool(cidr);
  }

  async #ready(): Promise<void> {
    this.#loading ??= this.loadUsed().then((ips) => {
      for (const ip of ips) this.#used.add(ip);
    });
    await this.#loading;
  }

  /** Takes the lowest free address; null when the pool is exhausted. */
  async allocate(): Promise<string | null> {
    await this.#ready();
    const ip = lowestFreeAddress(this.#range, this.#used);
    if (ip !== null) this.#used.add(ip);
    return ip;
  }

  release(ip: string | null): void {
    if (ip !== null) this.#used.delete(ip);
  }
}
