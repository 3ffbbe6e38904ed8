/**
 * Whether a webhook may be sent to a non-public address (loopback, private, link-local, …): the
 * `serverless.webhooks.privateAddresses` setting. `allow` and `deny` say it outright; `auto`
 * allows while the deployment has a single account (a dev setup whose receiver runs on the same
 * machine) and denies once it has more, because then a tenant's webhook could probe the host's
 * loopback services, the cloud metadata endpoint or the operator's network.
 *
 * The account count for `auto`: accounts are never deleted, so once there are two the answer is
 * "deny" for good and never counted again. While there is one, a count is trusted for `cacheMs`
 * (on the injected clock), so a dev setup sending every webhook to loopback costs one COUNT per
 * second, not one per `/run` and delivery. An account created through this process's
 * `AccountsService` calls `accountCreated()`, which drops the cached answer at once: on one
 * server the first decision after a second account exists is already a refusal. An account
 * created elsewhere (another replica, the CLI's own process) is seen within `cacheMs`. Public
 * addresses and multi-account deployments never count.
 */
import type { WebhookConfig } from './webhook-config.js';
import type { Clock } from '../domain/clock.js';
import { nonPublicKind, type NonPublicKind } from '../domain/ip-address.js';

export type PrivateAddressMode = WebhookConfig['privateAddresses'];

/** A send refused by the address policy: not a network failure, and not worth retrying. */
export class WebhookAddressRefused extends Error {
  override readonly name = 'WebhookAddressRefused';
}

export interface WebhookAddressPolicyDeps {
  mode: PrivateAddressMode;
  /** How many accounts the deployment has (for `auto`). */
  countAccounts: () => Promise<number>;
  clock: Clock;
  /** How long a count of one account is trusted (an account created here invalidates it at once). @default 1000 */
  cacheMs?: number;
}

const SETTING = 'serverless.webhooks.privateAddresses';

const literalRefusal = (address: string, kind: NonPublicKind): string =>
  `webhook address ${address} is ${kind}; this deployment refuses private webhook receivers (${SETTING})`;

export class WebhookAddressPolicy {
  readonly mode: PrivateAddressMode;
  readonly #deps: WebhookAddressPolicyDeps;
  /** `auto`: more than one account was seen (for good: accounts are never deleted). */
  #multiAccount = false;
  #counting: Promise<boolean> | null = null;
  /** `auto`: until when (clock ms) a count of one account is trusted. */
  #singleUntil = -Infinity;
  /** Bumped by `accountCreated()`: a count started before it is not cached. */
  #generation = 0;

  constructor(deps: WebhookAddressPolicyDeps) {
    this.#deps = deps;
    this.mode = deps.mode;
  }

  /** An account was just created: the next decision counts again (a count under way is not reused). */
  accountCreated(): void {
    this.#generation++;
    this.#singleUntil = -Infinity;
    this.#counting = null;
  }

  /**
   * Why a webhook to `host` may not be sent to `addresses` (what it resolved to, or the literal
   * address itself), or null when it may. Counts accounts only when `auto` has to decide on a
   * non-public address; a failing count refuses (fail closed).
   */
  async refusal(host: string, addresses: readonly string[]): Promise<string | null> {
    const refused = addresses
      .map((address) => ({ address, kind: nonPublicKind(address) }))
      .find((a) => a.kind !== null);
    if (!refused || this.mode === 'allow') return null;
    if (this.mode === 'auto') {
      const multi = this.#knownMulti();
      if (multi === false || (multi === undefined && !(await this.#countNow().catch(() => true)))) return null;
    }
    // For a host name, the address it resolved to is not repeated: a tenant must not be able to
    // map the operator's internal DNS through refusal messages.
    if (addresses.length === 1 && host === refused.address) return literalRefusal(refused.address, refused.kind!);
    return `webhook host ${host} resolves to an address that is ${refused.kind}; this deployment refuses private webhook receivers (${SETTING})`;
  }

  /** `auto`: whether the deployment has more than one account, when known without counting (no await). */
  #knownMulti(): boolean | undefined {
    if (this.#multiAccount) return true;
    return this.#deps.clock.now() < this.#singleUntil ? false : undefined;
  }

  /** `auto`: counts the accounts; concurrent deliveries share one count. */
  #countNow(): Promise<boolean> {
    if (this.#counting) return this.#counting;
    const generation = this.#generation;
    const counting = this.#deps
      .countAccounts()
      .then((n) => {
        if (n > 1) this.#multiAccount = true;
        else if (generation === this.#generation)
          this.#singleUntil = this.#deps.clock.now() + (this.#deps.cacheMs ?? 1000);
        return this.#multiAccount;
      })
      .finally(() => {
        if (this.#counting === counting) this.#counting = null;
      });
    this.#counting = counting;
    return counting;
  }
}
