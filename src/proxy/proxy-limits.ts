/**
 * How many proxied exchanges (a request until its answer ends, a WebSocket until it closes) one pod
 * and one account have open at once (`proxy.maxConnectionsPerPod`, `maxConnectionsPerAccount`): a
 * slot is taken before the pod is dialled and given back once, when the exchange ends.
 */
import { ApiError } from '../domain/errors.js';

export class ProxyLimits {
  readonly #perPod = new Map<string, number>();
  readonly #perAccount = new Map<string, number>();

  constructor(private readonly limits: { maxConnectionsPerPod: number; maxConnectionsPerAccount: number }) {}

  /** Open exchanges of the pod right now. */
  openFor(podId: string): number {
    return this.#perPod.get(podId) ?? 0;
  }

  /**
   * Takes a slot; answers its release (idempotent), or throws 429 TOO_MANY_CONNECTIONS. `kind`
   * names what `podId` is in the refusal (a load-balancing endpoint counts as one pod).
   */
  acquire(target: { podId: string; accountId: string }, kind: 'pod' | 'endpoint' = 'pod'): () => void {
    const pod = this.#perPod.get(target.podId) ?? 0;
    const Kind = kind === 'pod' ? 'Pod' : 'Endpoint';
    if (pod >= this.limits.maxConnectionsPerPod)
      throw new ApiError(
        'TOO_MANY_CONNECTIONS',
        `${Kind} "${target.podId}" already has ${pod} open proxied connections, the most one ${kind} may have (proxy.maxConnectionsPerPod); reuse connections (keep-alive) or close some.`,
        { headers: { 'retry-after': '1' } },
      );
    const account = this.#perAccount.get(target.accountId) ?? 0;
    if (account >= this.limits.maxConnectionsPerAccount)
      throw new ApiError(
        'TOO_MANY_CONNECTIONS',
        `The ${kind}s of this account already have ${account} open proxied connections, the most one account may have (proxy.maxConnectionsPerAccount).`,
        { headers: { 'retry-after': '1' } },
      );
    this.#perPod.set(target.podId, pod + 1);
    this.#perAccount.set(target.accountId, account + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.#perPod, target.podId);
      decrement(this.#perAccount, target.accountId);
    };
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}
