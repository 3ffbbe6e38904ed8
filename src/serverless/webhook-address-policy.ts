/**
 * Whether a webhook may be sent to a non-public address (loopback, private, link-local, …): the
 * `serverless.webhooks.privateAddresses` setting. `allow` and `deny` say it outright; `auto`
 * allows while the deployment has a single account (a dev setup whose receiver runs on the same
 * machine) and denies once it has more, because then a tenant's webhook could probe the host's
 * loopback services, the cloud metadata endpoint or the operator's network.
 *
 * The account count for `auto`: accounts are never deleted, so once there are two the answer is
 * "deny" for good and never counted again. While there is one, the count is taken again before a
 * non-public address is allowed (one COUNT over a one-row table, only for such deliveries), so the
 * first delivery after a second account is created is already refused. Public addresses and
 * multi-account deployments never count.
 */
import type { WebhookConfig } from '../config.js';
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

  constructor(deps: WebhookAddressPolicyDeps) {
    this.#deps = deps;
    this.mode = deps.mode;
  }

  /**
   * Why a webhook to `host` may not be sent to `addresses` (what it resolved to, or the literal
   * address itself), or null when it may. Counts accounts only when `auto` has to decide on a
   * non-public address; a failing count refuses (fail closed).
   */
  async refusal(host: string, addresses: readonly string[]): Promise<string | null> {
    const refused = addresses.map((address) => ({ address, kind: nonPublicKind(address) })).find((a) => a.kind !== null);
    if (!refused || this.mode === 'allow') return null;
    if (this.mode === 'auto' && !(await this.#countNow().catch(() => true))) return null;
    // For a host name, the address it resolved to is not repeated: a tenant must not be able to
    // map the operator's internal DNS through refusal messages.
    if (addresses.length === 1 && host === refused.address) return literalRefusal(refused.address, refused.kind!);
    return `webhook host ${host} resolves to an address that is ${refused.kind}; this deployment refuses private webhook receivers (${SETTING})`;
  }

  /** `auto`: whether the deployment has more than one account, counting unless that is known. */
  #countNow(): Promise<boolean> {
    if (this.#multiAccount) return Promise.resolve(true);
    // concurrent deliveries share one count
    this.#counting ??= this.#deps
      .countAccounts()
      .then((n) => {
        if (n > 1) this.#multiAccount = true;
        return this.#multiAccount;
      })
      .finally(() => {
        this.#counting = null;
      });
    return this.#counting;
  }
}
