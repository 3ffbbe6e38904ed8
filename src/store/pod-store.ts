import type { Cloud } from '../domain/catalog.js';
import type { DesiredStatus, PodStatus } from '../domain/pod-state.js';
import type { Mounts } from '../domain/mounts.js';
import type { ClusterMember } from '../domain/cluster.js';
import type { Db, Executor } from './database.js';
import { fromJson, ShapedStatements, toJson } from './database.js';
import { GroupCommit } from './group-commit.js';
import type { PodsTable, PodUsageTable } from './schema.js';

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

const toRecord = (r: PodsTable): PodRecord => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  status: r.status as PodStatus,
  desiredStatus: r.desired_status as DesiredStatus,
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
function toColumns(changes: PodChanges): Partial<PodsTable> {
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

const toUsage = (r: PodUsageTable): PodUsageRecord => ({
  id: r.id,
  podId: r.pod_id,
  accountId: r.account_id,
  costPerHr: Number(r.cost_per_hr),
  startedAt: Number(r.started_at),
  endedAt: nullableNumber(r.ended_at),
});

const deepFreeze = <T>(value: T): T => {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
};

/**
 * Pods by id, kept in memory where this process is the only writer (the store's capability
 * says so): GET /v2/pods/{id} is the hottest read and needs no database round trip. Every write
 * goes through PodStore and invalidates its entry; a read that raced a write does not repopulate
 * (the generation check), so the cache never serves a row older than the last write.
 */
class PodCache {
  readonly #entries = new Map<string, PodRecord>();
  readonly #generation = new Map<string, number>();
  constructor(private readonly max: number) {}
  get(id: string): PodRecord | undefined {
    return this.#entries.get(id);
  }
  generation(id: string): number {
    return this.#generation.get(id) ?? 0;
  }
  fill(id: string, generation: number, record: PodRecord): void {
    if (this.generation(id) !== generation) return;
    if (this.#entries.size >= this.max) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(id, deepFreeze(record));
  }
  invalidate(id: string): void {
    this.#entries.delete(id);
    this.#generation.set(id, this.generation(id) + 1);
    if (this.#generation.size > this.max * 2) this.#generation.clear();
  }
}

/** Pods and their usage intervals. */
export class PodStore {
  readonly #cache: PodCache | null;

  // Creates and RUNNING transitions of concurrent requests share transactions (group commit):
  // each caller still resolves only after its own row committed.
  readonly #inserts: GroupCommit<PodRecord, void>;
  readonly #runs: GroupCommit<{ id: string; changes: PodChanges; usage: Omit<PodUsageRecord, 'endedAt'> }, void>;

  constructor(private readonly db: Db) {
    this.#cache = db.capabilities.multipleConnections ? null : new PodCache(50_000);
    const concurrency = db.capabilities.multipleConnections ? 4 : 1;
    this.#inserts = new GroupCommit({
      concurrency,
      commit: (pods) =>
        db.withTransaction(async (tx) => {
          for (const pod of pods) await this.#insertRow(pod, tx);
          return pods.map(() => undefined);
        }),
    });
    this.#runs = new GroupCommit({
      concurrency,
      commit: (items) =>
        db.withTransaction(async (tx) => {
          for (const { id, changes, usage } of items) {
            await this.update(id, changes, tx);
            await this.openUsage(usage, tx);
          }
          return items.map(() => undefined);
        }),
    });
  }

  /** The pods' group commits by name (creates, RUNNING transitions), to observe their batches (metrics). */
  get groupCommits(): Record<string, Pick<GroupCommit<unknown, unknown>, 'observe'>> {
    return { 'pod-inserts': this.#inserts, 'pod-runs': this.#runs };
  }

  /**
   * Records that the pod's instance is up: its changes (status RUNNING, startedAt…) and the start
   * of a usage interval, atomically.
   */
  async markRunning(id: string, changes: PodChanges, usage: Omit<PodUsageRecord, 'endedAt'>): Promise<void> {
    this.#cache?.invalidate(id);
    await this.#runs.add({ id, changes, usage });
    this.#cache?.invalidate(id);
  }

  withTransaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.db.withTransaction(fn);
  }

  /** Inserts the pod; outside a transaction, concurrent inserts commit together. */
  async insert(pod: PodRecord, tx?: Executor): Promise<void> {
    this.#cache?.invalidate(pod.id);
    if (tx) await this.#insertRow(pod, tx);
    else await this.#inserts.add(pod);
  }

  async #insertRow(pod: PodRecord, tx: Executor): Promise<void> {
    const { id, accountId, createdAt, ...rest } = pod;
    const row = {
      id,
      account_id: accountId,
      created_at: createdAt,
      ...(toColumns(rest) as Omit<PodsTable, 'id' | 'account_id' | 'created_at'>),
    };
    await this.#shapes.run(
      tx,
      `insert:${Object.keys(row).join(',')}`,
      () => tx.insertInto('pods').values(row),
      Object.values(row),
    );
  }

  readonly #shapes = new ShapedStatements();

  /** Cached records are frozen: callers build new objects rather than change these. */
  async get(id: string, tx: Executor = this.db.kysely): Promise<PodRecord | null> {
    const cached = this.#cache?.get(id);
    if (cached) return cached;
    const generation = this.#cache?.generation(id) ?? 0;
    const row = await tx.selectFrom('pods').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return null;
    const record = toRecord(row);
    this.#cache?.fill(id, generation, record);
    return record;
  }

  /** The pod the SSH proxy's routing token names (any status), or null. */
  async getBySshToken(token: string, tx: Executor = this.db.kysely): Promise<PodRecord | null> {
    const row = await tx.selectFrom('pods').selectAll().where('ssh_token', '=', token).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  /** The pod when it belongs to `accountId`; another account's pod reads as absent. */
  async getOwned(accountId: string, id: string, tx: Executor = this.db.kysely): Promise<PodRecord | null> {
    const pod = await this.get(id, tx);
    return pod && pod.accountId === accountId ? pod : null;
  }

  /** The account's pods, oldest first. TERMINATED and cluster pods are left out unless asked for. */
  async list(accountId: string, filter: PodListFilter = {}, tx: Executor = this.db.kysely): Promise<PodRecord[]> {
    let q = tx.selectFrom('pods').selectAll().where('account_id', '=', accountId);
    if (filter.status) q = q.where('status', '=', filter.status);
    else if (!filter.includeTerminated) q = q.where('status', '<>', 'TERMINATED');
    if (!filter.includeClusterPods) q = q.where('cluster', 'is', null);
    if (filter.name !== undefined) q = q.where('name', '=', filter.name);
    if (filter.gpuTypeId !== undefined) q = q.where('gpu_type_id', '=', filter.gpuTypeId);
    if (filter.dataCenterId !== undefined) q = q.where('data_center_id', '=', filter.dataCenterId);
    const rows = await q.orderBy('created_at').orderBy('id').execute();
    return rows.map(toRecord);
  }

  /** A cluster's member pods (TERMINATED ones too), by rank. */
  async listByCluster(clusterId: string, tx: Executor = this.db.kysely): Promise<PodRecord[]> {
    const rows = await tx
      .selectFrom('pods')
      .selectAll()
      .where('cluster', '=', clusterId)
      .orderBy('created_at')
      .execute();
    return rows.map(toRecord).sort((a, b) => (a.clusterMember?.rank ?? 0) - (b.clusterMember?.rank ?? 0));
  }

  /** Every pod that is not TERMINATED, of all accounts: what the controller reconciles. */
  async listActive(tx: Executor = this.db.kysely): Promise<PodRecord[]> {
    const rows = await tx
      .selectFrom('pods')
      .selectAll()
      .where('terminated_at', 'is', null)
      .orderBy('created_at')
      .execute();
    return rows.map(toRecord);
  }

  /** id, status and desired status of every pod that is not TERMINATED: the periodic sweep's cheap view. */
  async listActiveStates(
    tx: Executor = this.db.kysely,
  ): Promise<Array<Pick<PodRecord, 'id' | 'status' | 'desiredStatus'>>> {
    const rows = await tx
      .selectFrom('pods')
      .select(['id', 'status', 'desired_status'])
      .where('terminated_at', 'is', null)
      .execute();
    return rows.map((r) => ({
      id: r.id,
      status: r.status as PodStatus,
      desiredStatus: r.desired_status as DesiredStatus,
    }));
  }

  /** Global-network addresses held by pods that are not TERMINATED. */
  async listGlobalIps(tx: Executor = this.db.kysely): Promise<string[]> {
    const rows = await tx
      .selectFrom('pods')
      .select('global_ip')
      .where('terminated_at', 'is', null)
      .where('global_ip', 'is not', null)
      .execute();
    return rows.map((r) => r.global_ip!);
  }

  /** Writes the given fields; answers whether the pod exists. */
  async update(id: string, changes: PodChanges, tx: Executor = this.db.kysely): Promise<boolean> {
    const columns = toColumns(changes);
    if (Object.keys(columns).length === 0) return (await this.get(id, tx)) !== null;
    this.#cache?.invalidate(id);
    const res = await this.#shapes.run(
      tx,
      `update:${Object.keys(columns).join(',')}`,
      () => tx.updateTable('pods').set(columns).where('id', '=', id),
      [...Object.values(columns), id],
    );
    return Number(res.numAffectedRows ?? 0) > 0;
  }

  async openUsage(usage: Omit<PodUsageRecord, 'endedAt'>, tx: Executor = this.db.kysely): Promise<void> {
    const row = {
      id: usage.id,
      pod_id: usage.podId,
      account_id: usage.accountId,
      cost_per_hr: usage.costPerHr,
      started_at: usage.startedAt,
      ended_at: null,
    };
    await this.#shapes.run(tx, 'insert-usage', () => tx.insertInto('pod_usage').values(row), Object.values(row));
  }

  /** Ends the pod's open usage interval(s) at `endedAt`. */
  async closeUsage(podId: string, endedAt: number, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .updateTable('pod_usage')
      .set({ ended_at: endedAt })
      .where('pod_id', '=', podId)
      .where('ended_at', 'is', null)
      .execute();
  }

  async listUsage(podId: string, tx: Executor = this.db.kysely): Promise<PodUsageRecord[]> {
    const rows = await tx
      .selectFrom('pod_usage')
      .selectAll()
      .where('pod_id', '=', podId)
      .orderBy('started_at')
      .execute();
    return rows.map(toUsage);
  }
}
