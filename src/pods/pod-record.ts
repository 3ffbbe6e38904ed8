/**
 * A new pod as it is stored: its settings, where placement put it, its platform env, and what it
 * costs an hour there; and what placement is asked for it.
 */
import type { Catalog } from '../domain/catalog.js';
import type { ClusterMember } from '../domain/cluster.js';
import { bidCostPerHour, costPerHour } from '../domain/cost.js';
import { newId } from '../domain/ids.js';
import type { Placement, PlacementRequest } from '../domain/placement-request.js';
import type { PodRecord, PortMapping } from '../store/pod-record.js';
import { diskOf, parsePorts } from './pod-allocation.js';
import type { PodSettings } from './pod-rules.js';

/** What a new pod is made of. */
export interface NewPod {
  id: string;
  accountId: string;
  settings: PodSettings;
  placement: Placement;
  volumeDataCenterId: string | null;
  /** What `injectedEnv` generated, and a cluster member's platform env. */
  hiddenEnv: Record<string, string>;
  globalIp: string | null;
  cluster: { id: string; member: ClusterMember } | null;
  now: number;
  catalog: Pick<Catalog, 'gpuTypes' | 'cpuFlavors'>;
}

/** The pod, PROVISIONING and meant to run, on the machine placement gave it. */
export function newPodRecord(input: NewPod): PodRecord {
  const { id, accountId, settings, placement, volumeDataCenterId, hiddenEnv, globalIp, cluster, now } = input;
  const compute = settings.compute;
  const portMappings: PortMapping[] = parsePorts(settings.ports).map((p, i) => ({
    ...p,
    public: placement.publicPorts[i]!,
  }));
  return {
    id,
    accountId,
    name: settings.name,
    status: 'PROVISIONING',
    desiredStatus: 'RUNNING',
    statusReason: null,
    image: settings.image,
    args: settings.args,
    disk: settings.disk,
    ports: settings.ports,
    env: settings.env,
    hiddenEnv,
    registry: settings.registry,
    gpuTypeId: compute.kind === 'gpu' ? compute.gpuTypeId : null,
    gpuCount: compute.kind === 'gpu' ? compute.count : 0,
    gpuIndices: placement.gpuIndices,
    cpuFlavorId: compute.kind === 'cpu' ? compute.flavorId : null,
    // a CPU pod's own; a GPU pod's allotment on the host it landed on (domain/gpu-allotment.ts)
    vcpuCount: placement.vcpus,
    memoryGb: placement.memoryGb,
    cloud: placement.cloud,
    dataCenterId: placement.dataCenterId,
    hostId: placement.hostId,
    cudaVersion: compute.kind === 'gpu' ? placement.cudaVersion : null,
    mounts: settings.mounts,
    portMappings,
    // No link to the template is retained (spec 2.1): it was a one-time source.
    templateId: null,
    locked: false,
    globalNetworking: settings.globalNetworking,
    globalIp,
    // an interruptible pod is billed at its bid (docs/pods.md)
    costPerHr:
      settings.bidPerGpu !== null && compute.kind === 'gpu'
        ? bidCostPerHour(settings.bidPerGpu, compute.count)
        : costPerHour(
            compute.kind === 'gpu'
              ? { kind: 'gpu', gpuTypeId: compute.gpuTypeId, gpuCount: compute.count, cloud: placement.cloud }
              : { kind: 'cpu', cpuFlavorId: compute.flavorId, vcpuCount: compute.vcpuCount, cloud: placement.cloud },
            input.catalog,
          ),
    bidPerGpu: settings.bidPerGpu,
    constraints: {
      dataCenterIds: settings.dataCenterIds,
      allowedCudaVersions: settings.allowedCudaVersions,
      minCudaVersion: settings.minCudaVersion,
      volumeDataCenterId,
    },
    cluster: cluster?.id ?? null,
    clusterMember: cluster?.member ?? null,
    createdAt: now,
    startedAt: null,
    updatedAt: now,
    statusChangedAt: now,
    terminatedAt: null,
    startSsh: settings.startSsh,
    // ≈134 bits: the proxy's routing token must not be guessable (docs/ssh.md)
    sshToken: newId(26),
  };
}

/** What placement needs from the pod's settings. */
export function placementRequest(
  settings: PodSettings,
  volumeDataCenterId: string | null,
  accountId?: string,
): PlacementRequest {
  const c = settings.compute;
  const terms = reclaimTerms(settings.bidPerGpu, accountId);
  // every key written out, none spread in: one object shape for placement's hot path
  return {
    kind: c.kind,
    gpuTypeIds: c.kind === 'gpu' ? [c.gpuTypeId] : [],
    gpuCount: c.kind === 'gpu' ? c.count : 0,
    cpuFlavorId: c.kind === 'cpu' ? c.flavorId : null,
    // a GPU pod's are the least it accepts: placement gives it its allotment on the host
    vcpuCount: c.kind === 'cpu' ? c.vcpuCount : c.minVcpus,
    memoryGb: c.kind === 'cpu' ? c.memoryGb : c.minMemoryGb,
    diskGb: diskOf(settings),
    cloud: settings.cloud,
    dataCenterIds: settings.dataCenterIds,
    volumeDataCenterId,
    allowedCudaVersions: settings.allowedCudaVersions,
    minCudaVersion: settings.minCudaVersion,
    portCount: settings.ports.length,
    globalNetworking: settings.globalNetworking,
    reclaim: terms.reclaim,
    reclaimable: terms.reclaimable,
  };
}

/**
 * What a pod's placement may take back and how its own hold may be taken back (docs/pods.md, the
 * reclaim ladder): an on-demand pod may take any reclaimable hold and is never taken back; an
 * interruptible one takes only lower bids and is itself reclaimable at its bid; both take suspended
 * workers, their own account's (`accountId`) first.
 */
const reclaimTerms = (
  bidPerGpu: number | null,
  accountId?: string,
): Pick<PlacementRequest, 'reclaim' | 'reclaimable'> =>
  bidPerGpu === null
    ? { reclaim: { kind: 'on-demand', accountId }, reclaimable: undefined }
    : { reclaim: { kind: 'bid', bidPerGpu, accountId }, reclaimable: { rung: 'interruptible', bidPerGpu } };
