/** A stored pod rendered as the API's Pod (spec 2.1). Pure: live data and `now` come in. */
import type { Cloud } from '../domain/catalog.js';
import { iso } from '../domain/clock.js';
import { actionsFor, isLivePodStatus, type PodAction, type PodStatus } from '../domain/pod-state.js';
import type { InstanceStatus } from '../runtime/runtime.js';
import type { PodRecord } from '../store/pod-record.js';
import type { Mounts } from '../domain/mounts.js';
import { internalDns } from './global-network.js';
import type { ClusterRole } from '../domain/cluster.js';

interface PodSshEndpoint {
  host: string;
  port: number;
  username: string;
  command: string;
}

/** The pod HTTP proxy's URL of a pod's port (docs/proxy.md); null while the proxy does not listen. */
export type PodHttpUrl = (podId: string, port: number) => { url: string; link?: string } | null;

/** Where the SSH proxy is reached (config `ssh`); `listening` is false while it is off or has not started. */
export interface SshProxyAddress {
  host: string;
  port: number;
  listening: boolean;
}

/** Spec 2.9, from the runtime's last utilisation sample (docs/utilization.md). */
interface PodRuntimeView {
  uptime?: number;
  /** percent of the pod's vCPUs */
  cpu?: { util: number };
  /** percent of the pod's memory */
  memory?: { util: number };
  ports?: Array<{ private: number; public: number | null; type: string; ip: string | null }>;
  /**
   * Per GPU of the pod, from nvidia-smi; empty where there are no real figures (a host whose GPUs
   * are declared, not discovered; nvidia-smi not answering). `id` (the GPU's UUID) is for GraphQL;
   * the REST body has only `util` and `memoryUtil`.
   */
  gpus?: Array<{ util: number; memoryUtil: number; id?: string }>;
}

export interface PodView {
  id: string;
  name: string;
  status: PodStatus;
  actions: PodAction[];
  image: string;
  args: string;
  disk: number;
  mounts: Mounts;
  ports: string[];
  env: Record<string, string>;
  registry: string | null;
  /** `vcpuCount` / `memory`: the GPU pod's allotment in all, as upstream's v2 answers (absent while unknown). */
  gpu?: { id: string; count: number; vcpuCount?: number; memory?: number };
  cpu?: { id: string; vcpuCount: number; memory: number };
  /**
   * Gantry extension (not in spec 2.1): the vCPUs and GB of memory the pod is given — a CPU pod's
   * own (as in `cpu`), a GPU pod's allotment with its GPUs (docs/catalog.md). Null for a GPU pod
   * stored before allotments, until its next start gives it one.
   */
  vcpuCount: number | null;
  memoryInGb: number | null;
  cloud: Cloud;
  dataCenterId: string | null;
  cudaVersion: string | null;
  ssh: { proxy: PodSshEndpoint | null; direct: PodSshEndpoint | null };
  /**
   * Gantry extension (not in spec 2.1): each `<port>/http` port's URL through the pod HTTP proxy
   * (docs/proxy.md), once the pod has a machine assignment; empty while the proxy is off.
   */
  httpProxy: Array<{ port: number; url: string; link?: string }>;
  template: string | null;
  cost: number;
  locked: boolean;
  globalNetworking: { enabled: boolean; ip?: string; internalDns?: string };
  runtime: PodRuntimeView | null;
  createdAt: string;
  startedAt: string | null;
  /** Gantry extension (not in spec 2.1): when `status` last changed (REST v1 `lastStatusChange`). */
  statusChangedAt: string;
  /**
   * Gantry extension (not in spec 2.1): the fleet host the pod is placed on (REST v1 `machineId`);
   * null before placement.
   */
  hostId: string | null;
  /**
   * Gantry extension (not in spec 2.1): why the pod is EXITED or ERROR — the instance's exit
   * reason, the launch error, or "stopped by user"; null otherwise.
   */
  statusReason: string | null;
  /** Spec 2.7: the pod's place in its cluster; omitted for a standalone pod. */
  cluster?: PodClusterView;
  /**
   * Gantry extension: an interruptible (spot) pod and its bid, USD per GPU per hour (docs/pods.md);
   * omitted for an on-demand pod.
   */
  interruptible?: true;
  bidPerGpu?: number;
}

/** Spec 2.7 PodCluster. */
interface PodClusterView {
  id: string;
  rank: number | null;
  role?: ClusterRole;
  ip?: string;
}

export interface ViewContext {
  now: number;
  /** public address of the pod's host, when it has one */
  hostIp: string | null;
  /** the runtime's view of the instance (RUNNING pods only; in memory for the process runtime) */
  live: InstanceStatus | null;
  /** `<pod_id>.<internalDomain>.internal` */
  internalDomain: string;
  /** The SSH proxy's advertised address; null when it does not listen. */
  sshProxy?: SshProxyAddress | null;
  /** The pod HTTP proxy's URLs; absent or null when it does not listen. */
  httpUrl?: PodHttpUrl | null;
  /** The create response: `runtime` is an empty object (spec 3.1). */
  justCreated?: boolean;
}

/** Cost per hour while the pod holds its machine; nothing is billed for a stopped, failed or terminated pod. */
const billed = isLivePodStatus;

