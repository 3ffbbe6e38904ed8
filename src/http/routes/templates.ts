import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';

export function templateRoutes(_app: FastifyInstance, _services: Services): void {
  // TODO: routes
}
