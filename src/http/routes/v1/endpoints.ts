/** REST v1 serverless endpoints (`/v1/endpoints`) over EndpointsService. */
import type { TypedApp } from '../../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import { iso } from '../../../domain/clock.js';
import { badRequest } from '../../../domain/errors.js';
import type { Endpoint } from '../../../domain/endpoint.js';
import { cpuConfigOf, inLocations, instanceIdOf } from '../../../domain/endpoint-compute.js';
import type { EndpointInput } from '../../../serverless/endpoint-settings.js';
import { loadBalancerUrlOf } from '../../../serverless/endpoint-view.js';
import type { TransportServices } from '../../../transport/services.js';
import { principalOf } from '../../plugins/auth.js';
import { Nullable } from '../../schemas.js';
import { closed, Deleted, Env, errorResponses, IdParam, StringArray } from './common.js';
import { templateV1View, TemplateV1Schema } from './templates.js';

const tags = ['endpoints'];
const Params = IdParam('endpointId');
type Params = Static<typeof Params>;
const ScalerType = Type.Unsafe<string>({ type: 'string', enum: ['QUEUE_DELAY', 'REQUEST_COUNT'] });

const fields = {
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 191 })),
  templateId: Type.String({ minLength: 1, maxLength: 64, description: 'a serverless template' }),
  computeType: Type.Optional(
    Type.Unsafe<string>({
      type: 'string',
      enum: ['GPU', 'CPU'],
      description: 'GPU (default): workers on gpuTypeIds; CPU: workers on cpuFlavorIds at vcpuCount vCPUs',
    }),
  ),
  gpuTypeIds: Type.Optional(StringArray('GPU types workers may use; their pools are kept. Default: every pool')),
  gpuCount: Type.Optional(Type.Integer({ minimum: 1, maximum: 16, default: 1 })),
  workersMin: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  workersMax: Type.Optional(Type.Integer({ minimum: 0, default: 3 })),
  idleTimeout: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600, default: 5 })),
  scalerType: Type.Optional(ScalerType),
  scalerValue: Type.Optional(Type.Integer({ minimum: 1, default: 4 })),
  executionTimeoutMs: Type.Optional(Type.Integer({ description: '5000 ms to 7 days; default 600000' })),
  flashboot: Type.Optional(Type.Boolean({ default: false })),
  flashBootKeepSeconds: Type.Optional(
    Type.Number({
      description:
        'Gantry extension: seconds an idle FlashBoot worker is kept suspended, whole seconds 0 to 86400 (default 600), at most serverless.flashboot.maxKeepMs at use',
    }),
  ),
  allowedCudaVersions: Type.Optional(StringArray('host CUDA versions', Type.String({ pattern: '^\\d+\\.\\d+$' }))),
  minCudaVersion: Type.Optional(
    Type.String({
      pattern: '^$|^\\d+\\.\\d+$',
      description: 'the lowest host CUDA version workers may run on (`major.minor`); "" removes the bound',
    }),
  ),
  dataCenterIds: Type.Optional(
    StringArray('data centers workers may run in; kept as their countries (the endpoint `locations`)'),
  ),
  networkVolumeId: Type.Optional(Type.String({ maxLength: 64, description: '"" = none' })),
  networkVolumeIds: Type.Optional(StringArray('at most one network volume', Type.String({ maxLength: 64 }))),
  cpuFlavorIds: Type.Optional(
    StringArray('CPU flavors of a CPU endpoint, in preference order; default every flavor with vcpuCount'),
  ),
  vcpuCount: Type.Optional(Type.Integer({ minimum: 2, description: 'vCPUs of a CPU endpoint’s workers; default 2' })),
  env: Type.Optional(Env),
};
const CreateBody = Type.Object(fields, closed);
const { computeType: _computeType, ...updatable } = fields;
const UpdateBody = Type.Object(
  { ...updatable, templateId: Type.Optional(fields.templateId) },
  { ...closed, description: 'Only the fields sent change.' },
);
type Body = Partial<Static<typeof CreateBody>>;

