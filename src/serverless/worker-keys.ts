import type { AccountsService } from '../accounts/accounts-service.js';
import type { Endpoint } from '../domain/endpoint.js';

/**
 * One API key per worker the autoscaler launches, in the `worker` scope: bound to the worker's
 * endpoint and id, so the tenant code that reads it from its environment can call only that
 * endpoint's worker protocol, as that worker, under the worker-protocol rate limits. Stored
 * hashed like every key; the raw value lives only in the worker's environment. Revoked when the
 * worker stops; keys a previous server (or replica) left behind are revoked by `revokeOrphans`.
 */
export class WorkerKeys {
  readonly #accounts: Pick<AccountsService, 'createKey' | 'revokeKey' | 'revokeWorkerKeysExcept'>;
  /** Per worker id: the key's id (to revoke it). */
  readonly #keys = new Map<string, string>();

  constructor(accounts: Pick<AccountsService, 'createKey' | 'revokeKey' | 'revokeWorkerKeysExcept'>) {
    this.#accounts = accounts;
  }

  /** How many keys are held. */
  get size(): number {
    return this.#keys.size;
  }

  /** A new raw key for the worker about to be launched. */
  async mint(endpoint: Pick<Endpoint, 'id' | 'accountId'>, workerId: string): Promise<string> {
    const created = await this.#accounts.createKey(endpoint.accountId, {
      scope: 'worker',
      endpointId: endpoint.id,
      workerId,
      name: `worker ${workerId} of endpoint ${endpoint.id} (autoscaler)`,
    });
    this.#keys.set(workerId, created.record.id);
    return created.key;
  }

  /** Holds the live key of a worker a previous server launched and this one adopts (it stays valid). */
  adopt(workerId: string, keyId: string): void {
    this.#keys.set(workerId, keyId);
  }

  /** Revokes the worker's key, if one is held (a failed revocation is skipped: `revokeOrphans` catches it at the next recovery). */
  async revoke(workerId: string): Promise<void> {
    const id = this.#keys.get(workerId);
    if (id === undefined) return;
    this.#keys.delete(workerId);
    await this.#accounts.revokeKey(id).catch(() => undefined);
  }

  /** Revokes every key held (a failed revocation is skipped) and forgets them. */
  async revokeAll(): Promise<void> {
    for (const workerId of [...this.#keys.keys()]) await this.revoke(workerId);
  }

  /**
   * Revokes every launched worker's key not held here (after a restart, or when this replica
   * takes the autoscaler over: those workers are being cleaned up). Answers how many.
   */
  async revokeOrphans(): Promise<number> {
    return this.#accounts.revokeWorkerKeysExcept([...this.#keys.keys()]);
  }
}
