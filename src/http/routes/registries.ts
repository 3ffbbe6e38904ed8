import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';

export function registryRoutes(_app: FastifyInstance, _services: Services): void {
  // TODO: routes
}
