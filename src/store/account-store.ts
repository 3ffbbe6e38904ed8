import type { Db, Executor } from './database.js';
import { fromJson, toJson } from './database.js';
import type { ExpressionBuilder } from 'kysely';
import type { AccountsTable, ApiKeysTable, KeyScope } from './account-tables.js';
import type { Database } from './schema.js';

export interface Account {
  id: string;
  name: string;
  sshKeys: string[];
  createdAt: number;
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  name: string;
  scope: KeyScope;
  hash: string;
  prefix: string;
  rateLimitExempt: boolean;
  createdAt: number;
  revokedAt: number | null;
  /** A `worker` key's endpoint; null for other scopes. */
  endpointId: string | null;
  /** A `worker` key's worker id when it is bound to one worker (a launched worker's key). */
  workerId: string | null;
  /** When the key was last used, as last written (`AccountsService.flushKeyUse`); null if never. */
  lastUsedAt: number | null;
}

const toAccount = (r: AccountsTable): Account => ({
  id: r.id,
  name: r.name,
  sshKeys: fromJson<string[]>(r.ssh_keys, []),
  createdAt: Number(r.created_at),
});

const toKey = (r: ApiKeysTable): ApiKeyRecord => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  scope: r.scope,
  hash: r.hash,
  prefix: r.prefix,
  rateLimitExempt: r.rate_limit_exempt === 1,
  createdAt: Number(r.created_at),
  revokedAt: r.revoked_at === null ? null : Number(r.revoked_at),
  endpointId: r.endpoint_id ?? null,
  workerId: r.worker_id ?? null,
  lastUsedAt: r.last_used_at === null ? null : Number(r.last_used_at),
});

/** The account's keys of these scopes, live or revoked: the filter the REST key operations share. */
const keysOf = (
  eb: ExpressionBuilder<Database, 'api_keys'>,
  accountId: string,
  scopes: readonly KeyScope[],
  state: 'live' | 'revoked',
) =>
  eb.and([
    eb('account_id', '=', accountId),
    eb('scope', 'in', [...scopes]),
    eb('revoked_at', state === 'live' ? 'is' : 'is not', null),
  ]);

/** Accounts and their API keys. */
export class AccountStore {
  constructor(private readonly db: Db) {}

  async insertAccount(account: Account, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .insertInto('accounts')
      .values({ id: account.id, name: account.name, ssh_keys: toJson(account.sshKeys), created_at: account.createdAt })
      .execute();
  }

  async getAccount(id: string, tx: Executor = this.db.kysely): Promise<Account | null> {
    const row = await tx.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toAccount(row) : null;
  }

  async getAccountByName(name: string, tx: Executor = this.db.kysely): Promise<Account | null> {
    const row = await tx.selectFrom('accounts').selectAll().where('name', '=', name).executeTakeFirst();
    return row ? toAccount(row) : null;
  }

  async listAccounts(tx: Executor = this.db.kysely): Promise<Account[]> {
    const rows = await tx.selectFrom('accounts').selectAll().orderBy('created_at').execute();
    return rows.map(toAccount);
  }

  async countAccounts(tx: Executor = this.db.kysely): Promise<number> {
    const row = await tx
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async setSshKeys(accountId: string, keys: string[], tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .updateTable('accounts')
      .set({ ssh_keys: toJson(keys) })
      .where('id', '=', accountId)
      .execute();
  }

  async insertKey(key: Omit<ApiKeyRecord, 'lastUsedAt'>, tx: Executor = this.db.kysely): Promise<void> {
    await tx
      .insertInto('api_keys')
      .values({
        id: key.id,
        account_id: key.accountId,
        name: key.name,
        scope: key.scope,
        hash: key.hash,
        prefix: key.prefix,
        rate_limit_exempt: key.rateLimitExempt ? 1 : 0,
        created_at: key.createdAt,
        revoked_at: key.revokedAt,
        last_used_at: null,
        endpoint_id: key.endpointId,
        worker_id: key.workerId,
      })
      .execute();
  }

  async getKeyByHash(hash: string, tx: Executor = this.db.kysely): Promise<ApiKeyRecord | null> {
    const row = await tx.selectFrom('api_keys').selectAll().where('hash', '=', hash).executeTakeFirst();
    return row ? toKey(row) : null;
  }

  async listKeys(accountId?: string, tx: Executor = this.db.kysely): Promise<ApiKeyRecord[]> {
    let q = tx.selectFrom('api_keys').selectAll().orderBy('created_at');
    if (accountId) q = q.where('account_id', '=', accountId);
    return (await q.execute()).map(toKey);
  }

  /** Records when keys were last used; a time never moves back (replicas write theirs in any order). */
  async touchKeys(uses: ReadonlyArray<readonly [id: string, at: number]>): Promise<void> {
    if (uses.length === 0) return;
    await this.db.withTransaction(async (tx) => {
      for (const [id, at] of uses)
        await tx
          .updateTable('api_keys')
          .set({ last_used_at: at })
          .where('id', '=', id)
          .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
          .execute();
    });
  }

  /** The account's live keys of these scopes, oldest first (the REST list: read and write keys, never workers'). */
  async listLiveKeys(
    accountId: string,
    scopes: readonly KeyScope[],
    tx: Executor = this.db.kysely,
  ): Promise<ApiKeyRecord[]> {
    const rows = await tx
      .selectFrom('api_keys')
      .selectAll()
      .where((eb) => keysOf(eb, accountId, scopes, 'live'))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toKey);
  }

