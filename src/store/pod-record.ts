/** A pod as the services see it, and how it maps to and from its `pods` row. */
import type { Cloud } from '../domain/catalog.js';
import type { ClusterMember } from '../domain/cluster.js';
import type { Mounts } from '../domain/mounts.js';
import type { DesiredStatus, PodStatus } from '../domain/pod-state.js';
import { fromJson, toJson } from './database.js';
import type { PodsTable, PodUsageTable } from './pod-tables.js';

/** A public port reserved on the host for one of the pod's ports. */
export interface PortMapping {
  private: number;
  public: number;
  /** the protocol of `<port>/<protocol>` */
  type: string;
}

/** Placement constraints kept so that a restart on another occasion is placed the same way. */
interface PodConstraints {
  dataCenterIds: string[];
  allowedCudaVersions: string[];
  minCudaVersion: string | null;
  volumeDataCenterId: string | null;
}

export interface PodRecord {
  id: string;
  accountId: string;
  name: string;
  status: PodStatus;
  desiredStatus: DesiredStatus;
  /** Why the pod is EXITED or ERROR, in words. */
  statusReason: string | null;
  image: string;
  args: string;
  disk: number;
  ports: string[];
  /** the user's env, returned by GET */
  env: Record<string, string>;
  /** env injected by startSsh/startJupyter; never returned */
  hiddenEnv: Record<string, string>;
  registry: string | null;
  gpuTypeId: string | null;
  gpuCount: number;
  gpuIndices: number[];
  cpuFlavorId: string | null;
  vcpuCount: number;
  memoryGb: number;
  cloud: Cloud;
  dataCenterId: string | null;
  hostId: string | null;
  cudaVersion: string | null;
  mounts: Mounts;
  portMappings: PortMapping[];
  templateId: string | null;
  locked: boolean;
  globalNetworking: boolean;
  globalIp: string | null;
  costPerHr: number;
  /**
   * An interruptible (spot) pod's bid, USD per GPU per hour: it is billed at its bid and placement
   * may take its machine back (docs/pods.md). null for an on-demand pod.
   */
  bidPerGpu: number | null;
  constraints: PodConstraints;
  /** the cluster's id for a member pod (spec 2.7), null for a standalone pod */
  cluster: string | null;
  /** a member's rank, role and overlay address; null for a standalone pod */
  clusterMember: ClusterMember | null;
  createdAt: number;
  startedAt: number | null;
  updatedAt: number;
  /** When `status` last took its value (v1 `lastStatusChange`). */
  statusChangedAt: number;
  terminatedAt: number | null;
  /** created with `startSsh`: the SSH proxy opens sessions only into these pods */
  startSsh: boolean;
  /** the SSH proxy's routing token (`ssh.proxy.username`); random, not derived from the id */
  sshToken: string | null;
}

export type PodChanges = Partial<Omit<PodRecord, 'id' | 'accountId' | 'createdAt'>>;

export interface PodListFilter {
  includeTerminated?: boolean;
  includeClusterPods?: boolean;
  status?: PodStatus;
  name?: string;
  gpuTypeId?: string;
  dataCenterId?: string;
}

export interface PodUsageRecord {
  id: string;
  podId: string;
  accountId: string;
  costPerHr: number;
  startedAt: number;
  endedAt: number | null;
}

const nullableNumber = (v: number | null): number | null => (v === null ? null : Number(v));

export const toRecord = (r: PodsTable): PodRecord => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  status: r.status,
  desiredStatus: r.desired_status,
  statusReason: r.status_reason,
  image: r.image,
  args: r.args,
  disk: Number(r.disk),
  ports: fromJson<string[]>(r.ports, []),
  env: fromJson<Record<string, string>>(r.env, {}),
  hiddenEnv: fromJson<Record<string, string>>(r.hidden_env, {}),
  registry: r.registry,
  gpuTypeId: r.gpu_type_id,
  gpuCount: Number(r.gpu_count),
  gpuIndices: fromJson<number[]>(r.gpu_indices, []),
  cpuFlavorId: r.cpu_flavor_id,
  vcpuCount: Number(r.vcpu_count),
  memoryGb: Number(r.memory_gb),
  cloud: r.cloud as Cloud,
  dataCenterId: r.data_center_id,
  hostId: r.host_id,
  cudaVersion: r.cuda_version,
  mounts: fromJson<Mounts>(r.mounts, {}),
  portMappings: fromJson<PortMapping[]>(r.port_mappings, []),
  templateId: r.template_id,
  locked: Number(r.locked) === 1,
  globalNetworking: Number(r.global_networking) === 1,
  globalIp: r.global_ip,
  costPerHr: Number(r.cost_per_hr),
  bidPerGpu: nullableNumber(r.bid_per_gpu ?? null),
  constraints: fromJson<PodConstraints>(r.constraints, {
    dataCenterIds: [],
    allowedCudaVersions: [],
    minCudaVersion: null,
    volumeDataCenterId: null,
  }),
  cluster: r.cluster,
  clusterMember: fromJson<ClusterMember | null>(r.cluster_member, null),
  createdAt: Number(r.created_at),
  startedAt: nullableNumber(r.started_at),
  updatedAt: Number(r.updated_at),
  statusChangedAt: Number(r.status_changed_at ?? r.updated_at),
  terminatedAt: nullableNumber(r.terminated_at),
  startSsh: Number(r.start_ssh) === 1,
  sshToken: r.ssh_token,
});

