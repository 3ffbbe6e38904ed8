/**
 * Clusters (spec 2.7, REST /v2/clusters, docs/clusters.md): `podCount` identical pods created
 * together through the pods service — all placed in one data center or none — ranked 0..n-1
 * (rank 0 the entry node), each at an address of the cluster's private overlay network and with
 * the rendezvous environment (NODE_RANK, MASTER_ADDR, …). Members are managed only here: the pod
 * routes show them but refuse to change them.
 */
import { iso, type Clock } from '../domain/clock.js';
import {
  CLUSTER_NETWORKS,
  clusterCidr,
  clusterEnv,
  clusterNetworkIndex,
  memberIp,
  roleOf,
  type ClusterRecord,
  type ClusterType,
} from '../domain/cluster.js';
import { ApiError, notFound, validationFailed } from '../domain/errors.js';
import { newSortableId } from '../domain/ids.js';
import type { Mounts } from '../domain/mounts.js';
import type { PodStatus } from '../domain/pod-state.js';
import { clusterQuotaRefusal, type Quotas } from '../domain/quotas.js';
import type { PodsService } from '../pods/pods-service.js';
import type { PodView } from '../pods/pod-view.js';
import type { ClusterStore } from '../store/cluster-store.js';
import { isUniqueViolation } from '../store/database.js';
import type { PodRecord } from '../store/pod-record.js';

interface ClusterCompute {
  gpuTypeId: string;
  gpuCountPerPod: number;
  podCount: number;
}

/** CreateClusterRequest: BaseContainerConfig and the cluster's shape. */
export interface CreateClusterInput {
  name: string;
  type: ClusterType;
  compute: ClusterCompute;
  image?: string;
  args?: string;
  disk?: number;
  env?: Record<string, string>;
  ports?: string[];
  dataCenterIds?: string[];
  mounts?: Mounts;
  startJupyter?: boolean;
  startSsh?: boolean;
  /** GraphQL `createCluster` only: a pod template the members take their settings from (body fields win). */
  templateId?: string;
  /** GraphQL `createCluster` only: the members' CUDA constraint (as a pod's). */
  allowedCudaVersions?: string[];
  minCudaVersion?: string;
  /** GraphQL `createCluster` only: the most all the members together may cost, USD per hour. */
  deployCost?: number;
}

export interface ClusterView {
  id: string;
  name: string;
  type: ClusterType;
  compute: ClusterCompute;
  /** never set: the create body has no templateId (a template response is spread into it) */
  template?: string;
  dataCenterId?: string;
  /** `byStatus`: counts keyed by pod status; statuses with no pods are omitted */
  pods: { total: number; byStatus: Record<string, number> };
  network?: { cidr: string };
  primary?: { podId: string; status: PodStatus; sshEndpoint?: string };
  createdAt: string;
}

export interface ClustersServiceDeps {
  store: ClusterStore;
  pods: Pick<PodsService, 'createGroup' | 'render' | 'terminateMember' | 'store'>;
  clock: Clock;
  /** `quotas.clusters`: clusters one account holds at once (each takes a network of the shared pool). */
  quotas: Pick<Quotas, 'clusters'>;
}

/** How often a create takes the next free network after another create took the one it chose. */
const NETWORK_ATTEMPTS = 8;

export class ClustersService {
  readonly #d: ClustersServiceDeps;
  /** Per account, the claim running now: an account's claims take turns in this process. */
  readonly #claims = new Map<string, Promise<unknown>>();

  constructor(deps: ClustersServiceDeps) {
    this.#d = deps;
  }

