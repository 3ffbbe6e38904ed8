/**
 * What a worker the autoscaler launches asks for, from its endpoint and template: where it may be
 * placed, and the instance the runtime starts once it is (image, env, GPUs, volume).
 */
import type { Catalog } from '../domain/catalog.js';
import { placedCostPerHour } from '../domain/cost.js';
import type { Placement, PlacementRequest } from '../domain/placement-request.js';
import { workerNetworkMode } from '../domain/worker-network.js';
import type { InstanceSpec, VolumeSource } from '../runtime/runtime.js';
import type { WorkerAllocation, WorkerUsageStart } from '../store/autoscaler-store.js';
import type { Template } from '../domain/template.js';
import type { Endpoint } from '../domain/endpoint.js';
import { instanceSpec } from '../instances/instance-spec.js';
import { cpuInstancesOf, inLocations } from '../domain/endpoint-compute.js';
import { workerEnvironment } from './worker-env.js';
import { lbListenPorts, lbWorkerPorts } from './lb-worker-ports.js';

/** The ports a worker of the endpoint listens on: a load-balancing endpoint's `PORT` (and `PORT_HEALTH`); none for a queue's. */
const listenPortsOf = (endpoint: Endpoint, template: Template): number[] =>
  endpoint.type === 'LB' ? lbListenPorts(lbWorkerPorts(endpoint, template)) : [];

/**
 * The placements one worker may take, in preference order: a GPU endpoint's one (any GPU type of
 * its pools), a CPU endpoint's one per CPU instance (its flavor, vCPUs and memory, billed per vCPU
 * as CPU pods are); each in data centers of its locations (countries or data-center ids; any when
 * it names none), in its network volume's data center.
 */
export function workerPlacementRequests(
  endpoint: Endpoint,
  template: Template,
  volumeDataCenterId: string | null,
  catalog: Pick<Catalog, 'gpuTypes' | 'cpuFlavors' | 'dataCenters'>,
): PlacementRequest[] {
  const dataCenterIds =
    endpoint.locations.length === 0
      ? []
      : catalog.dataCenters.filter((d) => inLocations(endpoint.locations, d)).map((d) => d.id);
  if (endpoint.instanceIds.length > 0)
    return cpuInstancesOf(endpoint.instanceIds, catalog.cpuFlavors).map((cpu) => ({
      kind: 'cpu',
      gpuTypeIds: [],
      gpuCount: 0,
      cpuFlavorId: cpu.flavorId,
      vcpuCount: cpu.vcpuCount,
      memoryGb: cpu.memoryGb,
      diskGb: template.containerDiskInGb,
      cloud: 'ALL',
      dataCenterIds,
      volumeDataCenterId,
      allowedCudaVersions: [],
      minCudaVersion: null,
      portCount: listenPortsOf(endpoint, template).length,
      globalNetworking: false,
    }));
  const gpuTypeIds = endpoint.gpuIds.flatMap((pool) =>
    catalog.gpuTypes.filter((g) => g.pool === pool).map((g) => g.id),
  );
  return [
    {
      kind: 'gpu',
      gpuTypeIds,
      gpuCount: endpoint.gpuCount,
      cpuFlavorId: null,
      // no minimum: a worker gets its GPU type's allotment on the host it lands on
      vcpuCount: 0,
      memoryGb: 0,
      diskGb: template.containerDiskInGb,
      cloud: 'ALL',
      dataCenterIds,
      volumeDataCenterId,
      allowedCudaVersions: endpoint.allowedCudaVersions,
      minCudaVersion: endpoint.minCudaVersion,
      portCount: listenPortsOf(endpoint, template).length,
      globalNetworking: false,
    },
  ];
}

/**
 * What a placed worker's row records: what it holds on its host (to reserve it again after a
 * restart; where it runs and its image, for the worker list) and whose usage it is, at what price.
 */
