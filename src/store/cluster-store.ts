import type { ClusterRecord, ClusterType } from '../domain/cluster.js';
import type { Db, Executor } from './database.js';
import type { ClustersTable } from './pod-tables.js';

const toRecord = (r: ClustersTable): ClusterRecord => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  type: r.type as ClusterType,
  gpuTypeId: r.gpu_type_id,
  gpuCountPerPod: Number(r.gpu_count_per_pod),
  podCount: Number(r.pod_count),
  cidr: r.cidr,
  dataCenterId: r.data_center_id,
  createdAt: Number(r.created_at),
});

/** Clusters (migration 0016), always read within one account. */
export class ClusterStore {
  constructor(private readonly db: Db) {}

  /** Inserts the cluster; a unique violation means its `cidr` is taken (isUniqueViolation). */
  async insert(c: ClusterRecord, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .insertInto('clusters')
      .values({
        id: c.id,
        account_id: c.accountId,
        name: c.name,
        type: c.type,
        gpu_type_id: c.gpuTypeId,
        gpu_count_per_pod: c.gpuCountPerPod,
        pod_count: c.podCount,
        cidr: c.cidr,
        data_center_id: c.dataCenterId,
        created_at: c.createdAt,
      })
      .execute();
  }

  /** The account's cluster, or null (also for another account's). */
  async get(accountId: string, id: string, tx: Executor = this.db.kysely): Promise<ClusterRecord | null> {
    const row = await tx
      .selectFrom('clusters')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  /** The account's clusters, oldest first. */
  async list(accountId: string, tx: Executor = this.db.kysely): Promise<ClusterRecord[]> {
    const rows = await tx
      .selectFrom('clusters')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toRecord);
  }

  /** How many clusters the account holds (for quotas.clusters). */
  async countByAccount(accountId: string, tx: Executor = this.db.kysely): Promise<number> {
    const row = await tx
      .selectFrom('clusters')
      .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** The overlay networks in use, of every account. */
  async listCidrs(tx: Executor = this.db.kysely): Promise<string[]> {
    const rows = await tx.selectFrom('clusters').select('cidr').execute();
    return rows.map((r) => r.cidr);
  }

  async update(
    id: string,
    changes: { name?: string; dataCenterId?: string | null },
    tx: Executor = this.db.kysely,
  ): Promise<void> {
    const set: Partial<ClustersTable> = {};
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.dataCenterId !== undefined) set.data_center_id = changes.dataCenterId;
    if (Object.keys(set).length === 0) return;
    await tx.updateTable('clusters').set(set).where('id', '=', id).execute();
  }

  async delete(id: string, tx: Executor = this.db.kysely): Promise<void> {
    await tx.deleteFrom('clusters').where('id', '=', id).execute();
  }
}
