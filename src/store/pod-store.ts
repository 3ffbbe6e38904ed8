import type { Db, Executor } from './database.js';
import { ShapedStatements } from './database.js';
import { GroupCommit } from './group-commit.js';
import { PodCache } from './pod-cache.js';
import {
  toColumns,
  toRecord,
  toUsage,
  type PodChanges,
  type PodListFilter,
  type PodRecord,
  type PodUsageRecord,
} from './pod-record.js';
import type { PodsTable } from './pod-tables.js';

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
      status: r.status,
      desiredStatus: r.desired_status,
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
