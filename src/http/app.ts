import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { TransportServices } from '../transport/services.js';
import { registerAuth } from './plugins/auth.js';
import { restrictToJobApi } from './job-listener.js';
import { frameworkErrors, registerErrorHandling } from './plugins/errors.js';
import { RestRateLimiter } from './plugins/rate-limit.js';
import { systemRoutes } from './routes/system.js';
import { countReplies, metricsRoutes } from './routes/metrics.js';
import { accountRoutes } from './routes/account.js';
import { consoleRoutes } from './routes/console.js';
import { podRoutes } from './routes/pods.js';
import { clusterRoutes } from './routes/clusters.js';
import { logRoutes } from './routes/logs.js';
import { templateRoutes } from './routes/templates.js';
import { catalogRoutes } from './routes/catalog.js';
import { volumeRoutes } from './routes/network-volumes.js';
import { registryRoutes } from './routes/registries.js';
import { billingRoutes } from './routes/billing.js';
import { serverlessRoutes } from './routes/serverless.js';
import { jobRoutes } from './routes/jobs.js';
import { jobRequestRoutes } from './routes/job-requests.js';
import { workerProtocolRoutes } from './routes/worker-protocol.js';
import { agentRoutes } from './routes/agent.js';
import { agentInstallRoutes } from './routes/agent-install.js';
import { graphqlRoutes } from './routes/graphql.js';
import { hideV1, registerV1 } from './routes/v1/index.js';
import { registerReadiness, type Readiness } from './readiness.js';
import { RequestLogController } from './request-log-controller.js';
import { lazyChildLogger } from './request-logger.js';
import { findNul, jsonMayHoldNul, nulViolation, urlHasNul } from '../transport/nul-text.js';
import { requestIdOf } from './request-id.js';
import { emptyBodyProblem } from './empty-body.js';
import { answerClientError } from './client-errors.js';
import { useRouteCompilers } from './lazy-schemas.js';
import { applyRequestTimeouts } from './listener-limits.js';
import { typed } from './type-provider.js';
import { checkResponses, serializerCheck, type ResponseMismatch } from './response-check.js';
import type { Server as TlsServer } from 'node:tls';
import type { ServerCertificates } from './tls-certificates.js';

/** Client addresses whose requests without a key are counted at once; past it the oldest are forgotten (a bound on memory, not a limit on callers). */
const ANONYMOUS_CALLERS_KEPT = 100_000;
import { ApiError, validationFailed } from '../domain/errors.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export interface BuildAppOptions {
  /** Fastify logger options or instance; false in tests. */
  logger?: FastifyServerOptions['logger'] | FastifyServerOptions['loggerInstance'];
  /** Compile every route's schemas now instead of on each route's first use (lazy-schemas.ts). @default false */
  eagerSchemas?: boolean;
  /**
   * Test mode: every JSON answer is checked against its route's response schema for the status;
   * a mismatch answers 500 naming it and is reported here (response-check.ts). @default off
   */
  checkResponses?: (mismatch: ResponseMismatch) => void;
  /** Where the built web console is (routes/console.ts). @default dist/console of this package */
  consoleDir?: string;
  /** Until it is ready, requests that need adopted state answer 503 (readiness.ts). @default always ready */
  readiness?: Readiness;
  /** Serve HTTPS with these certificates (`server.tls`); the server then is an `https.Server`. @default plain HTTP */
  tls?: ServerCertificates;
}

/** Query strings that carry credentials are cut from logged URLs. */
const redactUrl = (url: string): string => url.replace(/([?&]api_key=)[^&]*/gi, '$1[redacted]');

export const loggerOptions = (level: string) => ({
  level,
  redact: {
    paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.username', '*.accessSecret'],
    censor: '[redacted]',
  },
  serializers: {
    // `ip`: the client's address (the forwarded one from a trusted proxy, `server.trustedProxies`)
    req: (req: { method: string; url: string; id: string; ip?: string }) => ({
      method: req.method,
      url: redactUrl(req.url),
      id: req.id,
      ...(req.ip !== undefined ? { client: req.ip } : {}),
    }),
  },
});

