import type { Mounts } from '../domain/mounts.js';
import type { NetworkVolume } from '../domain/network-volume.js';
import type { Db, Executor } from './database.js';
import { fromJson } from './database.js';
import type { NetworkVolumesTable } from './schema.js';

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

  async insert(volume: NetworkVolume, tx: Executor = this.db.kysely): Promise<void> {
    await tx
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

  /** Answers whether a volume was updated. */
  async update(id: string, changes: { name?: string; size?: number }, tx: Executor = this.db.kysely): Promise<boolean> {
    const set: Partial<NetworkVolumesTable> = {};
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.size !== undefined) set.size = changes.size;
    if (Object.keys(set).length === 0) return true;
    const res = await tx.updateTable('network_volumes').set(set).where('id', '=', id).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Answers whether a volume was deleted. */
  async delete(id: string, tx: Executor = this.db.kysely): Promise<boolean> {
    const res = await tx.deleteFrom('network_volumes').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
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
