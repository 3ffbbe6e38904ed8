/**
 * The user-defined bridge networks instances of one private network share (`spec.network`):
 * `gantry-<namespace>-<name>`, made on first use and labelled.
 */
import { DockerEngineError } from './engine-connection.js';
import type { DockerClient } from './docker-client.js';
import { LABEL, namespaceFilter, networkNameOf } from './docker-names.js';
import type { NetworkInspect } from './engine-types.js';

export interface JoinedNetwork {
  name: string;
  /** whether the instance's fixed IP may be asked for on it */
  fixedIp: boolean;
}

/**
 * Finds or makes the network. A fixed IP is asked for only where the engine takes one: on a
 * network with a subnet its maker configured, containing the IP. The networks made here have the
 * engine's own subnet (any fixed one could collide with another installation's), so the IP is
 * kept only on a network an operator made beforehand, under that name, with a subnet — or on a
 * cluster's network, made with the cluster's own `subnet` (docs/clusters.md).
 */
export async function ensureNetwork(
  client: DockerClient,
  namespace: string,
  network: { name: string; ip: string | null; subnet?: string },
): Promise<JoinedNetwork> {
  const name = networkNameOf(namespace, network.name);
  let info = await client.inspectNetwork(name);
  if (!info) {
    try {
      await client.createNetwork(
        name,
        { [LABEL.namespace]: namespace, 'gantry.network': network.name },
        network.subnet,
      );
    } catch (err) {
      // Made by a concurrent start in between: use it.
      if (!(err instanceof DockerEngineError && err.statusCode === 409)) throw err;
    }
    info = await client.inspectNetwork(name);
    if (!info) throw new Error(`network "${name}" was removed as it was being made`);
  }
  return {
    name,
    fixedIp:
      network.ip !== null &&
      (madeElsewhere(info, namespace) || network.subnet !== undefined) &&
      (info.IPAM.Config ?? []).some((c) => c.Subnet !== undefined && ipv4InCidr(network.ip!, c.Subnet)),
  };
}

const madeElsewhere = (info: NetworkInspect, namespace: string): boolean =>
  info.Labels?.[LABEL.namespace] !== namespace;

/** Whether IPv4 `ip` lies in `cidr` (`10.200.0.0/16`); false for anything that is not IPv4. */
function ipv4InCidr(ip: string, cidr: string): boolean {
  const [base, bitsText] = cidr.split('/');
  const bits = Number(bitsText);
  const a = ipv4(ip);
  const b = ipv4(base ?? '');
  if (a === null || b === null || !Number.isInteger(bits) || bits < 0 || bits > 32) return false;
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  return (a & mask) >>> 0 === (b & mask) >>> 0;
}

function ipv4(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return null;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

/**
 * Removes the namespace's cluster networks (`cluster-<id>`, docs/clusters.md) no container uses
 * any more: called after an instance is removed, so a deleted cluster's network goes with its last
 * member. One still in use is refused by the engine and kept.
 */
export async function removeUnusedClusterNetworks(client: DockerClient, namespace: string): Promise<void> {
  const networks = await client.listNetworks(namespaceFilter(namespace));
  for (const n of networks) {
    if (!n.Labels?.['gantry.network']?.startsWith('cluster-')) continue;
    try {
      await client.removeNetwork(n.Id);
    } catch (err) {
      // 403 "has active endpoints": another member still runs on it
      if (!(err instanceof DockerEngineError)) throw err;
    }
  }
}
