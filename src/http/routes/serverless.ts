import type { TypedApp } from '../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import { iso } from '../../domain/clock.js';
import type { Endpoint } from '../../domain/endpoint.js';
import { toServerlessView, type ServerlessEndpointView } from '../../serverless/endpoint-view.js';
import type { EndpointInput } from '../../serverless/endpoints-service.js';
import type { Services } from '../../services.js';
import { principalOf } from '../plugins/auth.js';
import { Deleted, errorResponses, IdParams } from '../schemas.js';

const closed = { additionalProperties: false } as const;
const StringList = (description: string) =>
  Type.Union([Type.String({ maxLength: 1024 }), Type.Array(Type.String({ maxLength: 64 }), { maxItems: 64 })], {
    description,
  });

/** Request fields mirror the GraphQL `EndpointInput` names; lists may be comma strings or arrays. */
const endpointFields = {
  name: Type.String({ minLength: 1, maxLength: 191 }),
  templateId: Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'a serverless template (isServerless true): yours or a public one',
  }),
  type: Type.Optional(
    Type.Unsafe<string>({
      type: 'string',
      enum: ['QB', 'LB', 'QUEUE', 'LOAD_BALANCER'],
      description: 'default QB (queue-based)',
    }),
  ),
  gpuIds: StringList('GPU pools, e.g. "ADA_24,AMPERE_24" or ["ADA_24"]; see GET /v2/catalog/pools'),
  gpuCount: Type.Optional(Type.Integer({ description: 'GPUs per worker, 1-16; default 1' })),
  workersMin: Type.Optional(Type.Integer({ description: 'default 0 (scale to zero)' })),
  workersMax: Type.Optional(Type.Integer({ description: 'default 3, at most 100' })),
  idleTimeout: Type.Optional(Type.Integer({ description: 'seconds an idle worker stays up, 0-3600; default 5' })),
  scalerType: Type.Optional(
    Type.Unsafe<string>({ type: 'string', enum: ['QUEUE_DELAY', 'REQUEST_COUNT'], description: 'default QUEUE_DELAY' }),
  ),
  scalerValue: Type.Optional(Type.Integer({ description: '>= 1; default 4' })),
  locations: Type.Optional(StringList('country codes of the data centers workers may run in; empty = any')),
  networkVolumeId: Type.Optional(
    Type.Union([Type.String({ maxLength: 64 }), Type.Null()], {
      description: 'one of your network volumes; null or "" = none',
    }),
  ),
  flashboot: Type.Optional(
    Type.Union([Type.Boolean(), Type.Unsafe<string>({ type: 'string', enum: ['OFF', 'FLASHBOOT'] })], {
      description: 'default OFF',
    }),
  ),
  allowedCudaVersions: Type.Optional(StringList('host CUDA versions, "<major>.<minor>"; empty = any')),
  executionTimeoutMs: Type.Optional(
    Type.Integer({ description: 'default execution timeout of jobs, 5000 ms to 7 days; default 600000' }),
  ),
  env: Type.Optional(
    Type.Record(Type.String(), Type.String({ maxLength: 32768 }), {
      maxProperties: 256,
      description: 'overrides the template env per key',
    }),
  ),
};

const CreateEndpointRequest = Type.Object(endpointFields, closed);
const PatchEndpointRequest = Type.Object(
  {
    ...endpointFields,
    name: Type.Optional(endpointFields.name),
    templateId: Type.Optional(endpointFields.templateId),
    gpuIds: Type.Optional(endpointFields.gpuIds),
  },
  { ...closed, description: 'Only the fields sent change (send networkVolumeId null to detach the volume).' },
);