const WorkerSchema = Type.Object({ id: Type.String(), desiredStatus: Type.String(), lastStartedAt: Type.String() });
const EndpointSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  userId: Type.String(),
  templateId: Type.String(),
  template: Type.Optional(TemplateV1Schema),
  computeType: Type.String(),
  gpuTypeIds: Type.Array(Type.String()),
  gpuCount: Type.Integer(),
  workersMin: Type.Integer(),
  workersMax: Type.Integer(),
  idleTimeout: Type.Integer(),
  scalerType: Type.String(),
  scalerValue: Type.Integer(),
  executionTimeoutMs: Type.Integer(),
  flashboot: Type.Boolean({ description: 'Gantry extension (runpodctl reads it)' }),
  flashBootKeepSeconds: Type.Integer({
    description:
      'Gantry extension: seconds an idle FlashBoot worker is kept suspended (as stored; the operator maximum applies at use)',
  }),
  allowedCudaVersions: Type.Array(Type.String()),
  minCudaVersion: Nullable(Type.String({ description: 'the lowest host CUDA version workers run on; null = none' })),
  dataCenterIds: Type.Array(Type.String()),
  networkVolumeId: Type.Optional(Type.String()),
  networkVolumeIds: Type.Array(Type.String()),
  instanceIds: Type.Array(Type.String()),
  env: Type.Record(Type.String(), Type.String()),
  workers: Type.Optional(Type.Array(WorkerSchema)),
  createdAt: Type.String(),
  version: Type.Integer(),
  loadBalancerUrl: Type.Optional(
    Type.String({
      format: 'uri',
      description:
        "Gantry extension: a load-balancing endpoint's address on the proxy listener (docs/load-balancing.md)",
    }),
  ),
});
type EndpointV1 = Static<typeof EndpointSchema>;
const Includes = Type.Object({
  includeTemplate: Type.Optional(Type.Boolean({ default: false })),
  includeWorkers: Type.Optional(Type.Boolean({ default: false })),
});
type Includes = Static<typeof Includes>;

