import { ApiError, badRequest, notFound, validationFailed } from '../domain/errors.js';
import { apiKeyQuotaRefusal, type Quotas } from '../domain/quotas.js';
import type { Clock } from '../domain/clock.js';
import { newId } from '../domain/ids.js';
import type { AccountStore, Account, ApiKeyRecord } from '../store/account-store.js';
import type { KeyScope } from '../store/account-tables.js';
import { generateApiKey, hashApiKey, keyNameProblem, looksLikeKey } from './api-keys.js';
import { validateAuthorizedKey } from './ssh-keys.js';

/** Who is calling: resolved from an API key on every authenticated request. */
export interface Principal {
  accountId: string;
  keyId: string;
  scope: KeyScope;
  rateLimitExempt: boolean;
  /** For a `worker` key: the one endpoint whose worker protocol it may call. */
  endpointId?: string | null;
  /** For a `worker` key bound to one worker: the worker id it may call as. */
  workerId?: string | null;
}

/** One of an account's API keys as listed: never its hash. */
export type ApiKeyView = Omit<ApiKeyRecord, 'hash'>;

export interface CreatedKey {
  key: string;
  record: Omit<ApiKeyRecord, 'hash'>;
}

/** The scopes an account manages its own keys of over REST; workers' keys are the platform's. */
const ACCOUNT_KEY_SCOPES = ['read', 'write'] as const satisfies readonly KeyScope[];

const CACHE_TTL_MS = 5_000;
const NEGATIVE_CACHE_MAX = 10_000;

export class AccountsService {
  readonly store: AccountStore;
  readonly #clock: Clock;
  // presented key → principal (or null for unknown/revoked), with expiry so a revocation by another
  // process (the CLI) takes effect within CACHE_TTL_MS; revocations through this service are immediate.
  readonly #cache = new Map<string, { principal: Principal | null; expires: number }>();

  readonly #created: Array<(account: Account) => void> = [];
  /** `quotas.apiKeys`: live read and write keys an account may make for itself. */
  readonly #quotas: Pick<Quotas, 'apiKeys'>;
  /** Per account, the key create running now: an account's creates take turns in this process. */
  readonly #creates = new Map<string, Promise<unknown>>();
  /** Read and write keys used since their last use was written: key id → latest use. */
  readonly #used = new Map<string, { at: number; accountId: string }>();
  #useFlush: NodeJS.Timeout | null = null;

  constructor(deps: { store: AccountStore; clock: Clock; quotas?: Pick<Quotas, 'apiKeys'> }) {
    this.store = deps.store;
    this.#clock = deps.clock;
    this.#quotas = deps.quotas ?? { apiKeys: 100 };
  }

  /** Calls `listener` after each account this service creates (e.g. the webhook address policy's account count). */
  onAccountCreated(listener: (account: Account) => void): void {
    this.#created.push(listener);
  }

  /**
   * The principal of a key seen within the last few seconds: `undefined` when the store must be
   * asked. Lets the hot path skip hashing and awaiting. The cache is keyed by the presented key
   * (it lives only in this process's memory, like the request that carried it).
   */
  cachedPrincipal(rawKey: string): Principal | null | undefined {
    const hit = this.#cache.get(rawKey);
    return hit && hit.expires > this.#clock.now() ? hit.principal : undefined;
  }

