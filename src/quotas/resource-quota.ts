import { resourceQuotaRefusal, type Quotas, type ResourceDemand, type ResourceHoldings } from '../domain/quotas.js';
import { ApiError } from '../domain/errors.js';
import { SerialQueues } from '../pods/serial-queues.js';

export interface ResourceQuotaDeps {
  holdings: { holdings(accountId: string): Promise<ResourceHoldings> };
  quotas: Pick<Quotas, 'pods' | 'gpus'>;
}

/**
 * The pods and GPUs quotas, checked where resources are taken: pod create, pod start, and the
 * autoscaler's launches. Decisions of one account run one at a time on this replica (the check
 * reads the store, the step it guards writes it): two concurrent creates cannot both take the last
 * GPU. Replicas on PostgreSQL each serialize their own; one replica's create racing another's can
 * overshoot by what those in-flight steps hold (the autoscaler launches on one replica only).
 */
export class ResourceQuota {
  readonly #deps: ResourceQuotaDeps;
  readonly #accounts = new SerialQueues();

  constructor(deps: ResourceQuotaDeps) {
    this.#deps = deps;
  }

  /**
   * Runs `step` when `demand` fits beside what the account holds.
   * @throws ApiError RESOURCE_QUOTA_EXCEEDED (400) naming the quota and its value
   */
  async admit<T>(accountId: string, demand: ResourceDemand, step: () => Promise<T>): Promise<T> {
    const r = await this.tryAdmit(accountId, demand, step);
    if (!r.ok) throw new ApiError('RESOURCE_QUOTA_EXCEEDED', r.reason);
    return r.value;
  }

  /** `admit` that answers a refusal instead of throwing (the autoscaler throttles on it). */
  tryAdmit<T>(accountId: string, demand: ResourceDemand, step: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; reason: string }> {
    return this.#accounts.run(accountId, async () => {
      const refusal = resourceQuotaRefusal(await this.#deps.holdings.holdings(accountId), demand, this.#deps.quotas);
      if (refusal !== null) return { ok: false as const, reason: refusal };
      return { ok: true as const, value: await step() };
    });
  }
}
