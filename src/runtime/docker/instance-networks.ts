/**
 * The networks instances live on. Accounts never share one: every instance joins its account's
 * network (`gantry-<namespace>-acct-<account>`, where its globally networked pods also answer to
 * their DNS names), or its cluster's (`…-cluster-<id>`, on the cluster's own subnet), so no L2
 * segment and, with Docker's isolation between bridges, no L3 path joins two accounts' containers.
 *
 * Each network is made on first use with a subnet from the configured pool (Docker's default
 * pools hold about 31 networks per engine) and a bridge named `g<tag><subnet in hex>`, so the
 * container firewall (firewall-rules.ts) covers every bridge of the installation with one
 * interface wildcard. It is removed once no container has referred to it for a grace period
 * (an account that creates a pod after its last one went pays no network again); making a
 * network, creating a container on it and removing it are kept apart, so a removal never pulls
 * the network from under a container being created.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { unrefTimers, type SamplerTimers } from '../interval-sampler.js';
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { freeSubnet, ipv4ToInt, parseCidr, type SubnetPool } from '../../domain/subnet-pool.js';
import { accountNetworkName, type InstanceSpec } from '../runtime.js';
import type { DockerClient } from './docker-client.js';
import { LABEL, namespaceFilter, networkNameOf } from './docker-names.js';
import { DockerEngineError } from './engine-connection.js';
import type { NetworkInspect } from './engine-types.js';

export interface JoinedNetwork {
  name: string;
  /** whether the instance's fixed IP may be asked for on it */
  fixedIp: boolean;
}

/** What an instance asks of its network: the runtime port's `network`, or its account's. */
type NetworkWish = NonNullable<InstanceSpec['network']>;

/** The engine's bridge-name option. */
const BRIDGE_NAME = 'com.docker.network.bridge.name';
/** Tries at making a network when another installation on the engine took the subnet meanwhile. */
const MAKE_ATTEMPTS = 8;

/** The installation's tag: chain names and bridge names carry it (5 hex digits of its namespace's hash). */
export const namespaceTag = (namespace: string): string =>
  createHash('sha256').update(namespace).digest('hex').slice(0, 5);

/** The interface-name prefix of every bridge the installation makes. */
export const bridgePrefixOf = (namespace: string): string => `g${namespaceTag(namespace)}`;

/** A bridge's name: the prefix and the subnet's first address in hex (14 characters; an interface takes 15). */
const bridgeNameOf = (namespace: string, subnet: string): string => {
  const base = ipv4ToInt(subnet.split('/')[0] ?? '') ?? 0;
  return `${bridgePrefixOf(namespace)}${base.toString(16).padStart(8, '0')}`;
};

/** The network `spec` joins: the one it names (a cluster's, or its account's for global networking), else its account's. */
function networkWish(spec: Pick<InstanceSpec, 'network' | 'owner'>): NetworkWish {
  return spec.network ?? { name: accountNetworkName(spec.owner.accountId), aliases: [], ip: null };
}

export class InstanceNetworks {
  readonly #client: DockerClient;
  readonly #namespace: string;
  readonly #pool: SubnetPool;
  readonly #logger: Logger;
  /** engine name → what is known of it (made or seen here) */
  readonly #known = new Map<string, NetworkInspect>();
  /** engine name → starts using it now (creating a container on it, or about to) */
  readonly #users = new Map<string, number>();
  /** engine name → its making or its removal, under way */
  readonly #busy = new Map<string, Promise<unknown>>();
  /** subnets of networks being made here, not yet listed by the engine */
  readonly #claimed = new Set<string>();
  /** engine name → the removal waiting out its grace (aborted when the network is joined again) */
  readonly #pending = new Map<string, AbortController>();
  readonly #emptyGraceMs: number;
  readonly #timers: SamplerTimers;

  constructor(options: {
    client: DockerClient;
    namespace: string;
    pool: SubnetPool;
    logger: Logger;
    /** How long a network no container refers to is kept before it is removed. @default 600000 */
    emptyGraceMs?: number;
    /** @default real timers that keep no process alive */
    timers?: SamplerTimers;
  }) {
    this.#client = options.client;
    this.#namespace = options.namespace;
    this.#pool = options.pool;
    this.#logger = options.logger;
    this.#emptyGraceMs = options.emptyGraceMs ?? 600_000;
    this.#timers = options.timers ?? unrefTimers;
  }

