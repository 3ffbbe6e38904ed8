import type { TypedApp } from '../type-provider.js';
import type { TransportServices } from '../../transport/services.js';

export function systemRoutes(app: TypedApp, _services: TransportServices): void {
  app.get('/healthz', { config: { public: true }, schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/v2/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
}
