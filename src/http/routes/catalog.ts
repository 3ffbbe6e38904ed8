import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';

export function catalogRoutes(_app: FastifyInstance, _services: Services): void {
  // TODO: routes
}