/** spec 2.10 */
const ServerlessEndpointSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.String({ description: 'QUEUE or LOAD_BALANCER' }),
  requestUrls: Type.Object({
    run: Type.String(),
    runSync: Type.String(),
    status: Type.String(),
    stream: Type.String(),
    cancel: Type.String(),
    retry: Type.String(),
    purgeQueue: Type.String(),
    health: Type.String(),
  }),
  image: Type.String(),
  args: Type.String(),
  disk: Type.Integer(),
  ports: Type.Array(Type.String()),
  env: Type.Record(Type.String(), Type.String()),
  registry: Type.Union([Type.String(), Type.Null()]),
  gpu: Type.Object({ pools: Type.Array(Type.String()), count: Type.Integer() }),
  workers: Type.Object({
    min: Type.Integer(),
    max: Type.Integer(),
    idleTimeout: Type.Integer({ description: 'seconds' }),
  }),
  scaling: Type.Object({
    type: Type.String(),
    queueDelay: Type.Optional(Type.Integer()),
    requestCount: Type.Optional(Type.Integer()),
  }),
  dataCenterIds: Type.Array(Type.String()),
  networkVolumes: Type.Array(Type.String()),
  timeout: Type.Integer({ description: 'default execution timeout of jobs, ms' }),
  flashboot: Type.String({ description: 'OFF or FLASHBOOT' }),
  allowedCudaVersions: Type.Array(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
});
const ServerlessEndpointList = Type.Object({ endpoints: Type.Array(ServerlessEndpointSchema) });

const WorkerSchema = Type.Object({
  id: Type.String(),
  status: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  lastPingAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
const WorkerList = Type.Object({ workers: Type.Array(WorkerSchema) });

type EndpointBody = Static<typeof PatchEndpointRequest>;

/** REST body → service input: `flashboot` may be a boolean or OFF/FLASHBOOT. */
const toInput = ({ flashboot, ...rest }: EndpointBody): EndpointInput => ({
  ...rest,
  ...(flashboot !== undefined ? { flashboot: flashboot === true || flashboot === 'FLASHBOOT' } : {}),
});

const tags = ['serverless'];

export function serverlessRoutes(app: TypedApp, { endpoints, config }: Services): void {
  // Read at each request: a server started on port 0 learns its job URL's port only once it listens.
  const ctx = {
    get publicUrl() {
      return config.server.publicJobUrl;
    },
    dataCenters: config.catalog.dataCenters,
  };
  const render = async (e: Endpoint): Promise<ServerlessEndpointView> =>
    toServerlessView(e, await endpoints.templateOf(e), ctx);

  app.get(
    '/v2/serverless',
    {
      schema: {
        tags,
        summary: 'List your serverless endpoints',
        response: { 200: ServerlessEndpointList, ...errorResponses },
      },
    },
    async (request) => ({
      endpoints: await Promise.all((await endpoints.list(principalOf(request).accountId)).map(render)),
    }),
  );

  app.post(
    '/v2/serverless',
    {
      schema: {
        tags,
        summary: 'Create a serverless endpoint',
        description: 'Field names follow the GraphQL saveEndpoint input. The template must be a serverless one.',
        body: CreateEndpointRequest,
        response: { 201: ServerlessEndpointSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const created = await endpoints.create(principalOf(request).accountId, toInput(request.body));
      return reply.code(201).send(await render(created));
    },
  );

  app.get(
    '/v2/serverless/:id',
    {
      schema: {
        tags,
        summary: 'Get one of your serverless endpoints',
        params: IdParams,
        response: { 200: ServerlessEndpointSchema, ...errorResponses },
      },
    },
    async (request) => render(await endpoints.get(principalOf(request).accountId, request.params.id)),
  );

  app.patch(
    '/v2/serverless/:id',
    {
      schema: {
        tags,
        summary: 'Change a serverless endpoint',
        params: IdParams,
        body: PatchEndpointRequest,
        response: { 200: ServerlessEndpointSchema, ...errorResponses },
      },
    },
    async (request) =>
      render(await endpoints.update(principalOf(request).accountId, request.params.id, toInput(request.body))),
  );

  app.delete(
    '/v2/serverless/:id',
    {
      schema: {
        tags,
        summary: 'Delete a serverless endpoint',
        description: 'Refused with 400 ENDPOINT_HAS_WORKERS until workersMin and workersMax are both 0.',
        params: IdParams,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await endpoints.delete(principalOf(request).accountId, request.params.id);
      return reply.code(204).send();
    },
  );

  app.get(
    '/v2/serverless/:id/workers',
    {
      schema: {
        tags,
        summary: "List an endpoint's workers",
        params: IdParams,
        response: { 200: WorkerList, ...errorResponses },
      },
    },
    async (request) => ({
      workers: (await endpoints.workers(principalOf(request).accountId, request.params.id)).map((w) => ({
        id: w.id,
        status: w.status,
        createdAt: iso(w.createdAt),
        lastPingAt: w.lastPingAt === null ? null : iso(w.lastPingAt),
      })),
    }),
  );
}