export function launchedWorkerRecord(input: {
  endpoint: Pick<Endpoint, 'accountId'>;
  template: Pick<Template, 'imageName'>;
  request: PlacementRequest;
  placement: Placement;
  catalog: Pick<Catalog, 'gpuTypes' | 'cpuFlavors'>;
}): { allocation: WorkerAllocation; usage: WorkerUsageStart } {
  const { request, placement } = input;
  return {
    allocation: {
      gpuIndices: placement.gpuIndices,
      vcpus: placement.vcpus,
      memoryGb: placement.memoryGb,
      diskGb: request.diskGb,
      gpuTypeId: placement.gpuTypeId,
      dataCenterId: placement.dataCenterId,
      image: input.template.imageName,
      publicPorts: placement.publicPorts,
    },
    usage: {
      accountId: input.endpoint.accountId,
      kind: request.kind === 'gpu' && placement.gpuTypeId !== null ? 'gpu' : 'cpu',
      costPerHr: placedCostPerHour(request, placement, input.catalog),
    },
  };
}

export interface WorkerInstanceInput {
  workerId: string;
  endpoint: Endpoint;
  template: Template;
  placement: Placement;
  request: PlacementRequest;
  /** The endpoint's workers' key. */
  apiKey: string;
  /** Base URL workers reach this server at. */
  publicUrl: string;
  pingIntervalMs: number;
  /** The template's registry credentials; never logged, only handed to the runtime. @default null */
  registryAuth?: { username: string; password: string } | null;
}

/**
 * The instance of one placed worker, with the vCPUs and memory placement gave it (its GPU type's
 * allotment on its host: RUNPOD_CPU_COUNT, and the runtime's limits). The tenant's env is the template's overlaid with the
 * endpoint's; the platform's (where to take jobs, with which key; the SDK's skip flags; where it
 * runs) is carried apart, never screened, and always wins. A worker given a loopback job URL
 * shares the host's network (`networkMode: 'host'`, domain/worker-network.ts), else it could not
 * reach the server at it.
 */
export function workerInstanceSpec(input: WorkerInstanceInput): InstanceSpec {
  const { workerId, endpoint, template, placement, request } = input;
  const volumes: VolumeSource[] = [];
  if (endpoint.networkVolumeId)
    volumes.push({ kind: 'network', volumeId: endpoint.networkVolumeId, path: '/runpod-volume' });
  return instanceSpec({
    id: workerId,
    owner: { kind: 'worker', accountId: endpoint.accountId, endpointId: endpoint.id },
    image: template.imageName,
    args: template.args,
    // a load-balancing worker is told its PORT (80 unless its env says), as on the platform
    env:
      endpoint.type === 'LB'
        ? { PORT: String(lbWorkerPorts(endpoint, template).port), ...template.env, ...endpoint.env }
        : { ...template.env, ...endpoint.env },
    platformEnv: {
      ...workerEnvironment({
        publicUrl: input.publicUrl,
        endpointId: endpoint.id,
        workerId,
        apiKey: input.apiKey,
        gpuType: placement.gpuTypeId ?? 'CPU',
        pingIntervalMs: input.pingIntervalMs,
      }),
      RUNPOD_POD_HOSTNAME: `${workerId}-${placement.hostId}`,
    },
    machine: {
      hostId: placement.hostId,
      dataCenterId: placement.dataCenterId,
      gpuIndices: placement.gpuIndices,
      vcpus: placement.vcpus,
      memoryGb: placement.memoryGb,
      diskGb: request.diskGb,
    },
    ports: listenPortsOf(endpoint, template).map((port, i) => ({
      private: port,
      public: placement.publicPorts[i]!,
      protocol: 'http',
    })),
    volumes,
    registryAuth: input.registryAuth ?? null,
    // a load-balancing worker calls nothing back: it never needs the host's network
    networkMode: endpoint.type === 'LB' ? 'default' : workerNetworkMode(input.publicUrl),
  });
}
