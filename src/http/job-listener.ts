import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server as TlsServer } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { applyRequestTimeouts, type ListenerLimits } from './listener-limits.js';
import type { ServerCertificates } from './tls-certificates.js';

const ON_JOB_LISTENER = Symbol('gantry.jobListener');

/**
 * The job listener (`server.jobPort`): a second HTTP server handing requests to the same app, so
 * the job API and the worker protocol can be exposed apart from management (as the platform does
 * with its job URL). Its requests are marked; `restrictToJobApi` answers 404 for the other routes.
 */
export function createJobListener(app: FastifyInstance, limits: ListenerLimits, tls?: ServerCertificates): Server {
  const handle: RequestListener = (req, res) => {
    (req as IncomingMessage & { [ON_JOB_LISTENER]?: true })[ON_JOB_LISTENER] = true;
    app.routing(req, res);
  };
  // over HTTPS, the same certificates as the main listener (reloaded with them)
  const server = tls
    ? (createHttpsServer(tls.serverOptions(limits.headersTimeoutMs), handle) as unknown as Server)
    : createServer(handle);
  if (tls) tls.attach(server as unknown as TlsServer);
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
