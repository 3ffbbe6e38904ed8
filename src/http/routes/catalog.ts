import type { TypedApp } from '../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import type { Services } from '../../services.js';
import { errorResponses } from '../schemas.js';
import { TemplateList, TemplateSchema, templateView } from './templates.js';

const tags = ['catalog'];

/** Catalog ids are free text (GPU type ids contain spaces); send them URL-encoded. */
const CatalogIdParams = Type.Object(
  {
    id: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'URL-encoded id, e.g. `NVIDIA%20GeForce%20RTX%204090`',
    }),
  },
  { additionalProperties: false },
);

const Include = Type.Unsafe<'AVAILABILITY'>({
  type: 'string',
  enum: ['AVAILABILITY'],
  description: '`AVAILABILITY` adds live stock (`availability`) and the CUDA versions hosts report (`cudaVersions`)',
});
const GpuQuery = Type.Object({ include: Type.Optional(Include) });
type GpuQuery = Static<typeof GpuQuery>;

const StockStatus = Type.Unsafe<'High' | 'Medium' | 'Low' | 'None'>({
  type: 'string',
  enum: ['High', 'Medium', 'Low', 'None'],
});

const GpuAvailability = Type.Object({
  stockStatus: StockStatus,
  available: Type.Integer({ description: 'free GPUs of this type' }),
  total: Type.Integer(),
  maxGpuCount: Type.Integer({ description: 'largest GPU count one pod can get on a single host right now' }),
  dataCenters: Type.Array(Type.Object({ id: Type.String(), available: Type.Integer() })),
});

const CudaVersionStock = Type.Object({
  version: Type.String({ description: 'major.minor, as hosts report it; valid for allowedCudaVersions' }),
  available: Type.Integer({ description: 'free GPUs on hosts reporting this version' }),
  total: Type.Integer(),
});

const GpuTypeSchema = Type.Object({
  id: Type.String(),
  displayName: Type.String(),
  manufacturer: Type.String(),
  memoryInGb: Type.Number(),
  pool: Type.String({ description: 'serverless GPU pool, e.g. `ADA_24`' }),
  securePrice: Type.Number({ description: 'USD per GPU per hour in SECURE cloud' }),
  communityPrice: Type.Number({ description: 'USD per GPU per hour in COMMUNITY cloud' }),
  secureCloud: Type.Boolean({ description: 'some SECURE host has this type' }),
  communityCloud: Type.Boolean({ description: 'some COMMUNITY host has this type' }),
  globalNetworking: Type.Boolean(),
  availability: Type.Optional(GpuAvailability),
  cudaVersions: Type.Optional(Type.Array(CudaVersionStock, { description: 'sorted oldest first' })),
});

const CpuFlavorSchema = Type.Object({
  id: Type.String(),
  displayName: Type.String(),
  ramMultiplier: Type.Number({ description: 'GB of memory per vCPU' }),
  vcpuOptions: Type.Array(Type.Integer()),
  securePricePerVcpu: Type.Number({ description: 'USD per vCPU per hour in SECURE cloud' }),
  communityPricePerVcpu: Type.Number({ description: 'USD per vCPU per hour in COMMUNITY cloud' }),
});

const DataCenterSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  location: Type.String(),
  country: Type.String({ description: 'two-letter country code' }),
  globalNetworking: Type.Boolean(),
  gpuTypes: Type.Array(Type.String(), { description: 'GPU types some host here has' }),
  cpuFlavors: Type.Array(Type.String(), { description: 'CPU flavors some host here serves' }),
});

const PoolSchema = Type.Object({
  id: Type.String(),
  displayName: Type.String(),
  memoryInGb: Type.Number(),
  gpuTypes: Type.Array(Type.String()),
});

const ok = <T extends object>(schema: T) => ({ 200: schema, ...errorResponses });

export function catalogRoutes(app: TypedApp, { catalog, templates }: Services): void {
  const availability = (query: GpuQuery) => ({ availability: query.include === 'AVAILABILITY' });

  app.get(
    '/v2/catalog/gpus',
    {
      schema: {
        tags,
        summary: 'List GPU types with prices; `include=AVAILABILITY` adds live stock and CUDA versions',
        querystring: GpuQuery,
        response: ok(Type.Object({ gpus: Type.Array(GpuTypeSchema) })),
      },
    },
    async (request) => ({ gpus: catalog.listGpuTypes(availability(request.query)) }),
  );
  app.get(
    '/v2/catalog/gpus/:id',
    {
      schema: {
        tags,
        summary: 'One GPU type',
        params: CatalogIdParams,
        querystring: GpuQuery,
        response: ok(GpuTypeSchema),
      },
    },
    async (request) => catalog.getGpuType(request.params.id, availability(request.query)),
  );

  app.get(
    '/v2/catalog/cpus',
    {
      schema: {
        tags,
        summary: 'List CPU flavors with per-vCPU prices',
        response: ok(Type.Object({ cpus: Type.Array(CpuFlavorSchema) })),
      },
    },
    async () => ({ cpus: catalog.listCpuFlavors() }),
  );
  app.get(
    '/v2/catalog/cpus/:id',
    { schema: { tags, summary: 'One CPU flavor', params: CatalogIdParams, response: ok(CpuFlavorSchema) } },
    async (request) => catalog.getCpuFlavor(request.params.id),
  );

  app.get(
    '/v2/catalog/datacenters',
    {
      schema: {
        tags,
        summary: 'List data centers with the GPU types and CPU flavors their hosts offer',
        response: ok(Type.Object({ dataCenters: Type.Array(DataCenterSchema) })),
      },
    },
    async () => ({ dataCenters: catalog.listDataCenters() }),
  );
  app.get(
    '/v2/catalog/datacenters/:id',
    { schema: { tags, summary: 'One data center', params: CatalogIdParams, response: ok(DataCenterSchema) } },
    async (request) => catalog.getDataCenter(request.params.id),
  );

  app.get(
    '/v2/catalog/pools',
    {
      schema: {
        tags,
        summary: 'List serverless GPU pools with their GPU types',
        response: ok(Type.Object({ pools: Type.Array(PoolSchema) })),
      },
    },
    async () => ({ pools: catalog.listPools() }),
  );
  app.get(
    '/v2/catalog/pools/:id',
    { schema: { tags, summary: 'One serverless GPU pool', params: CatalogIdParams, response: ok(PoolSchema) } },
    async (request) => catalog.getPool(request.params.id),
  );

  app.get(
    '/v2/catalog/templates',
    {
      schema: {
        tags,
        summary: 'List the public templates any account can create pods from',
        response: ok(TemplateList),
      },
    },
    async () => ({ templates: (await templates.listPublic()).map(templateView) }),
  );
  app.get(
    '/v2/catalog/templates/:id',
    { schema: { tags, summary: 'One public template', params: CatalogIdParams, response: ok(TemplateSchema) } },
    async (request) => templateView(await templates.getPublic(request.params.id)),
  );
}