/** The pod's `cost`: its rate while it holds its machine, else 0. */
export const podCost = (pod: PodRecord): number => (billed(pod.status) ? pod.costPerHr : 0);

function runtimeView(pod: PodRecord, ctx: ViewContext): PodRuntimeView | null {
  if (ctx.justCreated) return {};
  if (pod.status !== 'RUNNING') return null;
  const started = ctx.live?.startedAt ?? pod.startedAt ?? ctx.now;
  const stats = ctx.live?.stats ?? null;
  return {
    uptime: Math.max(0, Math.floor((ctx.now - started) / 1000)),
    cpu: { util: Math.round(stats?.cpuUtil ?? 0) },
    memory: { util: Math.round(stats?.memoryUtil ?? 0) },
    ports: pod.portMappings.map((m) => ({ private: m.private, public: m.public, type: m.type, ip: ctx.hostIp })),
    gpus: (stats?.gpus ?? []).map((g) => ({
      util: Math.round(g.util),
      memoryUtil: Math.round(g.memoryUtil),
      ...(g.id ? { id: g.id } : {}),
    })),
  };
}

function directSsh(pod: PodRecord, ctx: ViewContext): PodSshEndpoint | null {
  if (pod.status !== 'RUNNING' || ctx.hostIp === null || !pod.ports.includes('22/tcp')) return null;
  const mapping = pod.portMappings.find((m) => m.private === 22 && m.type === 'tcp');
  if (!mapping) return null;
  return {
    host: ctx.hostIp,
    port: mapping.public,
    username: 'root',
    command: `ssh root@${ctx.hostIp} -p ${mapping.public}`,
  };
}

/** Spec 2.6: through the proxy, once the pod has a machine assignment; the username is its routing token. */
function proxySsh(pod: PodRecord, ctx: ViewContext): PodSshEndpoint | null {
  const proxy = ctx.sshProxy;
  if (!proxy || pod.hostId === null || pod.sshToken === null || pod.status === 'TERMINATED') return null;
  // OpenSSH splits user@host at the first '@': an IPv6 host needs no brackets here
  return {
    host: proxy.host,
    port: proxy.port,
    username: pod.sshToken,
    command: `ssh ${pod.sshToken}@${proxy.host} -p ${proxy.port}`,
  };
}

/** The URLs of the pod's HTTP ports through the proxy, once it has a machine assignment. */
function httpUrls(pod: PodRecord, ctx: ViewContext): PodView['httpProxy'] {
  const url = ctx.httpUrl;
  if (!url || pod.hostId === null || pod.status === 'TERMINATED') return [];
  const out: PodView['httpProxy'] = [];
  for (const p of pod.portMappings) {
    if (p.type !== 'http') continue;
    const at = url(pod.id, p.private);
    if (at) out.push({ port: p.private, ...at });
  }
  return out;
}

export function toPodView(pod: PodRecord, ctx: ViewContext): PodView {
  const view: PodView = {
    id: pod.id,
    name: pod.name,
    status: pod.status,
    actions: actionsFor(pod.status, pod.locked),
    image: pod.image,
    args: pod.args,
    disk: pod.disk,
    mounts: pod.mounts,
    ports: pod.ports,
    env: pod.env,
    registry: pod.registry,
    vcpuCount: pod.vcpuCount > 0 ? pod.vcpuCount : null,
    memoryInGb: pod.memoryGb > 0 ? pod.memoryGb : null,
    cloud: pod.cloud,
    dataCenterId: pod.dataCenterId,
    cudaVersion: pod.gpuTypeId ? pod.cudaVersion : null,
    ssh: { proxy: proxySsh(pod, ctx), direct: directSsh(pod, ctx) },
    httpProxy: httpUrls(pod, ctx),
    // No link to a template is retained (spec 2.1): pods created from one show null.
    template: null,
    cost: podCost(pod),
    locked: pod.locked,
    globalNetworking: pod.globalIp
      ? { enabled: true, ip: pod.globalIp, internalDns: internalDns(pod.id, ctx.internalDomain) }
      : { enabled: false },
    runtime: runtimeView(pod, ctx),
    createdAt: iso(pod.createdAt),
    startedAt: pod.startedAt === null ? null : iso(pod.startedAt),
    statusChangedAt: iso(pod.statusChangedAt),
    hostId: pod.hostId,
    statusReason: pod.statusReason,
  };
  if (pod.gpuTypeId)
    view.gpu = {
      id: pod.gpuTypeId,
      count: pod.gpuCount,
      ...(pod.vcpuCount > 0 ? { vcpuCount: pod.vcpuCount } : {}),
      ...(pod.memoryGb > 0 ? { memory: pod.memoryGb } : {}),
    };
  else if (pod.cpuFlavorId) view.cpu = { id: pod.cpuFlavorId, vcpuCount: pod.vcpuCount, memory: pod.memoryGb };
  if (pod.bidPerGpu !== null) {
    view.interruptible = true;
    view.bidPerGpu = pod.bidPerGpu;
  }
  if (pod.cluster !== null) {
    const m = pod.clusterMember;
    view.cluster = { id: pod.cluster, rank: m?.rank ?? null };
    if (m?.role) view.cluster.role = m.role;
    if (m?.ip) view.cluster.ip = m.ip;
  }
  return view;
}
