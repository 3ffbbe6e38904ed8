import type { Registry } from '../domain/registry.js';
import type { Db, Executor } from './database.js';
import type { RegistriesTable } from './account-tables.js';

/** A registry credential as stored: username and password sealed (see SecretBox). */
export interface RegistryRecord extends Registry {
  usernameSealed: string;
  passwordSealed: string;
}

/** What still uses a registry credential. */
export interface RegistryUsage {
  pods: string[];
  templates: string[];
}

const toRecord = (r: RegistriesTable): RegistryRecord => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  usernameSealed: r.username_enc,
  passwordSealed: r.password_enc,
  createdAt: Number(r.created_at),
});

/** Container registry credentials, always read within one account. */
export class RegistryStore {
  constructor(private readonly db: Db) {}

  async insert(record: RegistryRecord, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .insertInto('registries')
      .values({
        id: record.id,
        account_id: record.accountId,
        name: record.name,
        username_enc: record.usernameSealed,
        password_enc: record.passwordSealed,
        created_at: record.createdAt,
      })
      .execute();
  }

  /** The account's credential, or null (also for another account's). */
  async get(accountId: string, id: string, tx: Executor = this.db.kysely): Promise<RegistryRecord | null> {
    const row = await tx
      .selectFrom('registries')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async list(accountId: string, tx: Executor = this.db.kysely): Promise<RegistryRecord[]> {
    const rows = await tx
      .selectFrom('registries')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toRecord);
  }

  /** Replaces the sealed username and password of the account's credential. Answers whether it was there. */
  async updateSecrets(
    accountId: string,
    id: string,
    sealed: Pick<RegistryRecord, 'usernameSealed' | 'passwordSealed'>,
    tx: Executor = this.db.kysely,
  ): Promise<boolean> {
    const res = await tx
      .updateTable('registries')
      .set({ username_enc: sealed.usernameSealed, password_enc: sealed.passwordSealed })
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Answers whether a credential was deleted. */
  async delete(id: string, tx: Executor = this.db.kysely): Promise<boolean> {
    const res = await tx.deleteFrom('registries').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /** The account's pods (not TERMINATED) and templates that name the credential. */
  async usage(accountId: string, id: string, tx: Executor = this.db.kysely): Promise<RegistryUsage> {
    const pods = await tx
      .selectFrom('pods')
      .select('id')
      .where('account_id', '=', accountId)
      .where('registry', '=', id)
      .where('status', '<>', 'TERMINATED')
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const templates = await tx
      .selectFrom('templates')
      .select('id')
      .where('account_id', '=', accountId)
      .where('registry_id', '=', id)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return { pods: pods.map((r) => r.id), templates: templates.map((r) => r.id) };
  }
}