  /** Resolves a presented key to its principal, or null when the key is unknown or revoked. */
  async authenticate(rawKey: string): Promise<Principal | null> {
    if (!looksLikeKey(rawKey)) return null;
    const now = this.#clock.now();
    const hit = this.#cache.get(rawKey);
    if (hit && hit.expires > now) return hit.principal;
    const hash = hashApiKey(rawKey);
    const record = await this.store.getKeyByHash(hash);
    const principal: Principal | null =
      record && record.revokedAt === null
        ? {
            accountId: record.accountId,
            keyId: record.id,
            scope: record.scope,
            rateLimitExempt: record.rateLimitExempt,
            ...(record.scope === 'worker' ? { endpointId: record.endpointId, workerId: record.workerId } : {}),
          }
        : null;
    if (principal === null && this.#cache.size > NEGATIVE_CACHE_MAX) this.#cache.clear();
    this.#cache.set(rawKey, { principal, expires: now + CACHE_TTL_MS });
    return principal;
  }

  /**
   * Notes that a read or write key was used (the auth hook, per request): kept in memory, written
   * by `flushKeyUse` — a store write per request would cost more than the request.
   */
  noteKeyUse(principal: Principal): void {
    if (principal.scope !== 'worker')
      this.#used.set(principal.keyId, { at: this.#clock.now(), accountId: principal.accountId });
  }

  /**
   * Writes the last use of the keys used since the previous flush — of `accountId`'s keys only,
   * when given (a listing writes its own account's, never everyone's). Answers how many keys.
   */
  async flushKeyUse(accountId?: string): Promise<number> {
    const taken = [...this.#used].filter(([, use]) => accountId === undefined || use.accountId === accountId);
    if (taken.length === 0) return 0;
    for (const [id] of taken) this.#used.delete(id);
    try {
      await this.store.touchKeys(taken.map(([id, use]) => [id, use.at] as const));
    } catch (err) {
      // kept for the next flush, unless a later use replaced it meanwhile
      for (const [id, use] of taken) if (!this.#used.has(id)) this.#used.set(id, use);
      throw err;
    }
    return taken.length;
  }

  /** Flushes the keys' last use every `intervalMs` (a "last used" column is read to the minute). */
  startKeyUseFlush(intervalMs: number, onError: (err: unknown) => void): void {
    this.#useFlush ??= setInterval(() => void this.flushKeyUse().catch(onError), intervalMs).unref();
  }

  /** Stops the periodic flush and writes what is left. */
  async stopKeyUseFlush(): Promise<void> {
    if (this.#useFlush) clearInterval(this.#useFlush);
    this.#useFlush = null;
    await this.flushKeyUse();
  }

  async createAccount(name: string): Promise<Account> {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name))
      throw badRequest(`Account name "${name}" is invalid: use 1-64 letters, digits, ".", "_" or "-".`);
    if (await this.store.getAccountByName(name))
      throw new ApiError('CONFLICT', `An account named "${name}" already exists.`);
    const account: Account = { id: newId(), name, sshKeys: [], createdAt: this.#clock.now() };
    await this.store.insertAccount(account);
    for (const listener of this.#created) listener(account);
    return account;
  }

  async accountByName(name: string): Promise<Account> {
    const account = await this.store.getAccountByName(name);
    if (!account) throw notFound('account', name);
    return account;
  }

  /**
   * Creates a key. `presetKey` lets a first start adopt GANTRY_BOOTSTRAP_KEY as the admin key. A
   * `worker` key names its endpoint (and may name its worker); it is never rate-limit exempt.
   */
  async createKey(
    accountId: string,
    options:
      | { scope: 'read' | 'write'; name?: string; rateLimitExempt?: boolean; presetKey?: string }
      | { scope: 'worker'; endpointId: string; workerId?: string; name?: string },
  ): Promise<CreatedKey> {
    const key = ('presetKey' in options ? options.presetKey : undefined) ?? generateApiKey();
    if (!looksLikeKey(key)) throw badRequest('An API key must be 8-256 printable characters without spaces.');
    const worker = options.scope === 'worker' ? options : null;
    const record: ApiKeyRecord = {
      id: newId(),
      accountId,
      name: options.name ?? `${options.scope} key`,
      scope: options.scope,
      hash: hashApiKey(key),
      prefix: key.slice(0, 8),
      rateLimitExempt: options.scope === 'worker' ? false : (options.rateLimitExempt ?? false),
      createdAt: this.#clock.now(),
      revokedAt: null,
      endpointId: worker?.endpointId ?? null,
      workerId: worker?.workerId ?? null,
      lastUsedAt: null,
    };
    await this.store.insertKey(record);
    const { hash: _hash, ...visible } = record;
    return { key, record: visible };
  }

  async revokeKey(id: string): Promise<void> {
    const revoked = await this.store.revokeKey(id, this.#clock.now());
    if (!revoked) throw notFound('live API key', id);
    this.#forget([id]);
  }

  /** The account's live read and write keys, oldest first (never workers' keys, never a hash). */
  async listAccountKeys(accountId: string): Promise<Array<Omit<ApiKeyRecord, 'hash'>>> {
    // this replica's uses show at once; other replicas' within their flush interval
    await this.flushKeyUse(accountId);
    return (await this.store.listLiveKeys(accountId, ACCOUNT_KEY_SCOPES)).map(({ hash: _hash, ...visible }) => visible);
  }

  /**
   * A key an account makes for itself (REST): read or write, named, never rate-limit exempt, and
   * refused past `quotas.apiKeys` live keys. The caller must hold a write key (the route's scope).
   * An account's creates take turns in this process, and each counts again after its own insert,
   * so replicas sharing one PostgreSQL database cannot keep the account over the quota either
   * (concurrent creates at the edge on two replicas may both be refused; none is kept over it).
   */
  async createAccountKey(accountId: string, options: { name: string; scope: 'read' | 'write' }): Promise<CreatedKey> {
    const problem = keyNameProblem(options.name);
    if (problem !== null) throw validationFailed([`name: ${problem}`]);
    const previous = this.#creates.get(accountId) ?? Promise.resolve();
    const create = previous
      .catch(() => undefined)
      .then(async () => {
        await this.#withinKeyQuota(accountId, 0);
        const created = await this.createKey(accountId, { scope: options.scope, name: options.name.trim() });
        try {
          await this.#withinKeyQuota(accountId, 1);
        } catch (err) {
          await this.store.deleteKey(created.record.id);
          throw err;
        }
        return created;
      });
    this.#creates.set(accountId, create);
    try {
      return await create;
    } finally {
      if (this.#creates.get(accountId) === create) this.#creates.delete(accountId);
    }
  }

  async #withinKeyQuota(accountId: string, own: 0 | 1): Promise<void> {
    const held = (await this.store.countLiveKeys(accountId, ACCOUNT_KEY_SCOPES)) - own;
    const refusal = apiKeyQuotaRefusal(held, this.#quotas);
    if (refusal !== null) throw new ApiError('RESOURCE_QUOTA_EXCEEDED', refusal);
  }

  /**
   * Revokes one of the account's own read or write keys, the caller's own included; it stops
   * working on this replica at once (the cache forgets it) and on others within CACHE_TTL_MS. A key
   * of another account, a worker's key, a revoked or a missing one answer the same 404. The
   * account keeps its newest `quotas.apiKeys` revoked keys (for `gantry keys list`); older ones go.
   */
  async revokeAccountKey(accountId: string, id: string): Promise<void> {
    const revoked = await this.store.revokeAccountKey(accountId, id, ACCOUNT_KEY_SCOPES, this.#clock.now());
    if (!revoked) throw notFound('API key', id);
    this.#forget([id]);
    await this.store.pruneRevokedKeys(accountId, ACCOUNT_KEY_SCOPES, Math.min(this.#quotas.apiKeys, 1_000_000));
  }

  /** Revokes every key bound to the endpoint (`worker` keys): it was deleted. Answers how many. */
  async revokeEndpointKeys(endpointId: string): Promise<number> {
    const ids = await this.store.revokeEndpointKeys(endpointId, this.#clock.now());
    this.#forget(ids);
    return ids.length;
  }

  /** The id of the live key of a launched worker (to keep it valid when the worker is adopted after a restart), or null. */
  liveWorkerKeyId(endpointId: string, workerId: string): Promise<string | null> {
    return this.store.liveWorkerKeyId(endpointId, workerId);
  }

  /** Revokes the keys of launched workers other than `keep` (theirs are gone). Answers how many. */
  async revokeWorkerKeysExcept(keep: readonly string[]): Promise<number> {
    const ids = await this.store.revokeWorkerKeysExcept(keep, this.#clock.now());
    this.#forget(ids);
    return ids.length;
  }

  /**
   * Drops revoked keys from the cache. Only theirs: workers' keys are revoked at every worker
   * stop, and clearing everything would send every caller's next request to the store.
   */
  #forget(keyIds: readonly string[]): void {
    if (keyIds.length === 0) return;
    const gone = new Set(keyIds);
    for (const [raw, hit] of this.#cache) if (hit.principal && gone.has(hit.principal.keyId)) this.#cache.delete(raw);
  }

  /** The account, or 404. */
  async getAccount(accountId: string): Promise<Account> {
    const account = await this.store.getAccount(accountId);
    if (!account) throw notFound('account', accountId);
    return account;
  }

  /** The SSH public keys of an account that may be gone (the SSH proxy asks after a pod's account): none then. */
  async sshKeysOf(accountId: string): Promise<string[]> {
    return (await this.store.getAccount(accountId))?.sshKeys ?? [];
  }

  async getSshKeys(accountId: string): Promise<string[]> {
    const account = await this.store.getAccount(accountId);
    if (!account) throw notFound('account', accountId);
    return account.sshKeys;
  }

  /** Full replacement; every line must be a valid authorized_keys entry. */
  async putSshKeys(accountId: string, keys: string[]): Promise<string[]> {
    const problems: string[] = [];
    const normalized = keys.map((k, i) => {
      const result = validateAuthorizedKey(k);
      if (!result.ok) problems.push(`keys/${i}: ${result.reason}`);
      return result.ok ? result.line : k;
    });
    if (problems.length > 0)
      throw new ApiError('VALIDATION_FAILED', `Invalid SSH public key: ${problems.join('; ')}`, { errors: problems });
    await this.store.setSshKeys(accountId, normalized);
    return normalized;
  }
}
