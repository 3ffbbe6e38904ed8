import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypedApp } from '../type-provider.js';
import type { TransportServices } from '../../transport/services.js';
import { ApiError } from '../../domain/errors.js';
import type { Metrics } from '../../metrics/metrics.js';

/** The bearer token of `Authorization: Bearer <token>`, or null. */
function bearer(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/**
 * `GET /metrics` (docs/metrics.md): the Prometheus text format, for the metrics token only (not
 * an API key: metrics are operator-wide, never one account's). Registered only when a token is
 * configured; without one the path is an unknown route (404), and nothing is counted.
 */
export function metricsRoutes(app: TypedApp, services: TransportServices): void {
  const metrics = services.metrics;
  if (!metrics) return;
  app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    const token = bearer(request);
    if (token === null)
      throw new ApiError('UNAUTHORIZED', 'The metrics token is required: send "Authorization: Bearer <token>".', {
        headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' },
      });
    if (!metrics.tokenMatches(token))
      throw new ApiError('UNAUTHORIZED', 'The metrics token is wrong (an API key is not a metrics token).', {
        headers: { 'WWW-Authenticate': 'Bearer realm="metrics", error="invalid_token"' },
      });
    void reply.header('content-type', metrics.contentType).header('cache-control', 'no-store');
    return metrics.render();
  });
}

/** Counts every reply under its route's pattern (never its URL) and status. */
export function countReplies(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    metrics.httpReply(request.method, request.routeOptions.url ?? null, reply.statusCode, reply.elapsedTime);
    done();
  });
}
