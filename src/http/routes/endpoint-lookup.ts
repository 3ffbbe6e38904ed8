import { ApiError } from '../../domain/errors.js';
import type { Endpoint } from '../../domain/endpoint.js';
import type { EndpointsService } from '../../serverless/endpoints-service.js';

/**
 * The caller's endpoint, or 404. Lookups are cached for a second of real (monotonic) time: every
 * job call needs one, and an endpoint's settings change rarely.
 */
export class EndpointLookup {
  /** By endpoint id (ids are global); a hit counts only for the endpoint's own account. */
  readonly #cache = new Map<string, { endpoint: Endpoint; at: number }>();

  constructor(
    private readonly endpoints: Pick<EndpointsService, 'get'>,
    private readonly ttlMs = 1000,
  ) {}

  /** The endpoint when its lookup is cached and fresh: no promise on the hot path. */
  peek(accountId: string, endpointId: string): Endpoint | undefined {
    const hit = this.#cache.get(endpointId);
    return hit && hit.endpoint.accountId === accountId && performance.now() - hit.at < this.ttlMs
      ? hit.endpoint
      : undefined;
  }

  async get(accountId: string, endpointId: string): Promise<Endpoint> {
    const cached = this.peek(accountId, endpointId);
    if (cached) return cached;
    const endpoint = await this.endpoints.get(accountId, endpointId);
    if (endpoint.type !== 'QB')
      throw new ApiError(
        'BAD_REQUEST',
        `Endpoint "${endpoint.name}" (${endpoint.id}) is a load-balancing endpoint; it has no job queue. Call its own paths on the proxy listener, at /lb/${endpoint.id}/{path} (its loadBalancerUrl; docs/load-balancing.md).`,
      );
    if (this.#cache.size >= 10_000) this.#cache.clear();
    this.#cache.set(endpointId, { endpoint, at: performance.now() });
    return endpoint;
  }
}