export function endpointV1Routes(app: TypedApp, { endpoints, catalog, config }: TransportServices): void {
  const gpuTypes = () => catalog.listGpuTypes({ availability: false });
  const dataCenters = () => catalog.listDataCenters();

  /** v1 GPU types → the pools they belong to (the endpoint keeps pools). */
  function poolsOf(ids: readonly string[]): string[] {
    const types = gpuTypes();
    return [
      ...new Set(
        ids.map((id) => {
          const t = types.find((g) => g.id === id);
          if (!t) throw badRequest(`gpuTypeIds: "${id}" is not a GPU type (GET /v2/catalog/gpus)`);
          return t.pool;
        }),
      ),
    ];
  }

  /** v1 data centers → their countries (the endpoint's `locations`); every data center = any. */
  function locationsOf(ids: readonly string[]): string[] {
    const all = dataCenters();
    const chosen = ids.map((id) => {
      const d = all.find((c) => c.id === id);
      if (!d) throw badRequest(`dataCenterIds: "${id}" is not a data center (GET /v2/catalog/datacenters)`);
      return d;
    });
    if (all.every((d) => chosen.includes(d))) return [];
    return [...new Set(chosen.map((d) => d.country))];
  }

  /**
   * A CPU endpoint's instances (`computeType: CPU` on create; `cpuFlavorIds` or `vcpuCount` on a
   * change of one): each flavor at `vcpuCount` (default 2) vCPUs; undefined when the body chooses none.
   */
  function instanceIds(b: Body, current: Endpoint | null): string[] | undefined {
    const cpu = current === null ? b.computeType === 'CPU' : current.instanceIds.length > 0;
    if (!cpu || (current !== null && b.cpuFlavorIds === undefined && b.vcpuCount === undefined)) return undefined;
    const flavors = catalog.listCpuFlavors();
    const vcpus = b.vcpuCount ?? (current ? cpuConfigOf(current.instanceIds[0]!).vcpuCount : 2);
    const chosen =
      b.cpuFlavorIds && b.cpuFlavorIds.length > 0
        ? b.cpuFlavorIds
        : current
          ? current.instanceIds.map((id) => cpuConfigOf(id).id)
          : flavors.filter((f) => f.vcpuOptions.includes(vcpus)).map((f) => f.id);
    return chosen.map((f) => instanceIdOf(f, vcpus, flavors));
  }

  function input(b: Body, current: Endpoint | null = null): EndpointInput {
    const cpu = instanceIds(b, current);
    if (b.networkVolumeIds !== undefined && b.networkVolumeIds.length > 1)
      throw badRequest('networkVolumeIds: a Gantry endpoint mounts at most one network volume');
    const volume = b.networkVolumeIds !== undefined ? (b.networkVolumeIds[0] ?? '') : b.networkVolumeId;
    return {
      ...(b.name !== undefined ? { name: b.name } : {}),
      ...(b.templateId !== undefined ? { templateId: b.templateId } : {}),
      ...(b.gpuTypeIds !== undefined && cpu === undefined ? { gpuIds: poolsOf(b.gpuTypeIds) } : {}),
      ...(cpu !== undefined ? { instanceIds: cpu } : {}),
      ...(b.gpuCount !== undefined ? { gpuCount: b.gpuCount } : {}),
      ...(b.workersMin !== undefined ? { workersMin: b.workersMin } : {}),
      ...(b.workersMax !== undefined ? { workersMax: b.workersMax } : {}),
      ...(b.idleTimeout !== undefined ? { idleTimeout: b.idleTimeout } : {}),
      ...(b.scalerType !== undefined ? { scalerType: b.scalerType } : {}),
      ...(b.scalerValue !== undefined ? { scalerValue: b.scalerValue } : {}),
      ...(b.executionTimeoutMs !== undefined ? { executionTimeoutMs: b.executionTimeoutMs } : {}),
      ...(b.flashboot !== undefined ? { flashboot: b.flashboot } : {}),
      ...(b.flashBootKeepSeconds !== undefined ? { flashBootKeepSeconds: b.flashBootKeepSeconds } : {}),
      ...(b.allowedCudaVersions !== undefined ? { allowedCudaVersions: b.allowedCudaVersions } : {}),
      ...(b.minCudaVersion !== undefined ? { minCudaVersion: b.minCudaVersion === '' ? null : b.minCudaVersion } : {}),
      ...(b.dataCenterIds !== undefined ? { locations: locationsOf(b.dataCenterIds) } : {}),
      ...(volume !== undefined ? { networkVolumeId: volume } : {}),
      ...(b.env !== undefined ? { env: b.env } : {}),
    };
  }

  async function view(accountId: string, e: Endpoint, include: Includes = {}): Promise<EndpointV1> {
    const out: EndpointV1 = {
      id: e.id,
      name: e.name,
      userId: e.accountId,
      templateId: e.templateId,
      computeType: e.instanceIds.length > 0 ? 'CPU' : 'GPU',
      gpuTypeIds: gpuTypes()
        .filter((t) => e.gpuIds.includes(t.pool))
        .map((t) => t.id),
      gpuCount: e.gpuCount,
      workersMin: e.workersMin,
      workersMax: e.workersMax,
      idleTimeout: e.idleTimeout,
      scalerType: e.scalerType,
      scalerValue: e.scalerValue,
      executionTimeoutMs: e.executionTimeoutMs,
      flashboot: e.flashboot,
      flashBootKeepSeconds: e.flashBootKeepSeconds,
      allowedCudaVersions: e.allowedCudaVersions,
      minCudaVersion: e.minCudaVersion,
      dataCenterIds: dataCenters()
        .filter((d) => inLocations(e.locations, d))
        .map((d) => d.id),
      ...(e.networkVolumeId !== null ? { networkVolumeId: e.networkVolumeId } : {}),
      networkVolumeIds: e.networkVolumeId !== null ? [e.networkVolumeId] : [],
      instanceIds: e.instanceIds,
      env: e.env,
      createdAt: iso(e.createdAt),
      version: e.version,
    };
    // the live config: the proxy's port and listening are known once it listens
    const lb = loadBalancerUrlOf(e, config.proxy);
    if (lb !== null) out.loadBalancerUrl = lb;
    if (include.includeTemplate) {
      const template = await endpoints.templateOf(e);
      if (template) out.template = templateV1View(template);
    }
    if (include.includeWorkers)
      out.workers = (await endpoints.workers(accountId, e.id)).map((w) => ({
        id: w.id,
        desiredStatus: w.status,
        lastStartedAt: iso(w.createdAt),
      }));
    return out;
  }

  app.post(
    '/endpoints',
    {
      schema: {
        tags,
        operationId: 'CreateEndpoint',
        summary: 'Create a serverless endpoint',
        body: CreateBody,
        response: { 200: EndpointSchema, ...errorResponses },
      },
    },
    async (request) => {
      const accountId = principalOf(request).accountId;
      const b = request.body;
      const created = await endpoints.create(accountId, {
        name: b.name ?? `endpoint-${b.templateId}`,
        ...(b.computeType === 'CPU' ? {} : { gpuIds: catalog.listPools().map((p) => p.id) }),
        ...input(b),
      });
      return view(accountId, created);
    },
  );

  app.get(
    '/endpoints',
    {
      schema: {
        tags,
        operationId: 'ListEndpoints',
        summary: 'List your endpoints (a bare array)',
        querystring: Includes,
        response: { 200: Type.Array(EndpointSchema), ...errorResponses },
      },
    },
    async (request) => {
      const accountId = principalOf(request).accountId;
      const list = await endpoints.list(accountId);
      return Promise.all(list.map((e) => view(accountId, e, request.query)));
    },
  );

  app.get(
    '/endpoints/:endpointId',
    {
      schema: {
        tags,
        operationId: 'GetEndpoint',
        summary: 'Read one endpoint',
        params: Params,
        querystring: Includes,
        response: { 200: EndpointSchema, ...errorResponses },
      },
    },
    async (request) => {
      const accountId = principalOf(request).accountId;
      const e = await endpoints.get(accountId, request.params.endpointId);
      return view(accountId, e, request.query);
    },
  );

  for (const [method, url, operationId] of [
    ['PATCH', '/endpoints/:endpointId', 'UpdateEndpoint'],
    ['POST', '/endpoints/:endpointId/update', 'UpdateEndpointPost'],
  ] as const)
    app.route({
      method,
      url,
      schema: {
        tags,
        operationId,
        summary: 'Change an endpoint',
        params: Params,
        body: UpdateBody,
        response: { 200: EndpointSchema, ...errorResponses },
      },
      handler: async (request) => {
        const accountId = principalOf(request).accountId;
        const id = request.params.endpointId;
        const current = await endpoints.get(accountId, id);
        return view(accountId, await endpoints.update(accountId, id, input(request.body, current)));
      },
    });

  app.delete(
    '/endpoints/:endpointId',
    {
      schema: {
        tags,
        operationId: 'DeleteEndpoint',
        summary: 'Delete an endpoint',
        description: 'Scales the endpoint to 0 workers first (what /v2 asks callers to do), then deletes it.',
        params: Params,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      const accountId = principalOf(request).accountId;
      const id = request.params.endpointId;
      // v1 deletes in one call; /v2 first wants workers scaled to 0 (spec 3.2), so do that here.
      const current = await endpoints.get(accountId, id);
      if (current.workersMin !== 0 || current.workersMax !== 0)
        await endpoints.update(accountId, id, { workersMin: 0, workersMax: 0 });
      await endpoints.delete(accountId, id);
      return reply.code(204).send();
    },
  );
}
