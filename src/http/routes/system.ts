import type { TypedApp } from '../type-provider.js';
import type { Services } from '../../services.js';

export function systemRoutes(app: TypedApp, _services: Services): void {
  app.get('/healthz', { config: { public: true }, schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/v2/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
}
