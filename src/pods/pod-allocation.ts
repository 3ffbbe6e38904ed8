/**
 * A pod's allocation on its host: what it holds there (the same shape placement reserved at
 * create), and how a change of its ports or disk is re-reserved on that same host.
 */
import { ApiError } from '../domain/errors.js';
import type { Allocation, Inventory } from '../inventory/inventory.js';
import type { PodRecord, PortMapping } from '../store/pod-record.js';

/** The exact resources a pod holds on its host; the same shape placement reserved at create. */
export function allocationOf(
  pod: Pick<
    PodRecord,
    'hostId' | 'gpuIndices' | 'vcpuCount' | 'memoryGb' | 'disk' | 'mounts' | 'portMappings' | 'bidPerGpu'
  >,
): Allocation {
  return {
    hostId: pod.hostId ?? '',
    gpuIndices: pod.gpuIndices,
    vcpus: pod.vcpuCount,
    memoryGb: pod.memoryGb,
    diskGb: diskOf(pod),
    publicPorts: pod.portMappings.map((m) => m.public),
    // an interruptible pod's hold is one the reclaim ladder may take back (docs/pods.md)
    ...(pod.bidPerGpu !== null ? { reclaimable: { rung: 'interruptible', bidPerGpu: pod.bidPerGpu } } : {}),
  };
}

/** Container disk plus the persistent mount: what the host's disk gives the pod. */
export const diskOf = (pod: Pick<PodRecord, 'disk' | 'mounts'>): number =>
  pod.disk + (pod.mounts.persistent?.size ?? 0);

/** Private port and protocol of each `<port>/<protocol>`. */
export const parsePorts = (ports: string[]): Array<{ private: number; type: string }> =>
  ports.map((p) => {
    const [port, type] = p.split('/');
    return { private: Number(port), type: type ?? 'tcp' };
  });

/**
 * New public ports (and disk) for a pod whose ports or disk changed, on the same host. Ports that
 * stay keep their public port; new ones take the lowest free ports of the host's range. A pod
 * meant to run keeps the new reservation; a stopped one only records the mapping (start
 * reserves it). Synchronous: nothing else can touch the inventory between the steps.
 */
export function reallocateOnHost(
  inventory: Pick<Inventory, 'host' | 'allocationOf' | 'release' | 'reserveExact'>,
  pod: PodRecord,
  next: PodRecord,
): PortMapping[] {
  const host = pod.hostId ? inventory.host(pod.hostId) : undefined;
  if (!host) throw new ApiError('HOST_FULL', `Pod "${pod.id}" has no host to change its ports or disk on.`);
  const holding = inventory.allocationOf(pod.id) !== undefined;
  const previous = allocationOf(pod);
  const kept = new Map(pod.portMappings.map((m) => [`${m.private}/${m.type}`, m.public]));
  const wanted = parsePorts(next.ports);
  const mappings: Array<{ private: number; type: string; public: number | null }> = wanted.map((w) => ({
    ...w,
    public: kept.get(`${w.private}/${w.type}`) ?? null,
  }));
  const taken = new Set(mappings.map((m) => m.public).filter((p): p is number => p !== null));
  const attempt = (ports: number[]): boolean => {
    inventory.release(pod.id);
    return inventory.reserveExact(pod.id, { ...allocationOf(next), publicPorts: ports }).ok;
  };
  const restore = (): void => {
    inventory.release(pod.id);
    if (holding) inventory.reserveExact(pod.id, previous);
  };
  const chosen = (): number[] => mappings.map((m) => m.public).filter((p): p is number => p !== null);
  if (!attempt(chosen())) {
    restore();
    throw new ApiError(
      'HOST_FULL',
      `Host "${host.id}" of pod "${pod.id}" lacks the resources for the change (disk ${diskOf(next)} GB or its ports).`,
    );
  }
  for (const m of mappings) {
    if (m.public !== null) continue;
    for (let port = host.portRange[0]; port <= host.portRange[1]; port++) {
      if (taken.has(port)) continue;
      if (attempt([...chosen(), port])) {
        m.public = port;
        taken.add(port);
        break;
      }
    }
    if (m.public === null) {
      restore();
      throw new ApiError(
        'HOST_FULL',
        `Host "${host.id}" of pod "${pod.id}" has no free public port for ${m.private}/${m.type}.`,
      );
    }
  }
  if (!holding) inventory.release(pod.id);
  return mappings as PortMapping[];
}
