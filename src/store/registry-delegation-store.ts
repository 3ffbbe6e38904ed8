import type { RegistryDelegation } from '../domain/registry-delegation.js';
import type { Db, Executor } from './database.js';
import type { RegistryDelegationsTable } from './account-tables.js';

const toDelegation = (r: RegistryDelegationsTable): RegistryDelegation => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  awsAccount: r.aws_account,
  awsRegion: r.aws_region,
  awsPartition: r.aws_partition,
  repository: r.repository,
  tag: r.tag,
  createdAt: Number(r.created_at),
});

/** ECR delegations (migration 0015), always read and deleted within one account. */
export class RegistryDelegationStore {
  constructor(private readonly db: Db) {}

  async insert(d: RegistryDelegation, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .insertInto('registry_delegations')
      .values({
        id: d.id,
        account_id: d.accountId,
        name: d.name,
        aws_account: d.awsAccount,
        aws_region: d.awsRegion,
        aws_partition: d.awsPartition,
        repository: d.repository,
        tag: d.tag,
        created_at: d.createdAt,
      })
      .execute();
  }

  /** The account's delegations, oldest first. */
  async list(accountId: string, tx: Executor = this.db.kysely): Promise<RegistryDelegation[]> {
    const rows = await tx
      .selectFrom('registry_delegations')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toDelegation);
  }

  /** Deletes the account's delegation; false when it has none with that id (another account's included). */
  async delete(accountId: string, id: string, tx: Executor = this.db.kysely): Promise<boolean> {
    const res = await tx
      .deleteFrom('registry_delegations')
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}
