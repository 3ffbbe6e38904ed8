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
    /** A job API or worker protocol route: also served on the job listener (`server.jobPort`). @default false */
    jobApi?: boolean;
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
  // Callback-style hook: a key seen in the last few seconds is checked without awaiting anything.
  app.addHook('onRequest', (request, reply, done) => {
    const config = request.routeOptions.config;
    // Unknown routes have no route config; they fall through to the problem+json 404.
    if (config.public || request.routeOptions.url === undefined) return done();
    const key = presentedKey(request, config.queryKey === true);
    if (key === null)
      return done(new ApiError('UNAUTHORIZED', 'An API key is required: send "Authorization: Bearer <key>".', { headers: { 'WWW-Authenticate': 'Bearer' } }));
    const admit = (principal: Principal | null): void => {
      if (principal === null)
        return done(new ApiError('UNAUTHORIZED', 'The API key is malformed, unknown or revoked.', { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } }));
      request.principal = principal;
      try {
        if (!principal.rateLimitExempt && !config.ownRateLimits) void reply.headers(deps.rateLimiter.check(principal.keyId));
      } catch (err) {
        return done(err as Error);
      }
      const needed = config.scope ?? (request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write');
      if (needed === 'write' && principal.scope !== 'write')
        return done(new ApiError('FORBIDDEN', `This API key has the "${principal.scope}" scope; ${request.method} ${request.routeOptions.url} needs "write".`));
      done();
    };
    const cached = deps.accounts.cachedPrincipal(key);
    if (cached !== undefined) return admit(cached);
    deps.accounts.authenticate(key).then(admit, (err: unknown) => done(err as Error));
  });
}

/** The authenticated caller; routes behind auth always have one. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError('UNAUTHORIZED', 'An API key is required.');
  return request.principal;
}