  /**
   * Runs `use` (the container's create) with the network `spec` joins made and known. Uses run
   * side by side; a removal waits for none of them but is skipped while any runs, and a use that
   * comes during a removal waits for it and makes the network again.
   */
  async join<T>(spec: Pick<InstanceSpec, 'network' | 'owner'>, use: (joined: JoinedNetwork) => Promise<T>): Promise<T> {
    const wish = networkWish(spec);
    const name = networkNameOf(this.#namespace, wish.name);
    for (let busy = this.#busy.get(name); busy; busy = this.#busy.get(name)) await busy.catch(() => undefined);
    this.#users.set(name, (this.#users.get(name) ?? 0) + 1);
    // Used again: its removal is off (the next release schedules another).
    this.#pending.get(name)?.abort();
    this.#pending.delete(name);
    try {
      const info =
        this.#known.get(name) ??
        (await this.#exclusive(
          name,
          async () => this.#known.get(name) ?? this.#findOrMake(name, wish, spec.owner.accountId),
        ));
      return await use({ name, fixedIp: fixedIpFits(info, wish, this.#namespace) });
    } finally {
      const left = (this.#users.get(name) ?? 1) - 1;
      if (left > 0) this.#users.set(name, left);
      else this.#users.delete(name);
    }
  }

  /** Forgets what is known of `name` (the engine said it is gone): the next join looks again. */
  forget(name: string): void {
    this.#known.delete(name);
  }

  /**
   * Removes the networks among `names` once no container has referred to them for the grace
   * period (a stopped container still does: its next start would need it). One used meanwhile
   * stays; an engine refusal is only logged.
   */
  async release(names: Iterable<string>): Promise<void> {
    for (const name of names) {
      if (!name.startsWith(`gantry-${this.#namespace}-`) || this.#pending.has(name)) continue;
      // A network on a subnet of another pool (a cluster's, which a new cluster may be handed next;
      // one an earlier version made) goes at once.
      if (this.#emptyGraceMs <= 0 || !this.#fromPool(this.#known.get(name))) {
        await this.#removeIfUnused(name);
        continue;
      }
      const abort = new AbortController();
      this.#pending.set(name, abort);
      void this.#timers.sleep(this.#emptyGraceMs, abort.signal).then(async () => {
        // Joined again meanwhile, or the runtime closed: nothing to remove.
        if (abort.signal.aborted) return;
        this.#pending.delete(name);
        await this.#removeIfUnused(name).catch((err: unknown) =>
          this.#logger.warn({ err, network: name }, 'cannot remove a network no instance uses'),
        );
      });
    }
  }

  /** Whether the network's subnet was taken from this installation's pool. */
  #fromPool(info: NetworkInspect | undefined): boolean {
    const range = parseCidr(info?.IPAM.Config?.[0]?.Subnet ?? '');
    const size = 2 ** (32 - this.#pool.poolPrefix);
    return range !== null && range.first >= this.#pool.base && range.last < this.#pool.base + size;
  }

  /** Drops the removals waiting out their grace (the runtime detaches: the next attach looks again). */
  close(): void {
    for (const abort of this.#pending.values()) abort.abort();
    this.#pending.clear();
  }

  async #removeIfUnused(name: string): Promise<void> {
    if (this.#users.has(name) || this.#busy.has(name)) return;
    await this.#exclusive(name, async () => {
      const users = await this.#client.listContainers({ all: true, filters: { network: [name] } });
      if (users.length > 0) return;
      try {
        await this.#client.removeNetwork(name);
        this.#logger.debug({ network: name }, 'removed a network no instance uses');
      } catch (err) {
        if (!(err instanceof DockerEngineError)) throw err;
        this.#logger.warn({ err, network: name }, 'cannot remove a network no instance uses');
      }
      this.#known.delete(name);
    });
  }

  /** Runs `work` as the one making or removal of `name`; a second making joins the first. */
  #exclusive<T>(name: string, work: () => Promise<T>): Promise<T> {
    const running = this.#busy.get(name);
    if (running) return running as Promise<T>;
    const run = work().finally(() => this.#busy.delete(name));
    this.#busy.set(name, run);
    return run;
  }

  /**
   * Reads the installation's networks (at attach): they are joined without asking the engine again,
   * and those no container refers to are removed after the grace period. Answers the bridges of networks an earlier version
   * made (named by the engine, `br-…`), which the firewall lists one by one.
   */
  async load(): Promise<string[]> {
    const networks = await this.#client.listNetworks(namespaceFilter(this.#namespace));
    for (const n of networks) this.#known.set(n.Name, n);
    await this.release(networks.map((n) => n.Name));
    const ours = bridgePrefixOf(this.#namespace);
    return [...this.#known.values()].map(bridgeOf).filter((bridge) => !bridge.startsWith(ours));
  }

  async #findOrMake(name: string, wish: NetworkWish, accountId: string): Promise<NetworkInspect> {
    const found = await this.#client.inspectNetwork(name);
    if (found) {
      this.#known.set(name, found);
      return found;
    }
    // Subnets the engine refused to this making: another installation's network on the engine
    // holds them, possibly one still being made, which the engine's list does not show yet.
    const refused: string[] = [];
    for (let attempt = 1; ; attempt++) {
      const subnet = wish.subnet ?? (await this.#freeSubnet(name, refused));
      this.#claimed.add(subnet);
      try {
        await this.#client.createNetwork(
          name,
          {
            [LABEL.namespace]: this.#namespace,
            [LABEL.network]: wish.name,
            [LABEL.account]: accountId,
          },
          { subnet, bridge: bridgeNameOf(this.#namespace, subnet) },
        );
      } catch (err) {
        if (!(err instanceof DockerEngineError)) throw err;
        // Made by another start meanwhile (409), or the subnet taken by another installation
        // sharing the engine: look again.
        const made = await this.#client.inspectNetwork(name);
        if (made) {
          this.#known.set(name, made);
          return made;
        }
        if (wish.subnet !== undefined || attempt >= MAKE_ATTEMPTS || !/overlap|in use|exists/i.test(err.engineMessage))
          throw err;
        refused.push(subnet);
        continue;
      } finally {
        this.#claimed.delete(subnet);
      }
      const made = await this.#client.inspectNetwork(name);
      if (!made) throw new Error(`network "${name}" was removed as it was being made`);
      this.#known.set(name, made);
      this.#logger.info({ network: name, subnet }, 'made a network');
      return made;
    }
  }

  /**
   * A subnet of the pool no network on the engine overlaps, no route of this machine overlaps
   * (another engine's bridges, the LAN: a bridge there would take their traffic), none being made
   * here and none in `refused`, probing from a spot the name decides.
   */
  async #freeSubnet(name: string, refused: readonly string[]): Promise<string> {
    const all = await this.#client.listNetworks({});
    const taken = all.flatMap((n) => (n.IPAM.Config ?? []).flatMap((c) => (c.Subnet ? [c.Subnet] : [])));
    taken.push(...hostSubnets(), ...this.#claimed, ...refused);
    const start = createHash('sha256').update(name).digest().readUInt32BE(0);
    const subnet = freeSubnet(this.#pool, taken, start);
    if (subnet === null)
      throw new Error(
        `no free subnet for network "${name}": the pool's ${this.#pool.count} subnets are all in use on this engine (runtime.docker.networks.pool)`,
      );
    return subnet;
  }
}

/**
 * The IPv4 subnets this machine routes to (another engine's bridges, the LAN), read from the
 * kernel's table (`/proc/net/route`: a bridge without a container is listed there while its
 * interface is not); where that table cannot be read, its interfaces' subnets. The default route
 * aside.
 */
function hostSubnets(): string[] {
  let table: string;
  try {
    table = readFileSync('/proc/net/route', 'utf8');
  } catch {
    return Object.values(networkInterfaces()).flatMap((addresses) =>
      (addresses ?? []).flatMap((a) => (a.family === 'IPv4' && !a.internal && a.cidr ? [a.cidr] : [])),
    );
  }
  // columns: Iface Destination Gateway Flags RefCnt Use Metric Mask …, addresses in hex, host byte order
  const dotted = (hex: string): string => {
    const v = Number.parseInt(hex, 16);
    return [v & 255, (v >>> 8) & 255, (v >>> 16) & 255, (v >>> 24) & 255].join('.');
  };
  const out: string[] = [];
  for (const line of table.split('\n').slice(1)) {
    const [, destination, , , , , , mask] = line.trim().split(/\s+/);
    if (!destination || !mask || !/^[0-9A-Fa-f]{8}$/.test(destination) || !/^[0-9A-Fa-f]{8}$/.test(mask)) continue;
    const bits = dotted(mask)
      .split('.')
      .reduce((n, octet) => n + (Number(octet).toString(2).match(/1/g)?.length ?? 0), 0);
    if (bits > 0) out.push(`${dotted(destination)}/${bits}`);
  }
  return out;
}

/** A network's bridge: the name it was made with, else the engine's own (`br-` and 12 digits of its id). */
const bridgeOf = (n: NetworkInspect): string => n.Options?.[BRIDGE_NAME] ?? `br-${n.Id.slice(0, 12)}`;

/**
 * Whether the instance's fixed IP may be asked for: only on a network with a subnet containing it
 * that its maker chose for that purpose — a cluster's (made with the cluster's subnet), or one an
 * operator made beforehand under that name. An account network's subnet comes from the pool, which
 * global networking addresses are not drawn from.
 */
function fixedIpFits(info: NetworkInspect, wish: NetworkWish, namespace: string): boolean {
  if (wish.ip === null) return false;
  const chosen = info.Labels?.[LABEL.namespace] !== namespace || wish.subnet !== undefined;
  const ip = ipv4ToInt(wish.ip);
  return (
    chosen &&
    ip !== null &&
    (info.IPAM.Config ?? []).some((c) => {
      const range = c.Subnet ? parseCidr(c.Subnet) : null;
      return range !== null && ip >= range.first && ip <= range.last;
    })
  );
}
