import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountsService, Principal } from '../../accounts/accounts-service.js';
import { ApiError } from '../../domain/errors.js';
import type { RestRateLimiter } from './rate-limit.js';
import { pathParam, queryParam } from '../type-provider.js';
import { HOST_CREDENTIAL_PREFIX } from '../../fleet/host-secrets.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** Route answers without an API key (health, docs). @default false */
    public?: boolean;
    /** Scope needed. @default "read" for GET/HEAD, "write" otherwise */
    scope?: 'read' | 'write';
    /**
     * A request without a key goes on with no principal, rate-limited by its client address: the
     * route itself answers what such a caller may do (GraphQL's catalog). @default false
     */
    anonymous?: boolean;
    /** Where a key may also be passed as `?api_key=` (GraphQL). @default false */
    queryKey?: boolean;
    /** Skip the REST rate limiter (job API routes have their own limits). @default false */
    ownRateLimits?: boolean;
    /** A job API or worker protocol route: also served on the job listener (`server.jobPort`). @default false */
    jobApi?: boolean;
    /** Success answers of a job API route, by status, read only by the test-mode answer check (routes/job-answers.ts). */
    answers?: Record<number, object> | undefined;
    /** A worker protocol route (`/v2/:endpointId/<op>/:workerId…`): the only routes a `worker` key may call. @default false */
    workerProtocol?: boolean;
    /**
     * An agent protocol route (`/agent/v1/…`): authenticated by a host credential (routes/agent.ts),
     * never by an API key; also served on the job listener. @default false
     */
    agentProtocol?: boolean;
  }
}

/** Reads the presented key: `Authorization: Bearer <key>`, the raw key, or `?api_key=` where allowed. */
function presentedKey(request: FastifyRequest, allowQuery: boolean): string | null {
  const header = request.headers.authorization;
  if (typeof header === 'string' && header.length > 0) {
    const match = /^Bearer\s+(.+)$/i.exec(header);
    return (match ? match[1]! : header).trim();
  }
  if (allowQuery) {
    const q = queryParam(request, 'api_key');
    if (typeof q === 'string' && q.length > 0) return q;
  }
  return null;
}

export function registerAuth(
  app: FastifyInstance,
  deps: {
    accounts: AccountsService;
    rateLimiter: RestRateLimiter;
    /** Counts requests without a key by client address (routes with `anonymous`). */
    anonymousLimiter: RestRateLimiter;
  },
): void {
  app.decorateRequest('principal', null);
  // Callback-style hook: a key seen in the last few seconds is checked without awaiting anything.
  app.addHook('onRequest', (request, reply, done) => {
    const config = request.routeOptions.config;
    // Unknown routes have no route config; they fall through to the problem+json 404.
    if (config.public || config.agentProtocol || request.routeOptions.url === undefined) return done();
    const key = presentedKey(request, config.queryKey === true);
    if (key === null && config.anonymous) {
      try {
        void reply.headers(deps.anonymousLimiter.check(anonymousCaller(request)));
      } catch (err) {
        return done(err as Error);
      }
      return done();
    }
    if (key === null)
      return done(
        new ApiError('UNAUTHORIZED', 'An API key is required: send "Authorization: Bearer <key>".', {
          headers: { 'WWW-Authenticate': 'Bearer' },
        }),
      );
    // A host's credential is for its agent's protocol only: never an API key, whatever the store holds.
    if (key.startsWith(HOST_CREDENTIAL_PREFIX))
      return done(
        new ApiError(
          'UNAUTHORIZED',
          `A host credential (${HOST_CREDENTIAL_PREFIX}…) is accepted only by the agent protocol (/agent/v1), not by the API: send an API key.`,
          { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } },
        ),
      );
    const admit = (principal: Principal | null): void => {
      if (principal === null)
        return done(
          new ApiError('UNAUTHORIZED', 'The API key is malformed, unknown or revoked.', {
            headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
          }),
        );
      request.principal = principal;
      deps.accounts.noteKeyUse(principal);
      if (principal.scope === 'worker') {
        const refusal = workerKeyRefusal(principal, request);
        if (refusal !== null) return done(new ApiError('FORBIDDEN', refusal));
      }
      try {
        if (!principal.rateLimitExempt && !config.ownRateLimits)
          void reply.headers(deps.rateLimiter.check(principal.keyId));
      } catch (err) {
        return done(err as Error);
      }
      const needed = config.scope ?? (request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write');
      // a worker key got here only on its own worker routes (above), which need no more
      if (needed === 'write' && principal.scope === 'read')
        return done(
          new ApiError(
            'FORBIDDEN',
            `This API key has the "${principal.scope}" scope; ${request.method} ${request.routeOptions.url} needs "write".`,
          ),
        );
      done();
    };
    const cached = deps.accounts.cachedPrincipal(key);
    if (cached !== undefined) return admit(cached);
    deps.accounts.authenticate(key).then(admit, (err: unknown) => done(err as Error));
  });
}

/**
 * The rate-limit key of a request without an API key: its client address, an IPv6 one by its /64
 * (the block one machine is usually given, so a caller cannot spread over it).
 */
export function anonymousCaller(request: FastifyRequest): string {
  const ip = request.ip;
  if (!ip.includes(':') || ip.startsWith('::ffff:')) return ip;
  const groups = expandIpv6(ip);
  return groups ? `${groups.slice(0, 4).join(':')}::/64` : ip;
}

/** The eight groups of an IPv6 address (`::` expanded, zone dropped), or null. */
function expandIpv6(ip: string): string[] | null {
  const [head = '', tail] = ip.split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.length === 8 && groups.every((g) => /^[0-9a-f]{1,4}$/i.test(g))
    ? groups.map((g) => g.toLowerCase())
    : null;
}

/**
 * Why a `worker` key may not make this request, or null when it may: it calls only the worker
 * protocol of its own endpoint, as its own worker when it is bound to one. Its tenant's code holds
 * it (the worker's environment), so it must not reach the account's pods, keys or other endpoints.
 */
function workerKeyRefusal(principal: Principal, request: FastifyRequest): string | null {
  const endpointId = pathParam(request, 'endpointId');
  const workerId = pathParam(request, 'workerId');
  const owner = `endpoint ${principal.endpointId ?? '?'}`;
  if (request.routeOptions.config.workerProtocol !== true || endpointId !== principal.endpointId)
    return `This API key belongs to a worker of ${owner}; it may call only that endpoint's worker protocol (job-take, job-stop, job-done, job-stream, ping), not ${request.method} ${request.routeOptions.url}.`;
  if (principal.workerId && workerId !== principal.workerId)
    return `This API key belongs to worker ${principal.workerId} of ${owner}; it may not call as worker "${String(workerId).slice(0, 64)}".`;
  return null;
}

/** The authenticated caller; routes behind auth always have one. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError('UNAUTHORIZED', 'An API key is required.');
  return request.principal;
}
