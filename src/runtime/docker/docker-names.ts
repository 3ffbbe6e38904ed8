/**
 * What the Docker runtime names and labels: everything it makes carries the installation's
 * namespace in its name and in the `gantry.namespace` label, so installations (and test runs)
 * share one engine without touching each other's, and a restarted server finds its own.
 */
import type { InstanceOwner } from '../runtime.js';
import type { Labels } from './engine-types.js';
import type { Filters } from './engine-calls.js';

export const LABEL = {
  namespace: 'gantry.namespace',
  /** the instance id (a pod's or a worker's) */
  instance: 'gantry.instance',
  /** `pod` or `worker` */
  kind: 'gantry.kind',
  account: 'gantry.account',
  /** a worker's endpoint */
  endpoint: 'gantry.endpoint',
  host: 'gantry.host',
  /** a hash of what the container was created from: a kept container is reused only when it matches */
  spec: 'gantry.spec',
  /** a container's memory limit in bytes (0: none), for adopting it from a listing */
  memory: 'gantry.memory',
  /**
   * a container's disk (`diskGb`) in bytes where the storage driver cannot enforce it: the runtime
   * samples its writable layer against it (container-sampler.ts)
   */
  disk: 'gantry.disk',
  /** on volumes: `persistent` or `network` */
  volume: 'gantry.volume',
  /** on a network volume: its id */
  volumeId: 'gantry.volume-id',
  /** on a network: the name the runtime port gave it (`acct-<account>`, `cluster-<id>`) */
  network: 'gantry.network',
  /** on a container: made with the hardening of container-config.ts (no raw sockets, no-new-privileges) */
  hardened: 'gantry.hardened',
  /** on a private-image ledger entry (private-image-ledger.ts): the repository */
  privateImage: 'gantry.private-image',
} as const;

/** What the engine accepts in a container, volume or network name. */
const NAME_PART = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/** Refuses a namespace the engine could not carry in names (it is also a label value). */
export function checkNamespace(namespace: string): string {
  if (!NAME_PART.test(namespace) || namespace.length > 40)
    throw new Error(
      `the Docker namespace "${namespace}" must be 1-40 letters, digits, '_', '.' or '-', starting with a letter or digit`,
    );
  return namespace;
}

const part = (what: string, value: string): string => {
  if (!NAME_PART.test(value))
    throw new Error(`${what} "${value}" cannot be part of a Docker name (letters, digits, '_', '.', '-')`);
  return value;
};

export const containerNameOf = (namespace: string, id: string): string =>
  `gantry-${namespace}-${part('instance id', id)}`;
export const podVolumeNameOf = (namespace: string, id: string): string =>
  `gantry-${namespace}-pod-${part('instance id', id)}`;
export const networkVolumeNameOf = (namespace: string, volumeId: string): string =>
  `gantry-${namespace}-nv-${part('network volume id', volumeId)}`;
/** A user-defined bridge network; a name the engine would refuse has its other characters replaced by '-'. */
export const networkNameOf = (namespace: string, name: string): string =>
  `gantry-${namespace}-${name.replace(/[^a-zA-Z0-9_.-]/g, '-')}`;

/** The labels of everything made for `namespace`, as a list filter. */
export const namespaceFilter = (namespace: string): Filters => ({ label: [`${LABEL.namespace}=${namespace}`] });

/** The labels naming an instance and its owner (not the spec hash). */
export function instanceLabels(namespace: string, id: string, owner: InstanceOwner, hostId: string): Labels {
  const labels: Labels = {
    [LABEL.namespace]: namespace,
    [LABEL.instance]: id,
    [LABEL.kind]: owner.kind,
    [LABEL.account]: owner.accountId,
    [LABEL.host]: hostId,
  };
  if (owner.endpointId) labels[LABEL.endpoint] = owner.endpointId;
  return labels;
}

/** The owner a container was labelled with; null when the labels do not say. */
export function ownerOf(labels: Labels | null): InstanceOwner | null {
  const kind = labels?.[LABEL.kind];
  const accountId = labels?.[LABEL.account];
  if ((kind !== 'pod' && kind !== 'worker') || !accountId) return null;
  const endpointId = labels?.[LABEL.endpoint];
  return endpointId ? { kind, accountId, endpointId } : { kind, accountId };
}
