/**
 * What keeps accounts apart on one engine besides each container's own hardening: the account
 * networks (instance-networks.ts), the container firewall installed on the engine's host
 * (container-firewall.ts), and, at attach, the containers an earlier version left on the shared
 * bridge (legacy-containers.ts). It also keeps what could not be put in place, for
 * `Runtime.isolationGaps()`.
 */
import type { Logger } from 'pino';
import { parseSubnetPool } from '../../domain/subnet-pool.js';
import type { SamplerTimers } from '../interval-sampler.js';
import type { IsolationGap } from '../runtime.js';
import { ContainerFirewall } from './container-firewall.js';
import type { DockerClient } from './docker-client.js';
import type { DockerRuntimeOptions } from './docker-runtime-options.js';
import type { ContainerSummary } from './engine-types.js';
import { firewallDestinations } from './firewall-destinations.js';
import type { AllowedDestination } from './firewall-rules.js';
import { bridgePrefixOf, InstanceNetworks, namespaceTag } from './instance-networks.js';
import { adoptLegacy } from './legacy-containers.js';

/** Where account networks take their subnets, unless configured: 4,096 networks of /24. */
const DEFAULT_NETWORK_POOL = { pool: '10.224.0.0/12', subnetPrefix: 24 };

export class AccountSeparation {
  /** The account networks; null only when a test takes that defence away. */
  readonly networks: InstanceNetworks | null;
  readonly #namespace: string;
  readonly #client: DockerClient;
  readonly #logger: Logger;
  readonly #firewall: ContainerFirewall | null;
  readonly #operatorAllow: readonly AllowedDestination[];
  /** Bridges of networks an earlier version made (the firewall names them one by one). */
  #legacyBridges: string[] = [];
  /** The job API, let through the firewall once its address is known. */
  #jobDestinations: AllowedDestination[] = [];
  /** Why the firewall is not in place, when it could not be installed. */
  #firewallGap: string | null = null;
  /** Instances an earlier version started that are still on a network accounts share. */
  #sharedGaps: string[] = [];
  #attached = false;

  constructor(
    options: Pick<DockerRuntimeOptions, 'networks' | 'firewall' | 'isolation'> & {
      client: DockerClient;
      namespace: string;
      logger: Logger;
      timers?: SamplerTimers;
    },
  ) {
    this.#client = options.client;
    this.#namespace = options.namespace;
    this.#logger = options.logger;
    const pool: NonNullable<DockerRuntimeOptions['networks']> = options.networks ?? DEFAULT_NETWORK_POOL;
    this.networks =
      options.isolation?.accountNetworks === false
        ? null
        : new InstanceNetworks({
            client: options.client,
            namespace: options.namespace,
            pool: parseSubnetPool(pool.pool, pool.subnetPrefix),
            logger: options.logger,
            ...(pool.emptyGraceMs !== undefined ? { emptyGraceMs: pool.emptyGraceMs } : {}),
            ...(options.timers ? { timers: options.timers } : {}),
          });
    this.#firewall = options.firewall ? new ContainerFirewall({ command: options.firewall.command }) : null;
    this.#operatorAllow = options.firewall?.allow ?? [];
  }

  /**
   * At attach, with the installation's containers as the engine lists them: its networks read,
   * an earlier version's containers moved off the shared bridge, the firewall installed.
   */
  async attach(containers: readonly ContainerSummary[]): Promise<void> {
    this.#legacyBridges = (await this.networks?.load()) ?? [];
    const legacy = await adoptLegacy(containers, {
      client: this.#client,
      networks: this.networks,
      namespace: this.#namespace,
      logger: this.#logger,
    });
    this.#sharedGaps = legacy.shared.map(
      ({ id, reason }) => `instance ${id} is still on a network accounts share (${reason})`,
    );
    await this.installFirewall();
    this.#attached = true;
  }

  gaps(): IsolationGap[] {
    return [
      ...(this.#firewallGap ? [{ kind: 'firewall' as const, detail: this.#firewallGap }] : []),
      ...this.#sharedGaps.map((detail) => ({ kind: 'shared-network' as const, detail })),
    ];
  }

  /** The job API's URLs let through the firewall; before attach only noted (attach installs the rules). */
  async allowJobUrls(urls: readonly string[]): Promise<void> {
    const resolved = await Promise.all(
      urls.map((url) =>
        // A name that does not resolve now lets nothing through for it (a public address needs no
        // entry: the internet is reached); it is resolved again when the URL is given again.
        firewallDestinations(url).catch((err: unknown) => {
          this.#logger.warn({ err, url }, "cannot resolve the job API's address for the container firewall");
          return [];
        }),
      ),
    );
    this.#jobDestinations = resolved.flat();
    if (this.#attached) await this.installFirewall();
  }

  /** Installs (or refreshes) the firewall; a failure is kept as a gap in the isolation and logged. */
  async installFirewall(): Promise<void> {
    if (!this.#firewall) return;
    try {
      await this.#firewall.install({
        tag: namespaceTag(this.#namespace),
        bridgePrefix: bridgePrefixOf(this.#namespace),
        legacyBridges: this.#legacyBridges,
        allow: [...this.#jobDestinations, ...this.#operatorAllow],
      });
      if (this.#firewallGap) this.#logger.info('the container firewall is installed');
      this.#firewallGap = null;
    } catch (err) {
      this.#firewallGap = `the container firewall could not be installed (${(err as Error).message})`;
      this.#logger.error(
        { err },
        'cannot install the container firewall: containers can reach the services of their host',
      );
    }
  }

  close(): void {
    this.networks?.close();
  }
}
