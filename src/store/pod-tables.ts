/** The tables of pods and what they are made from or hold: templates, network volumes, clusters, usage. Conventions: `schema.ts`. */
import type { DesiredStatus, PodStatus } from '../domain/pod-state.js';

export interface PodsTable {
  id: string;
  account_id: string;
  name: string;
  status: PodStatus;
  /** What the user asked for. The controller drives status toward it. */
  desired_status: DesiredStatus;
  status_reason: string | null;
  image: string;
  args: string;
  disk: number;
  /** JSON array of `<port>/<protocol>`. */
  ports: string;
  /** JSON object, the user's env as returned by GET. */
  env: string;
  /** JSON object, env injected by startSsh/startJupyter; never returned. */
  hidden_env: string;
  registry: string | null;
  gpu_type_id: string | null;
  gpu_count: number;
  /** JSON array of GPU indices on the host. */
  gpu_indices: string;
  cpu_flavor_id: string | null;
  vcpu_count: number;
  memory_gb: number;
  cloud: string;
  data_center_id: string | null;
  host_id: string | null;
  cuda_version: string | null;
  /** JSON: { persistent?: {size,path}, network?: [{volumeId,path}] } */
  mounts: string;
  /** JSON array of { private, public, type }: public ports reserved on the host. */
  port_mappings: string;
  template_id: string | null;
  locked: number;
  global_networking: number;
  global_ip: string | null;
  cost_per_hr: number;
  /** JSON: the placement constraints kept for restarts (cuda rules, dataCenterIds). */
  constraints: string;
  /** The cluster's id for a member pod, null for a standalone pod. */
  cluster: string | null;
  /** JSON `{ rank, role, ip }` of a cluster member (migration 0016); null for a standalone pod. */
  cluster_member: string | null;
  created_at: number;
  started_at: number | null;
  updated_at: number;
  terminated_at: number | null;
  /** 1 when the pod was created with `startSsh` (migration 0012): only those take SSH proxy sessions. */
  start_ssh: number;
  /** The SSH proxy's routing token, random and unique (migration 0012); null for none. */
  ssh_token: string | null;
  /** When the status last changed, epoch ms (migration 0018); null only on rows written before it. */
  status_changed_at: number | null;
  /** An interruptible pod's bid, USD per GPU per hour (migration 0022); null for an on-demand pod. */
  bid_per_gpu: number | null;
}

export interface PodUsageTable {
  id: string;
  pod_id: string;
  account_id: string;
  cost_per_hr: number;
  started_at: number;
  ended_at: number | null;
}

/** A multi-node cluster (migration 0016, docs/clusters.md). */
export interface ClustersTable {
  id: string;
  account_id: string;
  name: string;
  /** APPLICATION, TRAINING, SLURM or RAY */
  type: string;
  gpu_type_id: string;
  gpu_count_per_pod: number;
  pod_count: number;
  /** The private overlay network, unique among clusters, e.g. `10.65.3.0/24`. */
  cidr: string;
  data_center_id: string | null;
  created_at: number;
}

export interface TemplatesTable {
  id: string;
  /** null for public catalog templates shipped with Gantry. */
  account_id: string | null;
  name: string;
  image: string;
  args: string;
  container_disk_gb: number;
  volume_gb: number;
  volume_mount_path: string | null;
  ports: string;
  env: string;
  registry_id: string | null;
  start_ssh: number;
  start_jupyter: number;
  allowed_cuda_versions: string;
  is_serverless: number;
  is_public: number;
  category: string;
  readme: string;
  created_at: number;
  updated_at: number;
}

export interface NetworkVolumesTable {
  id: string;
  account_id: string;
  name: string;
  size: number;
  data_center_id: string;
  created_at: number;
}

/** A network volume's size over an interval (migration 0013): a resize or the deletion closes it. */
export interface VolumeUsageTable {
  id: string;
  volume_id: string;
  account_id: string;
  size_gb: number;
  started_at: number;
  ended_at: number | null;
}

/** A pod's own stop and termination times (migration 0022); a row only for pods that have one. */
export interface PodDeadlinesTable {
  pod_id: string;
  /** ms epoch; null: none, or already acted on */
  stop_after: number | null;
  terminate_after: number | null;
}
