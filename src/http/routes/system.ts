import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';

export function systemRoutes(app: FastifyInstance, _services: Services): void {
  app.get('/healthz', { config: { public: true }, schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/v2/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
}