  /** How many live keys of these scopes the account holds (for quotas.apiKeys). */
  async countLiveKeys(accountId: string, scopes: readonly KeyScope[], tx: Executor = this.db.kysely): Promise<number> {
    const row = await tx
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where((eb) => keysOf(eb, accountId, scopes, 'live'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Deletes a key row outright (a create refused by the quota after its insert). */
  async deleteKey(id: string, tx: Executor = this.db.kysely): Promise<void> {
    await tx.deleteFrom('api_keys').where('id', '=', id).execute();
  }

  /**
   * Revokes the account's live key `id` if its scope is one of `scopes`; answers whether it did. A
   * key of another account, of another scope (a worker's), revoked or missing answers false alike.
   */
  async revokeAccountKey(
    accountId: string,
    id: string,
    scopes: readonly KeyScope[],
    now: number,
    tx: Executor = this.db.kysely,
  ): Promise<boolean> {
    const res = await tx
      .updateTable('api_keys')
      .set({ revoked_at: now })
      .where('id', '=', id)
      .where((eb) => keysOf(eb, accountId, scopes, 'live'))
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /**
   * Deletes the account's revoked keys of these scopes beyond the newest `keep`: revoked rows stay
   * for the operator's `gantry keys list`, but creating and revoking in a loop cannot grow the table.
   */
  async pruneRevokedKeys(
    accountId: string,
    scopes: readonly KeyScope[],
    keep: number,
    tx: Executor = this.db.kysely,
  ): Promise<number> {
    const res = await tx
      .deleteFrom('api_keys')
      .where((eb) => keysOf(eb, accountId, scopes, 'revoked'))
      .where(
        'id',
        'not in',
        tx
          .selectFrom('api_keys')
          .select('id')
          .where((eb) => keysOf(eb, accountId, scopes, 'revoked'))
          .orderBy('revoked_at', 'desc')
          .orderBy('id', 'desc')
          .limit(Math.max(0, Math.floor(keep))),
      )
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  /** Marks the key revoked; answers whether a live key was revoked. */
  async revokeKey(id: string, now: number, tx: Executor = this.db.kysely): Promise<boolean> {
    const res = await tx
      .updateTable('api_keys')
      .set({ revoked_at: now })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Revokes every live key bound to the endpoint (it was deleted); answers their ids. */
  async revokeEndpointKeys(endpointId: string, now: number, tx: Executor = this.db.kysely): Promise<string[]> {
    const rows = await tx
      .updateTable('api_keys')
      .set({ revoked_at: now })
      .where('endpoint_id', '=', endpointId)
      .where('revoked_at', 'is', null)
      .returning('id')
      .execute();
    return rows.map((r) => r.id);
  }

  /** The id of the live key bound to this worker of this endpoint (a launched worker's), or null. */
  async liveWorkerKeyId(endpointId: string, workerId: string, tx: Executor = this.db.kysely): Promise<string | null> {
    const row = await tx
      .selectFrom('api_keys')
      .select('id')
      .where('scope', '=', 'worker')
      .where('endpoint_id', '=', endpointId)
      .where('worker_id', '=', workerId)
      .where('revoked_at', 'is', null)
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row?.id ?? null;
  }

  /**
   * Revokes the live keys of launched workers (`worker` keys bound to a worker id) except those of
   * `keep`: after a restart or a lease change their workers are gone. Answers their ids.
   */
  async revokeWorkerKeysExcept(keep: readonly string[], now: number, tx: Executor = this.db.kysely): Promise<string[]> {
    let q = tx
      .updateTable('api_keys')
      .set({ revoked_at: now })
      .where('scope', '=', 'worker')
      .where('worker_id', 'is not', null)
      .where('revoked_at', 'is', null);
    if (keep.length > 0) q = q.where('worker_id', 'not in', [...keep]);
    return (await q.returning('id').execute()).map((r) => r.id);
  }
}
