import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountsService, Principal } from '../../accounts/accounts-service.js';
import { ApiError } from '../../domain/errors.js';
import type { RestRateLimiter } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** Route answers without an API key (health, docs). @default false */
    public?: boolean;
    /** Scope needed. @default "read" for GET/HEAD, "write" otherwise */
    scope?: 'read' | 'write';
    /** Where a key may also be passed as `?api_key=` (GraphQL). @default false */
    queryKey?: boolean;
    /** Skip the REST rate limiter (job API routes have their own limits). @default false */
    ownRateLimits?: boolean;
  }
}

/** Reads the presented key: `Authorization: Bearer <key>`, the raw key, or `?api_key=` where allowed. */
export function presentedKey(request: FastifyRequest, allowQuery: boolean): string | null {
  const header = request.headers.authorization;
  if (typeof header === 'string' && header.length > 0) {
    const match = /^Bearer\s+(.+)$/i.exec(header);
    return (match ? match[1]! : header).trim();
  }
  if (allowQuery) {
    const q = (request.query as Record<string, unknown> | undefined)?.api_key;
    if (typeof q === 'string' && q.length > 0) return q;
  }
  return null;
}

export function registerAuth(app: FastifyInstance, deps: { accounts: AccountsService; rateLimiter: RestRateLimiter }): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request, reply) => {
    const config = request.routeOptions.config;
    // Unknown routes have no route config; they fall through to the problem+json 404.
    if (config.public || request.routeOptions.url === undefined) return;
    const key = presentedKey(request, config.queryKey === true);
    if (key === null)
      throw new ApiError('UNAUTHORIZED', 'An API key is required: send "Authorization: Bearer <key>".', {
        headers: { 'WWW-Authenticate': 'Bearer' },
      });
    const principal = await deps.accounts.authenticate(key);
    if (principal === null)
      throw new ApiError('UNAUTHORIZED', 'The API key is malformed, unknown or revoked.', { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });
    request.principal = principal;
    if (!principal.rateLimitExempt && !config.ownRateLimits) void reply.headers(deps.rateLimiter.check(principal.keyId));
    const needed = config.scope ?? (request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write');
    if (needed === 'write' && principal.scope !== 'write')
      throw new ApiError('FORBIDDEN', `This API key has the "${principal.scope}" scope; ${request.method} ${request.routeOptions.url} needs "write".`);
  });
}

/** The authenticated caller; routes behind auth always have one. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError('UNAUTHORIZED', 'An API key is required.');
  return request.principal;
}
