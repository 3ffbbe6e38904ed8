import type { AccountsService } from '../accounts/accounts-service.js';
import type { Endpoint } from './endpoint.js';

/**
 * One API key per endpoint for the workers the autoscaler launches: minted at the endpoint's first
 * launch, held in memory only (never stored in plaintext), revoked when the workers stop.
 */
export class WorkerKeys {
  readonly #accounts: Pick<AccountsService, 'createKey' | 'revokeKey'>;
  /** Per endpoint: the key's id (to revoke) and its raw value (for the workers' env). */
  readonly #keys = new Map<string, { id: string; key: string }>();

  constructor(accounts: Pick<AccountsService, 'createKey' | 'revokeKey'>) {
    this.#accounts = accounts;
  }

  /** How many keys are held. */
  get size(): number {
    return this.#keys.size;
  }

  /** The raw key for the endpoint's workers, minted at first use. */
  async keyFor(endpoint: Pick<Endpoint, 'id' | 'accountId'>): Promise<string> {
    const held = this.#keys.get(endpoint.id);
    if (held) return held.key;
    const created = await this.#accounts.createKey(endpoint.accountId, { scope: 'write', name: `workers of endpoint ${endpoint.id} (autoscaler)`, rateLimitExempt: true });
    this.#keys.set(endpoint.id, { id: created.record.id, key: created.key });
    return created.key;
  }

  /** Revokes every key held (a failed revocation is skipped) and forgets them. */
  async revokeAll(): Promise<void> {
    for (const { id } of this.#keys.values()) await this.#accounts.revokeKey(id).catch(() => undefined);
    this.#keys.clear();
  }
}
