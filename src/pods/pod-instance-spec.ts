import { instanceSpec } from '../instances/instance-spec.js';
import { accountNetworkName, type InstanceSpec, type VolumeSource } from '../runtime/runtime.js';
import type { PodRecord } from '../store/pod-record.js';
import { internalDns } from './global-network.js';

export interface PodInstanceDeps {
  /** The credentials of the pod's registry, when it names one. */
  registryAuth: { username: string; password: string } | null;
  /** `<pod_id>.<internalDomain>.internal` names a globally networked pod on its account's network. */
  internalDomain: string;
}

/**
 * A cluster's private network (docs/clusters.md): its members answer at their overlay address
 * (on a runtime that can fix one) and to `node-<rank>`.
 */
function clusterNetwork(clusterId: string, rank: number | null, ip: string): NonNullable<InstanceSpec['network']> {
  return {
    name: `cluster-${clusterId}`,
    aliases: rank === null ? [] : [`node-${rank}`],
    ip,
    subnet: `${ip.split('.').slice(0, 3).join('.')}.0/24`,
  };
}

/**
 * The instance a pod runs as: its image, args, the tenant's env and the platform's (identity,
 * placement, and the hidden env startSsh / startJupyter injected — a runtime screens only the
 * tenant's, and the platform's wins), its machine assignment, ports, volumes (named by source: the
 * runtime decides where their data lives), registry credentials, and, with global networking,
 * its account's network, where it answers to its internal DNS name at its global address.
 */
export function podInstanceSpec(pod: PodRecord, deps: PodInstanceDeps): InstanceSpec {
  const volumes: VolumeSource[] = [];
  if (pod.mounts.persistent) volumes.push({ kind: 'persistent', path: pod.mounts.persistent.path });
  for (const m of pod.mounts.network ?? []) volumes.push({ kind: 'network', volumeId: m.volumeId, path: m.path });
  return instanceSpec({
    id: pod.id,
    owner: { kind: 'pod', accountId: pod.accountId },
    image: pod.image,
    args: pod.args,
    env: pod.env,
    // hiddenEnv holds only what injectedEnv generated (a tenant's own PUBLIC_KEY or
    // JUPYTER_PASSWORD stays in env, and is screened as theirs)
    platformEnv: { ...pod.hiddenEnv, RUNPOD_POD_ID: pod.id },
    machine: {
      hostId: pod.hostId ?? '',
      dataCenterId: pod.dataCenterId ?? '',
      gpuIndices: pod.gpuIndices,
      vcpus: pod.vcpuCount,
      memoryGb: pod.memoryGb,
      diskGb: pod.disk,
    },
    ports: pod.portMappings.map((m) => ({ private: m.private, public: m.public, protocol: m.type })),
    volumes,
    registryAuth: deps.registryAuth,
    network:
      pod.cluster !== null && pod.clusterMember?.ip
        ? clusterNetwork(pod.cluster, pod.clusterMember.rank, pod.clusterMember.ip)
        : pod.globalNetworking
          ? {
              name: accountNetworkName(pod.accountId),
              aliases: [internalDns(pod.id, deps.internalDomain)],
              ip: pod.globalIp,
            }
          : null,
    networkMode: 'default',
  });
}
