import type { Mounts } from '../domain/mounts.js';
import type { NetworkVolume } from '../domain/network-volume.js';
import type { Db, Executor } from './database.js';
import { fromJson } from './database.js';
import { newId } from '../domain/ids.js';
import type { NetworkVolumesTable } from './pod-tables.js';

const toVolume = (r: NetworkVolumesTable): NetworkVolume => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  size: Number(r.size),
  dataCenterId: r.data_center_id,
  createdAt: Number(r.created_at),
});

/** Whether a pod's stored `mounts` JSON names the volume. Unreadable JSON mounts nothing. */
function mountsVolume(mountsJson: string, volumeId: string): boolean {
  let mounts: Mounts;
  try {
    mounts = fromJson<Mounts>(mountsJson, {});
  } catch {
    return false;
  }
  return Array.isArray(mounts.network) && mounts.network.some((m) => m?.volumeId === volumeId);
}

/** Network volumes, always read within one account. */
export class VolumeStore {
  constructor(private readonly db: Db) {}

  /** Inserts the volume and opens its usage interval at its creation (billing). */
  async insert(volume: NetworkVolume, tx?: Executor): Promise<void> {
    await this.#inTransaction(tx, async (t) => {
      await t
        .insertInto('network_volumes')
        .values({
          id: volume.id,
          account_id: volume.accountId,
          name: volume.name,
          size: volume.size,
          data_center_id: volume.dataCenterId,
          created_at: volume.createdAt,
        })
        .execute();
      await this.#openUsage(t, volume.id, volume.accountId, volume.size, volume.createdAt);
    });
  }

  #inTransaction<T>(tx: Executor | undefined, fn: (tx: Executor) => Promise<T>): Promise<T> {
    return tx ? fn(tx) : this.db.withTransaction(fn);
  }

  async #openUsage(tx: Executor, volumeId: string, accountId: string, sizeGb: number, at: number): Promise<void> {
    await tx
      .insertInto('volume_usage')
      .values({
        id: newId(),
        volume_id: volumeId,
        account_id: accountId,
        size_gb: sizeGb,
        started_at: at,
        ended_at: null,
      })
      .execute();
  }

  async #closeUsage(tx: Executor, volumeId: string, at: number): Promise<void> {
    await tx
      .updateTable('volume_usage')
      .set({ ended_at: at })
      .where('volume_id', '=', volumeId)
      .where('ended_at', 'is', null)
      .execute();
  }

  /** The account's volume, or null (also for another account's). */
  async get(accountId: string, id: string, tx: Executor = this.db.kysely): Promise<NetworkVolume | null> {
    const row = await tx
      .selectFrom('network_volumes')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row ? toVolume(row) : null;
  }

  async list(accountId: string, tx: Executor = this.db.kysely): Promise<NetworkVolume[]> {
    const rows = await tx
      .selectFrom('network_volumes')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toVolume);
  }

  /**
   * Answers whether a volume was updated. A new size closes the usage interval of the old one at
   * `at` and opens one at the new size (billing).
   */
  async update(id: string, changes: { name?: string; size?: number }, at: number, tx?: Executor): Promise<boolean> {
    const set: Partial<NetworkVolumesTable> = {};
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.size !== undefined) set.size = changes.size;
    if (Object.keys(set).length === 0) return true;
    return this.#inTransaction(tx, async (t) => {
      const before = await t
        .selectFrom('network_volumes')
        .select(['account_id', 'size'])
        .where('id', '=', id)
        .executeTakeFirst();
      if (!before) return false;
      await t.updateTable('network_volumes').set(set).where('id', '=', id).execute();
      if (changes.size !== undefined && changes.size !== Number(before.size)) {
        await this.#closeUsage(t, id, at);
        await this.#openUsage(t, id, before.account_id, changes.size, at);
      }
      return true;
    });
  }

  /** Answers whether a volume was deleted; its usage interval ends at `at` (billing). */
  async delete(id: string, at: number, tx?: Executor): Promise<boolean> {
    return this.#inTransaction(tx, async (t) => {
      const res = await t.deleteFrom('network_volumes').where('id', '=', id).executeTakeFirst();
      if (Number(res.numDeletedRows) === 0) return false;
      await this.#closeUsage(t, id, at);
      return true;
    });
  }

  /**
   * Ids of the account's pods, not yet TERMINATED, that mount the volume. The mounts are parsed,
   * not matched with LIKE, so a volume id that is a prefix of another, or appears in a path, is no false hit.
   */
  async podsMounting(accountId: string, volumeId: string, tx: Executor = this.db.kysely): Promise<string[]> {
    const rows = await tx
      .selectFrom('pods')
      .select(['id', 'mounts'])
      .where('account_id', '=', accountId)
      .where('status', '<>', 'TERMINATED')
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.filter((r) => mountsVolume(r.mounts, volumeId)).map((r) => r.id);
  }

  /** Ids and names of the account's serverless endpoints whose workers mount the volume (`networkVolumeId`). */
  async endpointsUsing(
    accountId: string,
    volumeId: string,
    tx: Executor = this.db.kysely,
  ): Promise<Array<{ id: string; name: string }>> {
    return tx
      .selectFrom('endpoints')
      .select(['id', 'name'])
      .where('account_id', '=', accountId)
      .where('network_volume_id', '=', volumeId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }
}