  /**
   * Creates the cluster and its members (PROVISIONING); 400 NO_CAPACITY when they do not all fit,
   * 400 RESOURCE_QUOTA_EXCEEDED when the account already holds `quotas.clusters` clusters.
   */
  async create(accountId: string, body: CreateClusterInput): Promise<ClusterView> {
    if (body.image === undefined && body.templateId === undefined) throw validationFailed(['image: is required']);
    const { compute } = body;
    const cluster = await this.#claimWithinQuota(accountId, {
      id: newSortableId(),
      accountId,
      name: body.name,
      type: body.type,
      gpuTypeId: compute.gpuTypeId,
      gpuCountPerPod: compute.gpuCountPerPod,
      podCount: compute.podCount,
      cidr: '',
      dataCenterId: null,
      createdAt: this.#d.clock.now(),
    });
    const masterIp = memberIp(cluster.cidr, 0);
    const members = Array.from({ length: compute.podCount }, (_, rank) => {
      const ip = memberIp(cluster.cidr, rank);
      const role = roleOf(body.type, rank);
      return {
        name: `${body.name}-${rank}`,
        cluster: { rank, ip, ...(role ? { role } : {}) },
        env: clusterEnv({
          clusterId: cluster.id,
          type: body.type,
          podCount: compute.podCount,
          gpuCountPerPod: compute.gpuCountPerPod,
          rank,
          ip,
          masterIp,
        }),
      };
    });
    let pods: PodRecord[];
    try {
      pods = await this.#d.pods.createGroup(
        accountId,
        {
          name: body.name,
          ...(body.image !== undefined ? { image: body.image } : {}),
          ...(body.templateId !== undefined ? { templateId: body.templateId } : {}),
          ...(body.allowedCudaVersions !== undefined ? { allowedCudaVersions: body.allowedCudaVersions } : {}),
          ...(body.minCudaVersion !== undefined ? { minCudaVersion: body.minCudaVersion } : {}),
          ...(body.deployCost !== undefined ? { deployCost: body.deployCost } : {}),
          ...(body.args !== undefined ? { args: body.args } : {}),
          ...(body.disk !== undefined ? { disk: body.disk } : {}),
          ...(body.env !== undefined ? { env: body.env } : {}),
          ...(body.ports !== undefined ? { ports: body.ports } : {}),
          ...(body.mounts !== undefined ? { mounts: body.mounts } : {}),
          ...(body.dataCenterIds !== undefined ? { dataCenterIds: body.dataCenterIds } : {}),
          ...(body.startSsh !== undefined ? { startSsh: body.startSsh } : {}),
          ...(body.startJupyter !== undefined ? { startJupyter: body.startJupyter } : {}),
          gpu: { id: compute.gpuTypeId, count: compute.gpuCountPerPod },
        },
        { clusterId: cluster.id, members },
      );
    } catch (err) {
      await this.#d.store.delete(cluster.id);
      throw err;
    }
    const dataCenterId = pods[0]?.dataCenterId ?? null;
    await this.#d.store.update(cluster.id, { dataCenterId });
    return this.#view({ ...cluster, dataCenterId }, await this.#d.pods.render(pods));
  }

  async get(accountId: string, id: string): Promise<ClusterView> {
    const cluster = await this.#owned(accountId, id);
    return this.#view(cluster, await this.#members(cluster));
  }

  async list(accountId: string): Promise<ClusterView[]> {
    const clusters = await this.#d.store.list(accountId);
    return Promise.all(clusters.map(async (c) => this.#view(c, await this.#members(c))));
  }

  /** The members as full pods, by rank. */
  async listPods(accountId: string, id: string): Promise<PodView[]> {
    return this.#members(await this.#owned(accountId, id));
  }

  /** PATCH: a rename; shape, type and container configuration are fixed at creation. */
  async rename(accountId: string, id: string, name: string): Promise<ClusterView> {
    const cluster = await this.#owned(accountId, id);
    await this.#d.store.update(id, { name });
    return this.#view({ ...cluster, name }, await this.#members(cluster));
  }

  /** Terminates every member, then forgets the cluster (its terminated pods keep its id). */
  async delete(accountId: string, id: string): Promise<void> {
    const cluster = await this.#owned(accountId, id);
    for (const pod of await this.#d.pods.store.listByCluster(cluster.id))
      await this.#d.pods.terminateMember(accountId, pod);
    await this.#d.store.delete(cluster.id);
  }

  // ---------------------------------------------------------------------------------------------

  async #owned(accountId: string, id: string): Promise<ClusterRecord> {
    const cluster = await this.#d.store.get(accountId, id);
    if (!cluster) throw notFound('cluster', id);
    return cluster;
  }

  async #members(cluster: ClusterRecord): Promise<PodView[]> {
    return this.#d.pods.render(await this.#d.pods.store.listByCluster(cluster.id));
  }

  /**
   * Checks `quotas.clusters` and stores the cluster on a free network. One account's claims take
   * turns in this process, so concurrent creates are counted one after the other.
   */
  async #claimWithinQuota(accountId: string, cluster: ClusterRecord): Promise<ClusterRecord> {
    const previous = this.#claims.get(accountId) ?? Promise.resolve();
    const claim = previous
      .catch(() => undefined)
      .then(async () => {
        await this.#withinQuota(accountId, 0);
        const claimed = await this.#claimNetwork(cluster);
        try {
          await this.#withinQuota(accountId, 1);
        } catch (err) {
          await this.#d.store.delete(claimed.id);
          throw err;
        }
        return claimed;
      });
    this.#claims.set(accountId, claim);
    try {
      return await claim;
    } finally {
      if (this.#claims.get(accountId) === claim) this.#claims.delete(accountId);
    }
  }

  /**
   * Refuses when the account holds more than `quotas.clusters` clusters besides `own` (0 before
   * its row is stored, 1 after). Checked again once the row is in, for replicas sharing one
   * PostgreSQL database: every create counts after its own insert, so the last of concurrent
   * creates sees them all and the account never keeps more than the quota (concurrent ones on
   * two replicas at the edge may both be refused; none is kept over it).
   */
  async #withinQuota(accountId: string, own: 0 | 1): Promise<void> {
    const held = (await this.#d.store.countByAccount(accountId)) - own;
    const refusal = clusterQuotaRefusal(held, this.#d.quotas);
    if (refusal !== null) throw new ApiError('RESOURCE_QUOTA_EXCEEDED', refusal);
  }

  /** Stores the cluster on the lowest free overlay network; the unique index settles races. */
  async #claimNetwork(cluster: ClusterRecord): Promise<ClusterRecord> {
    for (let attempt = 0; attempt < NETWORK_ATTEMPTS; attempt++) {
      const used = new Set((await this.#d.store.listCidrs()).map(clusterNetworkIndex));
      let n = 0;
      while (n < CLUSTER_NETWORKS && used.has(n)) n++;
      if (n === CLUSTER_NETWORKS)
        throw new ApiError('NO_CAPACITY', `Every cluster network is taken (${CLUSTER_NETWORKS} clusters exist).`);
      const claimed = { ...cluster, cidr: clusterCidr(n) };
      try {
        await this.#d.store.insert(claimed);
        return claimed;
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
    }
    throw new ApiError(
      'NO_CAPACITY',
      'No cluster network could be claimed: too many clusters are being created at once.',
    );
  }

  #view(cluster: ClusterRecord, members: readonly PodView[]): ClusterView {
    const byStatus: Record<string, number> = {};
    for (const p of members) byStatus[p.status] = (byStatus[p.status] ?? 0) + 1;
    const view: ClusterView = {
      id: cluster.id,
      name: cluster.name,
      type: cluster.type,
      compute: {
        gpuTypeId: cluster.gpuTypeId,
        gpuCountPerPod: cluster.gpuCountPerPod,
        podCount: cluster.podCount,
      },
      pods: { total: members.length, byStatus },
      network: { cidr: cluster.cidr },
      createdAt: iso(cluster.createdAt),
    };
    if (cluster.dataCenterId !== null) view.dataCenterId = cluster.dataCenterId;
    const primary = members.find((p) => p.cluster?.rank === 0);
    if (primary) {
      view.primary = { podId: primary.id, status: primary.status };
      const direct = primary.status === 'RUNNING' ? primary.ssh.direct : null;
      if (direct) view.primary.sshEndpoint = `${direct.host}:${direct.port}`;
    }
    return view;
  }
}
