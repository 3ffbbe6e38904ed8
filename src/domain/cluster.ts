/**
 * Clusters (spec 2.7, docs/clusters.md): `podCount` identical pods created together, ranked
 * 0..n-1 (rank 0 is the entry node), each with an address on the cluster's private overlay.
 */
export const CLUSTER_TYPES = ['APPLICATION', 'TRAINING', 'SLURM', 'RAY'] as const;
export type ClusterType = (typeof CLUSTER_TYPES)[number];

export const CLUSTER_ROLES = ['SLURM_CONTROLLER', 'SLURM_COMPUTE', 'RAY_HEAD', 'RAY_WORKER'] as const;
export type ClusterRole = (typeof CLUSTER_ROLES)[number];

/** A member pod's place in its cluster (the pod record's `cluster` is the cluster's id). */
export interface ClusterMember {
  rank: number | null;
  role?: ClusterRole;
  ip?: string;
}

/** SLURM: rank 0 the controller, the others compute nodes; RAY: head and workers; others: no role. */
export function roleOf(type: ClusterType, rank: number): ClusterRole | undefined {
  if (type === 'SLURM') return rank === 0 ? 'SLURM_CONTROLLER' : 'SLURM_COMPUTE';
  if (type === 'RAY') return rank === 0 ? 'RAY_HEAD' : 'RAY_WORKER';
  return undefined;
}

/** The port rank 0 listens on for the others' rendezvous (`MASTER_PORT`). */
const CLUSTER_MASTER_PORT = 29500;

/**
 * How many overlay networks there are: the n-th is `10.<65 + n/256>.<n%256>.0/24`, so
 * 10.65.0.0/24 … 10.80.255.0/24 (4096 clusters at once). A /24 holds the largest cluster (250
 * pods) at .2 … .251; .1 is the gateway.
 */
export const CLUSTER_NETWORKS = 4096;

export function clusterCidr(n: number): string {
  if (!Number.isInteger(n) || n < 0 || n >= CLUSTER_NETWORKS) throw new RangeError(`no cluster network ${n}`);
  return `10.${65 + Math.floor(n / 256)}.${n % 256}.0/24`;
}

/** The index `clusterCidr` made this CIDR from, or null for another CIDR. */
export function clusterNetworkIndex(cidr: string): number | null {
  const m = /^10\.(\d+)\.(\d+)\.0\/24$/.exec(cidr);
  if (!m) return null;
  const n = (Number(m[1]) - 65) * 256 + Number(m[2]);
  return n >= 0 && n < CLUSTER_NETWORKS && Number(m[2]) < 256 ? n : null;
}

/** Rank `rank`'s address on the overlay `cidr` (a /24 from clusterCidr): .2 + rank. */
export function memberIp(cidr: string, rank: number): string {
  const base = cidr.split('/')[0]!.split('.');
  return `${base[0]}.${base[1]}.${base[2]}.${2 + rank}`;
}

/**
 * The environment every member gets (docs/clusters.md): its rank, the cluster's size, where
 * rank 0 is, and its own overlay address.
 */
export function clusterEnv(c: {
  clusterId: string;
  type: ClusterType;
  podCount: number;
  gpuCountPerPod: number;
  rank: number;
  ip: string;
  masterIp: string;
}): Record<string, string> {
  const env: Record<string, string> = {
    CLUSTER_ID: c.clusterId,
    CLUSTER_TYPE: c.type,
    NODE_RANK: String(c.rank),
    NUM_NODES: String(c.podCount),
    NODE_ADDR: c.ip,
    MASTER_ADDR: c.masterIp,
    MASTER_PORT: String(CLUSTER_MASTER_PORT),
    NUM_TRAINERS: String(c.gpuCountPerPod),
    WORLD_SIZE: String(c.podCount * c.gpuCountPerPod),
  };
  const role = roleOf(c.type, c.rank);
  if (role) env.CLUSTER_ROLE = role;
  return env;
}

/** A stored cluster. */
export interface ClusterRecord {
  id: string;
  accountId: string;
  name: string;
  type: ClusterType;
  gpuTypeId: string;
  gpuCountPerPod: number;
  podCount: number;
  /** the private overlay network, from clusterCidr */
  cidr: string;
  dataCenterId: string | null;
  createdAt: number;
}