/** Maps the record fields present in `changes` to their columns. */
export function toColumns(changes: PodChanges): Partial<PodsTable> {
  const c: Partial<PodsTable> = {};
  const has = (k: keyof PodChanges): boolean => Object.prototype.hasOwnProperty.call(changes, k);
  if (has('name')) c.name = changes.name!;
  if (has('status')) c.status = changes.status!;
  if (has('desiredStatus')) c.desired_status = changes.desiredStatus!;
  if (has('statusReason')) c.status_reason = changes.statusReason ?? null;
  if (has('image')) c.image = changes.image!;
  if (has('args')) c.args = changes.args!;
  if (has('disk')) c.disk = changes.disk!;
  if (has('ports')) c.ports = toJson(changes.ports);
  if (has('env')) c.env = toJson(changes.env);
  if (has('hiddenEnv')) c.hidden_env = toJson(changes.hiddenEnv);
  if (has('registry')) c.registry = changes.registry ?? null;
  if (has('gpuTypeId')) c.gpu_type_id = changes.gpuTypeId ?? null;
  if (has('gpuCount')) c.gpu_count = changes.gpuCount!;
  if (has('gpuIndices')) c.gpu_indices = toJson(changes.gpuIndices);
  if (has('cpuFlavorId')) c.cpu_flavor_id = changes.cpuFlavorId ?? null;
  if (has('vcpuCount')) c.vcpu_count = changes.vcpuCount!;
  if (has('memoryGb')) c.memory_gb = changes.memoryGb!;
  if (has('cloud')) c.cloud = changes.cloud!;
  if (has('dataCenterId')) c.data_center_id = changes.dataCenterId ?? null;
  if (has('hostId')) c.host_id = changes.hostId ?? null;
  if (has('cudaVersion')) c.cuda_version = changes.cudaVersion ?? null;
  if (has('mounts')) c.mounts = toJson(changes.mounts);
  if (has('portMappings')) c.port_mappings = toJson(changes.portMappings);
  if (has('templateId')) c.template_id = changes.templateId ?? null;
  if (has('locked')) c.locked = changes.locked ? 1 : 0;
  if (has('globalNetworking')) c.global_networking = changes.globalNetworking ? 1 : 0;
  if (has('globalIp')) c.global_ip = changes.globalIp ?? null;
  if (has('costPerHr')) c.cost_per_hr = changes.costPerHr!;
  if (has('bidPerGpu')) c.bid_per_gpu = changes.bidPerGpu ?? null;
  if (has('constraints')) c.constraints = toJson(changes.constraints);
  if (has('cluster')) c.cluster = changes.cluster ?? null;
  if (has('clusterMember')) c.cluster_member = changes.clusterMember ? toJson(changes.clusterMember) : null;
  if (has('startedAt')) c.started_at = changes.startedAt ?? null;
  if (has('updatedAt')) c.updated_at = changes.updatedAt!;
  if (has('statusChangedAt')) c.status_changed_at = changes.statusChangedAt!;
  if (has('terminatedAt')) c.terminated_at = changes.terminatedAt ?? null;
  if (has('startSsh')) c.start_ssh = changes.startSsh ? 1 : 0;
  if (has('sshToken')) c.ssh_token = changes.sshToken ?? null;
  return c;
}

export const toUsage = (r: PodUsageTable): PodUsageRecord => ({
  id: r.id,
  podId: r.pod_id,
  accountId: r.account_id,
  costPerHr: Number(r.cost_per_hr),
  startedAt: Number(r.started_at),
  endedAt: nullableNumber(r.ended_at),
});
