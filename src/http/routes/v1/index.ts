/**
 * REST v1 (`/v1`, the API runpodctl's REST commands speak): a thin layer over the same services as
 * /v2, with v1's field names, defaults, status codes and bare-array lists (docs/rest-v1.md). Its
 * routes live in one encapsulated scope with their own OpenAPI document (`GET /v1/openapi.json`).
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { typed } from '../../type-provider.js';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { ErrorObject } from 'ajv';
import type { TransportServices } from '../../../transport/services.js';
import { ApiError } from '../../../domain/errors.js';
import { describeViolation } from '../../plugins/errors.js';
import { podV1Routes } from './pods.js';
import { endpointV1Routes } from './endpoints.js';
import { templateV1Routes } from './templates.js';
import { networkVolumeV1Routes } from './network-volumes.js';
import { containerRegistryAuthV1Routes } from './container-registry-auth.js';
import { publishedV1Document } from './openapi-document.js';
import { billingFromService, billingV1Routes, type BillingQueries } from './billing.js';

const V1_PREFIX = '/v1';

/** /v2's swagger transform: v1 routes stay out of /v2/openapi.json. */
export const hideV1 = ({ schema, url }: { schema: unknown; url: string }) =>
  url === V1_PREFIX || url.startsWith(`${V1_PREFIX}/`)
    ? { schema: { ...(schema as object), hide: true }, url }
    : { schema: schema as never, url };

export async function registerV1(
  app: FastifyInstance,
  services: TransportServices,
  billing: BillingQueries = billingFromService(services.billing),
): Promise<void> {
  await app.register(
    async (v1) => {
      await v1.register(swagger, {
        decorator: 'swaggerV1',
        openapi: {
          openapi: '3.1.0',
          info: {
            title: 'Gantry REST v1',
            version: '1.0.0',
            description:
              "RunPod's REST v1 (what runpodctl speaks) over Gantry: pods, endpoints, templates, network volumes, registry credentials and billing. Lists are bare arrays; errors are application/problem+json.",
          },
          servers: [{ url: `${services.config.server.publicUrl.replace(/\/$/, '')}${V1_PREFIX}` }],
          components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
          security: [{ bearer: [] }],
        },
      });

      // runpodctl sends `Content-Type: application/json` with no body on start/stop (Content-Length: 0)
      // and delete (no Content-Length at all): an empty body is no body, not malformed JSON.
      v1.addHook('onRequest', (request, _reply, done) => {
        const { headers } = request;
        const length = headers['content-length'];
        if ((length === undefined || length === '0') && headers['transfer-encoding'] === undefined)
          delete headers['content-type'];
        done();
      });

      // v1 answers invalid input with 400 (/v2 uses 422); the parent handler renders the problem.
      v1.setErrorHandler((error: FastifyError & { validation?: ErrorObject[]; validationContext?: string }) => {
        if (error.validation && (error.validationContext ?? 'body') === 'body') {
          const errors = error.validation.map((v) => describeViolation(v, 'body'));
          throw new ApiError('BAD_REQUEST', `The request failed validation: ${errors.join('; ')}`, { errors });
        }
        if (error instanceof ApiError && error.status === 422)
          throw new ApiError('BAD_REQUEST', error.detail, error.errors ? { errors: error.errors } : {});
        throw error;
      });

      const dataCenterIds = services.config.catalog.dataCenters.map((d) => d.id);
      // the routes and the catalog are fixed once the server runs: the document is made once
      let published: unknown;
      const v1Document = () =>
        (published ??= publishedV1Document((v1 as unknown as { swaggerV1(): unknown }).swaggerV1(), dataCenterIds));
      v1.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => v1Document());
      // The browsable page the v1 document lists (`GET /v1/docs`), over that document, as /docs is
      // over /v2's; its routes are public and left out of the documents (app.ts, onRoute).
      await v1.register(swaggerUi, {
        routePrefix: '/docs',
        uiConfig: { url: `${V1_PREFIX}/openapi.json` },
        transformSpecification: () => v1Document() as Record<string, unknown>,
        transformSpecificationClone: false,
      });
      const routes = typed(v1);
      podV1Routes(routes, services);
      endpointV1Routes(routes, services);
      templateV1Routes(routes, services);
      networkVolumeV1Routes(routes, services);
      containerRegistryAuthV1Routes(routes, services);
      billingV1Routes(routes, billing);
    },
    { prefix: V1_PREFIX },
  );
}
