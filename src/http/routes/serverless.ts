import type { TypedApp } from '../type-provider.js';
import { Type } from '@sinclair/typebox';
import { iso } from '../../domain/clock.js';
import type { Endpoint, EndpointWorker } from '../../domain/endpoint.js';
import { ApiError, validationFailed } from '../../domain/errors.js';
import type { Template } from '../../domain/template.js';
import { toServerlessView, type ServerlessEndpointView } from '../../serverless/endpoint-view.js';
import { isStale } from '../../serverless/endpoint-releases.js';
import type { TransportServices } from '../../transport/services.js';
import { principalOf } from '../plugins/auth.js';
import { Deleted, errorResponses, IdParams, Nullable } from '../schemas.js';
import {
  containerGiven,
  CreateEndpointRequest,
  inV2Names,
  ENDPOINT_TEMPLATE_MARK,
  FlashBootKeepAnswer,
  isEndpointTemplate,
  toEndpointInput,
  UpdateEndpointRequest,
  type UpdateBody,
} from './serverless-body.js';

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
  // null for a CPU endpoint, which answers `cpu` (its configurations in preference order, memory in GB)
  gpu: Nullable(
    Type.Object({
      pools: Type.Array(Type.String()),
      count: Type.Integer(),
      allowedCudaVersions: Type.Array(Type.String()),
      minCudaVersion: Nullable(Type.String({ description: 'the lowest host CUDA version of workers; null = none' })),
    }),
  ),
  cpu: Type.Optional(Type.Array(Type.Object({ id: Type.String(), vcpuCount: Type.Integer(), memory: Type.Integer() }))),
  workers: Type.Object({
    min: Type.Integer(),
    max: Type.Integer(),
    idleTimeout: Type.Optional(
      Type.Integer({ description: 'seconds; omitted for a QUEUE endpoint scaling on REQUEST_COUNT' }),
    ),
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
  flashBootKeepSeconds: FlashBootKeepAnswer,
  allowedCudaVersions: Type.Array(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  loadBalancerUrl: Type.Optional(Type.String({ format: 'uri', description: 'Gantry extension: an LB address' })),
});
const ServerlessEndpointList = Type.Object({ endpoints: Type.Array(ServerlessEndpointSchema) });

const WORKER_STATUSES = ['RUNNING', 'IDLE', 'INITIALIZING', 'THROTTLED', 'UNHEALTHY', 'SUSPENDED'] as const;
type WorkerStatus = (typeof WORKER_STATUSES)[number];
const WorkerSchema = Type.Object({
  id: Type.String(),
  status: Type.Unsafe<WorkerStatus>({ type: 'string', enum: [...WORKER_STATUSES] }),
  isStale: Type.Boolean({ description: 'runs an older release than the latest (false when its version is unknown)' }),
  version: Nullable(Type.Integer({ description: 'the endpoint version it was launched with; null if unknown' })),
  gpuCount: Type.Integer({ minimum: 0 }),
  image: Nullable(Type.String()),
  uptimeSeconds: Nullable(Type.Integer({ minimum: 0, description: 'null until it is running' })),
  gpuTypeId: Nullable(Type.String()),
  dataCenterId: Nullable(Type.String()),
  startedAt: Nullable(Type.String({ format: 'date-time' })),
  createdAt: Type.String({ format: 'date-time' }),
  lastPingAt: Nullable(Type.String({ format: 'date-time' })),
});
const count = () => Type.Integer({ minimum: 0 });
const WorkerList = Type.Object({
  workers: Type.Array(WorkerSchema),
  summary: Type.Object({
    running: count(),
    idle: count(),
    initializing: count(),
    throttled: count(),
    unhealthy: count(),
    suspended: count(), // Gantry extension: FlashBoot (docs/serverless.md)
    total: count(),
  }),
  endpointVersion: Nullable(Type.Integer({ description: "the endpoint's current configuration version" })),
});

const ReleaseSchema = Type.Object({
  id: Type.String(),
  version: Nullable(Type.Integer()),
  source: Type.Unsafe<'MANUAL' | 'GIT_BUILD'>({ type: 'string', enum: ['GIT_BUILD', 'MANUAL'] }),
  buildId: Type.Null({ description: 'builds are not offered: always null' }),
  createdByUserId: Type.Null({ description: 'not recorded: always null' }),
  workerCount: Type.Integer({ minimum: 0, description: "live workers running this release's version" }),
  createdAt: Type.String({ format: 'date-time' }),
  diff: Type.Array(
    Type.Object({
      field: Type.String(),
      old: Type.Unknown({ description: 'previous value as JSON; null when added' }),
      new: Type.Unknown({ description: 'new value as JSON; null when removed' }),
    }),
  ),
});
const ReleaseList = Type.Object({
  endpointVersion: Nullable(Type.Integer()),
  rollout: Type.Object({
    inProgress: Type.Boolean(),
    workersOnLatest: count(),
    workersTotal: count(),
    percentOnLatest: Type.Integer({ minimum: 0, maximum: 100 }),
  }),
  releases: Type.Array(ReleaseSchema),
});

const statusOf = (w: EndpointWorker): WorkerStatus => {
  const s = w.status.toUpperCase();
  return (WORKER_STATUSES as readonly string[]).includes(s) ? (s as WorkerStatus) : 'UNHEALTHY';
};

const tags = ['serverless'];

export function serverlessRoutes(app: TypedApp, { endpoints, templates, config, clock }: TransportServices): void {
  // Read at each request: a server started on port 0 learns its job URL's port only once it listens.
  const ctx = {
    get publicUrl() {
      return config.server.publicJobUrl;
    },
    dataCenters: config.catalog.dataCenters,
    cpuFlavors: config.catalog.cpuFlavors,
    // the live config: the proxy's port and listening are known once it listens
    loadBalancer: config.proxy,
  };
  const render = async (e: Endpoint): Promise<ServerlessEndpointView> =>
    toServerlessView(e, await endpoints.templateOf(e), ctx);

  /**
   * Container settings in a body (image, args, disk, ports, registry) are kept in a serverless
   * template made for the endpoint from them over its base (the body's templateId, else the
   * endpoint's current template): the endpoint then runs that one. Answers the template the
   * endpoint is to run (undefined: unchanged) and the one this made (deleted again on failure).
   */
  const containerTemplate = async (
    accountId: string,
    b: UpdateBody,
    current: Endpoint | null,
    name: string,
  ): Promise<{ templateId?: string; seedCuda?: string[]; made: Template | null }> => {
    const named = b.templateId !== undefined ? await templates.get(accountId, b.templateId) : null;
    if (named && !named.isServerless)
      throw new ApiError(
        'NOT_SERVERLESS_TEMPLATE',
        `Template "${named.name}" (${named.id}) is a pod template; an endpoint needs a serverless template (create one with isServerless true).`,
      );
    if (!containerGiven(b)) {
      if (current === null && named === null) throw validationFailed(['image: is required unless templateId is set']);
      return { templateId: b.templateId, seedCuda: named?.allowedCudaVersions, made: null };
    }
    const base = named ?? (current ? await endpoints.templateOf(current) : null);
    const image = b.image ?? base?.imageName;
    if (!image) throw validationFailed(['image: is required unless templateId is set']);
    const made = await templates.create(accountId, {
      name: `${name} container`,
      imageName: image,
      args: b.args ?? base?.args ?? '',
      ...(b.disk !== undefined || base ? { containerDiskInGb: b.disk ?? base!.containerDiskInGb } : {}),
      ports: b.ports ?? base?.ports ?? [],
      env: base?.env ?? {},
      containerRegistryAuthId: b.registry !== undefined ? b.registry : (base?.containerRegistryAuthId ?? null),
      allowedCudaVersions: base?.allowedCudaVersions ?? [],
      isServerless: true,
      readme: `${ENDPOINT_TEMPLATE_MARK}: the container settings of serverless endpoint "${name}"; replaced when they change and deleted with it.`,
    });
    return { templateId: made.id, seedCuda: base?.allowedCudaVersions, made };
  };

  /** Runs `change`; a template made for it is deleted again if it fails, a replaced one after it succeeds. */
  const withTemplate = async (
    accountId: string,
    made: Template | null,
    replaced: Template | null,
    change: () => Promise<Endpoint>,
  ): Promise<Endpoint> => {
    let endpoint: Endpoint;
    try {
      endpoint = await change();
    } catch (err) {
      if (made) await templates.delete(accountId, made.id).catch(() => undefined);
      throw err;
    }
    if (replaced && isEndpointTemplate(replaced) && replaced.id !== endpoint.templateId)
      await templates.delete(accountId, replaced.id).catch(() => undefined);
    return endpoint;
  };

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
        description:
          "Set `gpu` (GPU pools; CPU endpoints are not offered) and `image` or `templateId` (body container fields override the template's, env merges per key). Defaults: workers {min 0, max 3, idleTimeout 10}, timeout 300000 ms, flashboot OFF. Makes the endpoint's first release.",
        body: CreateEndpointRequest,
        response: { 201: ServerlessEndpointSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const accountId = principalOf(request).accountId;
      const b = request.body;
      toEndpointInput(b, null, ctx); // refuses a bad body before any template is made
      const { templateId, seedCuda, made } = await containerTemplate(accountId, b, null, b.name);
      const created = await withTemplate(accountId, made, null, () =>
        inV2Names(() => endpoints.create(accountId, toEndpointInput(b, null, { ...ctx, templateId, seedCuda }))),
      );
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
        description:
          'Only the fields sent change. Changes of what workers run (container, env, GPUs, data centers, network volume) make a new release (GET /v2/serverless/{id}/releases); name, workers, scaling, timeout and flashboot apply at once.',
        params: IdParams,
        body: UpdateEndpointRequest,
        response: { 200: ServerlessEndpointSchema, ...errorResponses },
      },
    },
    async (request) => {
      const accountId = principalOf(request).accountId;
      const b = request.body;
      const current = await endpoints.get(accountId, request.params.id);
      toEndpointInput(b, current, ctx); // refuses a bad body before any template is made
      const { templateId, made } = await containerTemplate(accountId, b, current, b.name ?? current.name);
      const replaced = templateId !== undefined ? await endpoints.templateOf(current) : null;
      return render(
        await withTemplate(accountId, made, replaced, () =>
          inV2Names(() => endpoints.update(accountId, current.id, toEndpointInput(b, current, { ...ctx, templateId }))),
        ),
      );
    },
  );

  app.delete(
    '/v2/serverless/:id',
    {
      schema: {
        tags,
        summary: 'Delete a serverless endpoint',
        description:
          'Refused with 400 ENDPOINT_HAS_WORKERS until workers min and max are both 0. A template made for its container settings goes with it.',
        params: IdParams,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      const accountId = principalOf(request).accountId;
      const template = await endpoints.templateOf(await endpoints.get(accountId, request.params.id));
      await endpoints.delete(accountId, request.params.id);
      if (template && isEndpointTemplate(template))
        await templates.delete(accountId, template.id).catch(() => undefined);
      return reply.code(204).send();
    },
  );

  app.get(
    '/v2/serverless/:id/workers',
    {
      schema: {
        tags,
        summary: "List an endpoint's workers",
        description:
          'Live workers (dead ones are left out), each with the endpoint version it was launched with, and a count per status.',
        params: IdParams,
        response: { 200: WorkerList, ...errorResponses },
      },
    },
    async (request) => {
      const { endpoint, workers, releases } = await endpoints.workersWithReleases(
        principalOf(request).accountId,
        request.params.id,
      );
      const now = clock.now();
      const rows = workers.map((w) => {
        const status = statusOf(w);
        const started = status !== 'INITIALIZING' && status !== 'THROTTLED';
        return {
          id: w.id,
          status,
          isStale: isStale(releases, w),
          version: w.endpointVersion,
          gpuCount: w.gpuCount,
          image: w.image,
          uptimeSeconds: started ? Math.max(0, Math.floor((now - w.createdAt) / 1000)) : null,
          gpuTypeId: w.gpuTypeId,
          dataCenterId: w.dataCenterId,
          startedAt: started ? iso(w.createdAt) : null,
          createdAt: iso(w.createdAt),
          lastPingAt: w.lastPingAt === null ? null : iso(w.lastPingAt),
        };
      });
      const n = (s: WorkerStatus) => rows.filter((r) => r.status === s).length;
      return {
        workers: rows,
        summary: {
          running: n('RUNNING'),
          idle: n('IDLE'),
          initializing: n('INITIALIZING'),
          throttled: n('THROTTLED'),
          unhealthy: n('UNHEALTHY'),
          suspended: n('SUSPENDED'),
          total: rows.length,
        },
        endpointVersion: endpoint.version,
      };
    },
  );

  app.get(
    '/v2/serverless/:id/releases',
    {
      schema: {
        tags,
        summary: "List an endpoint's releases",
        description:
          'Its configuration history, newest first: a release at creation and at every change of what its workers run, with the fields that changed, the live workers on each, and how far the latest has rolled out.',
        params: IdParams,
        response: { 200: ReleaseList, ...errorResponses },
      },
    },
    async (request) => {
      const h = await endpoints.releases(principalOf(request).accountId, request.params.id);
      return {
        endpointVersion: h.endpointVersion,
        rollout: h.rollout,
        releases: h.releases.map((r) => ({
          id: r.id,
          version: r.version,
          source: r.source,
          buildId: null,
          createdByUserId: null,
          workerCount: r.workerCount,
          createdAt: iso(r.createdAt),
          diff: r.diff,
        })),
      };
    },
  );
}