/** Builds the HTTP application over the services. It never listens; main.ts and tests decide that. */
export async function buildApp(services: TransportServices, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const { config } = services;
  const loggerSetting = options.logger ?? false;
  // One "request completed" line per request at info (request-log-controller.ts): below info, skip
  // request lines altogether (Fastify otherwise times every reply for a line it then drops).
  const requestLogging =
    typeof loggerSetting === 'object' && loggerSetting !== null && 'isLevelEnabled' in loggerSetting
      ? (loggerSetting as { isLevelEnabled(level: string): boolean }).isLevelEnabled('info')
      : loggerSetting !== false;
  const app = Fastify({
    logController: new RequestLogController({ disableRequestLogging: !requestLogging }),
    ...(typeof loggerSetting === 'object' && loggerSetting !== null && 'child' in loggerSetting
      ? { loggerInstance: loggerSetting }
      : { logger: loggerSetting as FastifyServerOptions['logger'] }),
    bodyLimit: config.server.bodyLimit,
    ...(loggerSetting === false ? {} : { childLoggerFactory: lazyChildLogger }),
    // the client's x-request-id only when safe to log (request-id.ts)
    requestIdHeader: false,
    genReqId: requestIdOf,
    clientErrorHandler: answerClientError(config.server),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 256 },
    frameworkErrors,
    // X-Forwarded-For/-Proto/-Host believed from these peers only (request.ip, .protocol, .host)
    ...(config.server.trustedProxies.length > 0 ? { trustProxy: config.server.trustedProxies } : {}),
    ...(options.tls ? { https: options.tls.serverOptions(config.server.headersTimeoutMs) } : {}),
  }) as unknown as FastifyInstance;
  if (options.tls) options.tls.attach(app.server as unknown as TlsServer);
  applyRequestTimeouts(app.server, config.server);
  if (services.metrics) countReplies(app, services.metrics);

  // Bodies are validated strictly (no coercion, unknown properties reported, every violation
  // listed); query strings and path parameters are coerced from their text form.
  const bodyAjv = addFormats(
    new Ajv({ allErrors: true, coerceTypes: false, useDefaults: false, removeAdditional: false, strict: false }),
  );
  const paramAjv = addFormats(
    new Ajv({ allErrors: true, coerceTypes: 'array', useDefaults: true, removeAdditional: false, strict: false }),
  );
  useRouteCompilers(app, {
    bodyAjv,
    paramAjv,
    eager: options.eagerSchemas ?? false,
    ...(options.checkResponses ? { wrapSerializer: serializerCheck(options.checkResponses) } : {}),
  });

  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    // No id, name or parameter holds a NUL; PostgreSQL text cannot store one (it answered 500).
    if (urlHasNul(request.url))
      return done(
        new ApiError(
          'INVALID_PARAMETER',
          'The URL holds a NUL character (%00); no id or query parameter may contain one.',
        ),
      );
    done();
  });
  // REST bodies: the default parser (with its prototype-poisoning checks), then a NUL check that
  // costs one scan of the text and walks the body only when the text holds the escape `\u0000`.
  // GraphQL checks its own arguments and variables, and answers in its own shape.
  // An empty body is no body on a route that takes none: clients send `Content-Type:
  // application/json` on every call, a DELETE included (SkyPilot's REST v2 client, python-requests,
  // adds `Content-Length: 0`). A route that takes a body still answers an empty one 400.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, text, done) => {
    if (text === '') return done(emptyBodyProblem(request), undefined);
    void parseJson(request, text as string, (err, value) => {
      if (err || !jsonMayHoldNul(text as string) || request.routeOptions.url === '/graphql') return done(err, value);
      const at = findNul(value);
      if (at !== null) return done(validationFailed([nulViolation(at)]), undefined);
      done(null, value);
    });
  });
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs') || route.url.startsWith('/v1/docs')) {
      route.config = { ...(route.config ?? {}), public: true };
      route.schema = { ...(route.schema ?? {}), hide: true };
    }
  });

  registerErrorHandling(app);
  if (options.checkResponses) checkResponses(app, options.checkResponses);
  if (config.server.jobPort !== null) restrictToJobApi(app, config.server.publicUrl);
  // Before the auth hook: a start in progress answers 503 without reading a key.
  registerReadiness(app, options.readiness);
  // One limiter for the auth hook (a request is one unit) and GraphQL (a root field is one unit).
  const rateLimiter = new RestRateLimiter(config.rateLimits, services.clock);
  const anonymousLimiter = new RestRateLimiter(config.rateLimits, services.clock, {
    subject: 'client address (a request without an API key)',
    maxCounters: ANONYMOUS_CALLERS_KEPT,
  });
  registerAuth(app, { accounts: services.accounts, rateLimiter, anonymousLimiter });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Gantry API',
        version: '2.0.0',
        description:
          'Pods, templates, network volumes, registries, catalog and serverless endpoints. Errors are application/problem+json.',
      },
      servers: [{ url: config.server.publicUrl }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    // /v1 has its own document (GET /v1/openapi.json)
    transform: hideV1,
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { url: '/v2/openapi.json' },
  });

  // Routes read their inputs typed from their schemas (type-provider.ts).
  const routes = typed(app);
  systemRoutes(routes, services);
  metricsRoutes(routes, services);
  consoleRoutes(routes, options.consoleDir !== undefined ? { dir: options.consoleDir } : {});
  accountRoutes(routes, services);
  podRoutes(routes, services);
  clusterRoutes(routes, services);
  logRoutes(routes, services);
  templateRoutes(routes, services);
  catalogRoutes(routes, services);
  volumeRoutes(routes, services);
  registryRoutes(routes, services);
  billingRoutes(routes, services);
  serverlessRoutes(routes, services);
  jobRequestRoutes(routes, services, jobRoutes(routes, services));
  workerProtocolRoutes(routes, services);
  agentRoutes(routes, services);
  agentInstallRoutes(routes, services);
  graphqlRoutes(routes, services, { keys: rateLimiter, anonymous: anonymousLimiter });
  await registerV1(app, services);

  await app.ready();
  return app;
}
