import type { Clock } from '../domain/clock.js';
import { resourceQuotaRefusal, type Quotas, type ResourceDemand, type ResourceHoldings } from '../domain/quotas.js';
import { ApiError } from '../domain/errors.js';

export interface ResourceQuotaDeps {
  holdings: { holdings(accountId: string): Promise<ResourceHoldings> };
  quotas: Pick<Quotas, 'pods' | 'gpus'>;
  clock: Clock;
  /** How old an account's stored holdings may get before an admission re-reads them. @default 1000 */
  refreshMs?: number;
}

/** An account's holdings as read from the store, and what this process admitted since. */
interface AccountView {
  stored: ResourceHoldings;
  recent: ResourceHoldings;
  readAt: number;
}

const ZERO: ResourceHoldings = Object.freeze({ pods: 0, gpus: 0 });
const addTo = (h: ResourceHoldings, d: ResourceDemand, sign: 1 | -1): void => {
  h.pods += sign * d.pods;
  h.gpus += sign * d.gpus;
};

/**
 * The pods and GPUs quotas, checked where resources are taken: pod create, pod start, and the
 * autoscaler's launches. An account's holdings are read from the shared tables at most once per
 * `refreshMs` (the read counts its pods, so not per create), plus what this process admitted
 * since; an admission is checked and reserved in one synchronous step, so concurrent creates
 * cannot both take the last GPU, and they still commit together (no per-account queue). A step
 * that fails gives its reservation back. What was in flight when a read began stays counted past
 * it (it may have missed the read): the view overcounts for a moment, never under. Releases
 * (stop, terminate) drop the account's view, so room shows at once; releases elsewhere (a worker
 * stopping, another replica) show at the next read. Replicas on PostgreSQL each reserve their
 * own: concurrent admissions on two replicas can overshoot by what the other admitted within one
 * `refreshMs`.
 */
export class ResourceQuota {
  readonly #deps: ResourceQuotaDeps;
  readonly #refreshMs: number;
  readonly #views = new Map<string, AccountView>();
  /** Per account: admitted, step not finished. */
  readonly #inFlight = new Map<string, ResourceHoldings>();
  /** Per account, while a read runs: what to count beside it once it lands. */
  readonly #next = new Map<string, ResourceHoldings>();
  readonly #loading = new Map<string, Promise<AccountView>>();

  constructor(deps: ResourceQuotaDeps) {
    this.#deps = deps;
    this.#refreshMs = Math.max(1, deps.refreshMs ?? 1000);
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
  async tryAdmit<T>(
    accountId: string,
    demand: ResourceDemand,
    step: () => Promise<T>,
  ): Promise<{ ok: true; value: T } | { ok: false; reason: string }> {
    const view = this.#fresh(accountId) ?? (await this.#load(accountId));
    // From here to `step()`, nothing awaits: the check and the reservation are one step.
    const held = { pods: view.stored.pods + view.recent.pods, gpus: view.stored.gpus + view.recent.gpus };
    const refusal = resourceQuotaRefusal(held, demand, this.#deps.quotas);
    if (refusal !== null) return { ok: false, reason: refusal };
    addTo(view.recent, demand, 1);
    const next = this.#next.get(accountId);
    if (next) addTo(next, demand, 1);
    let inFlight = this.#inFlight.get(accountId);
    if (!inFlight) this.#inFlight.set(accountId, (inFlight = { ...ZERO }));
    addTo(inFlight, demand, 1);
    let done = false;
    try {
      const value = await step();
      done = true;
      return { ok: true, value };
    } finally {
      addTo(inFlight, demand, -1);
      if (inFlight.pods === 0 && inFlight.gpus === 0 && this.#inFlight.get(accountId) === inFlight)
        this.#inFlight.delete(accountId);
      if (!done) {
        // Whichever view counts it now (a read during the step carried it over) gives it back.
        const current = this.#views.get(accountId);
        if (current) addTo(current.recent, demand, -1);
        const reading = this.#next.get(accountId);
        if (reading) addTo(reading, demand, -1);
      }
    }
  }

  /** The account gave resources back (a pod stopped or terminated): its next admission re-reads. */
  released(accountId: string): void {
    this.#views.delete(accountId);
  }

  #fresh(accountId: string): AccountView | null {
    const view = this.#views.get(accountId);
    return view && this.#deps.clock.now() - view.readAt < this.#refreshMs ? view : null;
  }

  /** One read per account at a time, whoever asks meanwhile. */
  #load(accountId: string): Promise<AccountView> {
    let loading = this.#loading.get(accountId);
    if (!loading) {
      loading = this.#read(accountId).finally(() => this.#loading.delete(accountId));
      this.#loading.set(accountId, loading);
    }
    return loading;
  }

  async #read(accountId: string): Promise<AccountView> {
    // What is in flight now may miss the read: keep it counted beside it.
    const next = { ...(this.#inFlight.get(accountId) ?? ZERO) };
    this.#next.set(accountId, next);
    try {
      const stored = await this.#deps.holdings.holdings(accountId);
      const view = { stored, recent: next, readAt: this.#deps.clock.now() };
      this.#views.set(accountId, view);
      return view;
    } finally {
      if (this.#next.get(accountId) === next) this.#next.delete(accountId);
    }
  }
}
