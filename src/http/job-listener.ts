import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { applyRequestTimeouts, type ListenerLimits } from './listener-limits.js';

const ON_JOB_LISTENER = Symbol('gantry.jobListener');

/**
 * The job listener (`server.jobPort`): a second HTTP server handing requests to the same app, so
 * the job API and the worker protocol can be exposed apart from management (as the platform does
 * with its job URL). Its requests are marked; `restrictToJobApi` answers 404 for the other routes.
 */
export function createJobListener(app: FastifyInstance, limits: ListenerLimits): Server {
  const server = createServer((req, res) => {
    (req as IncomingMessage & { [ON_JOB_LISTENER]?: true })[ON_JOB_LISTENER] = true;
    app.routing(req, res);
  });
  // the same timeouts and malformed-request answers as the main listener
  applyRequestTimeouts(server, limits);
  for (const listener of app.server.listeners('clientError'))
    server.on('clientError', listener as (...args: unknown[]) => void);
  return server;
}

/** On the job listener only job API, worker protocol and agent protocol routes (and `/healthz`, `/readyz`) answer. */
export function restrictToJobApi(app: FastifyInstance, mainUrl: string): void {
  app.addHook('onRequest', (request, _reply, done) => {
    if (!(request.raw as IncomingMessage & { [ON_JOB_LISTENER]?: true })[ON_JOB_LISTENER]) return done();
    const config = request.routeOptions.config;
    if (
      config.jobApi ||
      config.agentProtocol ||
      request.routeOptions.url === '/healthz' ||
      request.routeOptions.url === '/readyz' ||
      request.routeOptions.url === undefined
    )
      return done();
    done(
      new ApiError(
        'NOT_FOUND',
        `${request.method} ${request.routeOptions.url} is not on the job API listener; management routes answer at ${mainUrl}.`,
      ),
    );
  });
}
