import type { TypedApp } from '../type-provider.js';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { CpuAvailabilityQuery, GpuAvailabilityQuery } from '../../catalog/catalog-v2.js';
import { ApiError, validationFailed } from '../../domain/errors.js';
import type { Services } from '../../services.js';
import { errorResponses, Nullable, StringEnum } from '../schemas.js';
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

const COMPLIANCE = [
  'GDPR',
  'ISO_IEC_27001',
  'ISO_14001',
  'PCI_DSS',
  'HITRUST',
  'SOC_1_TYPE_2',
  'SOC_2_TYPE_2',
  'SOC_3_TYPE_2',
  'ITAR',
  'FISMA_HIGH',
  'HIPAA',
  'RENEWABLE',
] as const;
const REGIONS = [
  'NORTH_AMERICA',
  'SOUTH_AMERICA',
  'EUROPE',
  'ASIA',
  'MIDDLE_EAST',
  'AFRICA',
  'OCEANIA',
  'ANTARCTICA',
  'UNKNOWN',
] as const;
const VOLUME_TYPES = ['STANDARD', 'HIGH_PERFORMANCE'] as const;

/** A comma-separated query parameter (`a=X,Y`; a repeated `a=X&a=Y` is read the same way). */
const CommaList = <T extends TSchema>(items: T, description: string, options: { maxItems?: number } = {}) =>
  Type.Array(items, { ...options, description, style: 'form', explode: false });

const AvailabilityLevel = StringEnum(['NONE', 'LOW', 'MEDIUM', 'HIGH']);

const CatalogInclude = CommaList(
  StringEnum(['AVAILABILITY']),
  'Comma-separated optional expansions. Supported value: AVAILABILITY (requires `product`).',
  { maxItems: 1 },
);

const GpuQuery = Type.Object({
  include: Type.Optional(CatalogInclude),
  product: Type.Optional(
    CommaList(
      StringEnum(['POD', 'CLUSTER', 'SERVERLESS']),
      'Availability product contexts: POD, CLUSTER, SERVERLESS. Required with include=AVAILABILITY and valid only with it (400 either way). In Gantry pods, clusters and serverless workers draw on one inventory, so each context reads the same stock.',
    ),
  ),
  count: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: 'GPU count for availability. Valid only with include=AVAILABILITY. Defaults to 1.',
    }),
  ),
  cloud: Type.Optional(
    StringEnum(['SECURE', 'COMMUNITY'], {
      description: 'Cloud for availability. Valid only with include=AVAILABILITY. Defaults to SECURE.',
    }),
  ),
  countryCodes: Type.Optional(
    CommaList(
      Type.String(),
      'ISO 3166-1 alpha-2 country codes, uppercase (`FR,DE`; pattern `^[A-Z]{2}$`, a malformed entry is 422). Valid only with include=AVAILABILITY (400 otherwise). Scopes availability and `dataCenters` to those countries; on the list a GPU type with no data center there drops out.',
    ),
  ),
  cudaVersions: Type.Optional(
    CommaList(
      Type.String(),
      'CUDA versions `major.minor`, matched exactly (a malformed entry is 422). Valid only with include=AVAILABILITY, and not with minCudaVersion (400 either way).',
    ),
  ),
  minCudaVersion: Type.Optional(
    Type.String({
      description:
        'Lowest CUDA version, `major` or `major.minor`, compared numerically (malformed is 422). Valid only with include=AVAILABILITY, and not with cudaVersions (400 either way).',
    }),
  ),
});
type GpuQuery = Static<typeof GpuQuery>;

const CpuQuery = Type.Object({
  include: Type.Optional(CatalogInclude),
  product: Type.Optional(
    CommaList(
      StringEnum(['POD', 'SERVERLESS']),
      'Availability product contexts: POD, SERVERLESS. Required with include=AVAILABILITY and valid only with it (400 either way).',
    ),
  ),
  vcpuCount: Type.Optional(
    Type.Integer({
      minimum: 2,
      description:
        'vCPU count for availability, a power of two. Valid only with include=AVAILABILITY. Defaults to the flavor’s smallest option.',
    }),
  ),
});
type CpuQuery = Static<typeof CpuQuery>;

const DataCenterInclude = CommaList(
  StringEnum(['GPU_AVAILABILITY', 'CPU_AVAILABILITY']),
  'Comma-separated optional expansions: GPU_AVAILABILITY, CPU_AVAILABILITY.',
);
const DataCenterOneQuery = Type.Object({ include: Type.Optional(DataCenterInclude) });
const DataCenterListQuery = Type.Object({
  include: Type.Optional(DataCenterInclude),
  regions: Type.Optional(CommaList(StringEnum(REGIONS), 'Regions; any of them matches (OR).')),
  networkVolumeTypes: Type.Optional(
    CommaList(StringEnum(VOLUME_TYPES), 'Network volume types; a data center must support all of them (AND).'),
  ),
  compliance: Type.Optional(
    CommaList(StringEnum(COMPLIANCE), 'Compliance certifications; a data center must hold all of them (AND).'),
  ),
  globalNetwork: Type.Optional(
    Type.Boolean({ description: 'true: only data centers with global networking; false: only those without.' }),
  ),
});

const TemplatesQuery = Type.Object({
  source: Type.Optional(
    StringEnum(['official', 'verified', 'community'], {
      description:
        '`official` (default): the templates Gantry ships; `verified`: none (Gantry verifies no community template); `community`: other public templates.',
    }),
  ),
});

const DataCenterAvailability = Type.Object({ id: Type.String(), name: Type.String(), availability: AvailabilityLevel });

const GpuTypeSchema = Type.Object({
  id: Type.String({ description: 'GPU type id (pods take it in `gpu.id`)' }),
  name: Type.String(),
  pool: Nullable(Type.String({ description: 'serverless GPU pool id, e.g. `ADA_24`' })),
  manufacturer: StringEnum(['NVIDIA', 'AMD', 'UNKNOWN']),
  memory: Type.Integer({ description: 'VRAM in GB' }),
  secure: Type.Boolean({ description: 'some available SECURE host has this type' }),
  community: Type.Boolean({ description: 'some available COMMUNITY host has this type' }),
  price: Type.Object(
    {
      secure: Type.Number(),
      community: Type.Number(),
      serverless: Type.Optional(
        Type.Number({ description: 'per GPU-hour for a worker: the higher cloud price (workers are billed at it)' }),
      ),
    },
    { description: 'USD per hour for one GPU' },
  ),
  maxCount: Type.Object(
    { secure: Type.Integer(), community: Type.Integer() },
    { description: 'GPU count of the largest available host of this type, per cloud (a ceiling, not stock)' },
  ),
  availability: Type.Optional(AvailabilityLevel),
  dataCenters: Type.Optional(Type.Array(DataCenterAvailability)),
  cudaVersions: Type.Optional(
    Type.Array(Type.Object({ version: Type.String(), available: Type.Boolean() }), {
      description: 'CUDA versions hosts of this type report, oldest first; `available`: one of them has room now',
    }),
  ),
});

const CpuTypeSchema = Type.Object({
  id: Type.String({ description: 'CPU flavor id (pods take it in `cpu.id`)' }),
  name: Type.String(),
  group: Type.String({ description: 'generation the flavor id names (`cpu3c` → `Gen 3`)' }),
  vcpu: Type.Object({ min: Type.Integer(), max: Type.Integer() }),
  ramGbPerVcpu: Type.Number(),
  price: Type.Object({
    securePerVcpu: Type.Number(),
    serverlessPerVcpu: Type.Number({ description: 'the higher cloud price (workers are billed at their cloud’s)' }),
    communityPerVcpu: Type.Number({ description: 'Gantry extension: COMMUNITY price per vCPU-hour' }),
  }),
  availability: Type.Optional(AvailabilityLevel),
  dataCenters: Type.Optional(Type.Array(DataCenterAvailability)),
});

const ResourceAvailability = Type.Object({ id: Type.String(), name: Type.String(), availability: AvailabilityLevel });

const DataCenterSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  region: StringEnum(REGIONS),
  globalNetwork: Type.Boolean(),
  networkVolumeTypes: Type.Array(StringEnum(VOLUME_TYPES)),
  compliance: Type.Array(StringEnum(COMPLIANCE)),
  gpuAvailability: Type.Optional(Type.Array(ResourceAvailability)),
  cpuAvailability: Type.Optional(Type.Array(ResourceAvailability)),
});

const PoolSchema = Type.Object({
  id: Type.String(),
  displayName: Type.String(),
  memoryInGb: Type.Number(),
  gpuTypes: Type.Array(Type.String()),
});

const ok = <T extends object>(schema: T) => ({ 200: schema, ...errorResponses });

/** Splits comma-separated values of the named query parameters before validation reads them as arrays. */
const splitLists =
  (...keys: string[]) =>
  async (request: FastifyRequest): Promise<void> => {
    const query = request.query as Record<string, unknown>;
    for (const key of keys) {
      const value = query[key];
      if (value === undefined) continue;
      const values: unknown[] = Array.isArray(value) ? value : [value];
      query[key] = values
        .flatMap((v): unknown[] => (typeof v === 'string' ? v.split(',').map((part) => part.trim()) : [v]))
        .filter((v) => v !== '');
    }
  };

const onlyWithAvailability = (query: Record<string, unknown>, keys: readonly string[]): void => {
  const stray = keys.filter((k) => query[k] !== undefined);
  if (stray.length > 0)
    throw new ApiError(
      'INVALID_PARAMETER',
      `${stray.join(', ')}: valid only with include=AVAILABILITY (and a product).`,
      { errors: stray.map((k) => `${k}: valid only with include=AVAILABILITY`) },
    );
};

const productRequired = (values: readonly string[]): ApiError =>
  new ApiError(
    'INVALID_PARAMETER',
    `product: required with include=AVAILABILITY (${values.join(', ')}); availability is read per product context.`,
    { errors: ['product: required with include=AVAILABILITY'] },
  );

const COUNTRY = /^[A-Z]{2}$/;
const CUDA_EXACT = /^\d+\.\d+$/;
const CUDA_FLOOR = /^\d+(\.\d+)?$/;

/** The availability a GPU query asks for, or null; cross-parameter rules are 400, malformed values 422. */
function gpuAvailabilityQuery(query: GpuQuery): GpuAvailabilityQuery | null {
  if (!(query.include ?? []).includes('AVAILABILITY')) {
    onlyWithAvailability(query, ['product', 'count', 'cloud', 'countryCodes', 'cudaVersions', 'minCudaVersion']);
    return null;
  }
  if (!query.product || query.product.length === 0) throw productRequired(['POD', 'CLUSTER', 'SERVERLESS']);
  if ((query.cudaVersions?.length ?? 0) > 0 && query.minCudaVersion !== undefined)
    throw new ApiError(
      'CUDA_CONSTRAINT_CONFLICT',
      'cudaVersions and minCudaVersion are mutually exclusive; send one.',
      {
        errors: ['cudaVersions: not with minCudaVersion'],
      },
    );
  const errors = [
    ...(query.countryCodes ?? [])
      .filter((c) => !COUNTRY.test(c))
      .map((c) => `countryCodes: "${c.slice(0, 16)}" is not an uppercase two-letter country code`),
    ...(query.cudaVersions ?? [])
      .filter((v) => !CUDA_EXACT.test(v))
      .map((v) => `cudaVersions: "${v.slice(0, 16)}" is not major.minor`),
    ...(query.minCudaVersion !== undefined && !CUDA_FLOOR.test(query.minCudaVersion)
      ? [`minCudaVersion: "${query.minCudaVersion.slice(0, 16)}" is not major or major.minor`]
      : []),
  ];
  if (errors.length > 0) throw validationFailed(errors);
  return {
    products: query.product,
    count: query.count ?? 1,
    cloud: query.cloud ?? 'SECURE',
    countryCodes: query.countryCodes && query.countryCodes.length > 0 ? query.countryCodes : null,
    cudaVersions: query.cudaVersions ?? [],
    minCudaVersion: query.minCudaVersion ?? null,
  };
}

function cpuAvailabilityQuery(query: CpuQuery): CpuAvailabilityQuery | null {
  if (!(query.include ?? []).includes('AVAILABILITY')) {
    onlyWithAvailability(query, ['product', 'vcpuCount']);
    return null;
  }
  if (!query.product || query.product.length === 0) throw productRequired(['POD', 'SERVERLESS']);
  const vcpuCount = query.vcpuCount ?? null;
  if (vcpuCount !== null && (vcpuCount & (vcpuCount - 1)) !== 0)
    throw new ApiError('INVALID_PARAMETER', `vcpuCount: ${vcpuCount} is not a power of two.`, {
      errors: ['vcpuCount: must be a power of two'],
    });
  return { products: query.product, vcpuCount };
}

const dataCenterIncludes = (include: readonly string[] | undefined) => ({
  gpu: (include ?? []).includes('GPU_AVAILABILITY'),
  cpu: (include ?? []).includes('CPU_AVAILABILITY'),
});

/** At most this many templates answer GET /v2/catalog/templates (no pagination yet). */
const MAX_CATALOG_TEMPLATES = 100;

export function catalogRoutes(app: TypedApp, { catalog, templates }: Services): void {
  const gpuLists = splitLists('include', 'product', 'countryCodes', 'cudaVersions');
  app.get(
    '/v2/catalog/gpus',
    {
      preValidation: gpuLists,
      schema: {
        tags,
        summary: 'List GPU types with prices',
        description:
          'include=AVAILABILITY (with `product`) adds live stock read from the inventory: `availability`, `dataCenters` and `cudaVersions`, scoped by `count`, `cloud`, `countryCodes` and the CUDA filters.',
        querystring: GpuQuery,
        response: ok(Type.Object({ gpus: Type.Array(GpuTypeSchema) })),
      },
    },
    async (request) => ({ gpus: catalog.gpuTypes(gpuAvailabilityQuery(request.query)) }),
  );
  app.get(
    '/v2/catalog/gpus/:id',
    {
      preValidation: gpuLists,
      schema: {
        tags,
        summary: 'One GPU type',
        params: CatalogIdParams,
        querystring: GpuQuery,
        response: ok(GpuTypeSchema),
      },
    },
    async (request) => catalog.gpuType(request.params.id, gpuAvailabilityQuery(request.query)),
  );

  const cpuLists = splitLists('include', 'product');
  app.get(
    '/v2/catalog/cpus',
    {
      preValidation: cpuLists,
      schema: {
        tags,
        summary: 'List CPU flavors with per-vCPU prices',
        description: 'include=AVAILABILITY (with `product`) adds live stock for `vcpuCount` vCPUs.',
        querystring: CpuQuery,
        response: ok(Type.Object({ cpus: Type.Array(CpuTypeSchema) })),
      },
    },
    async (request) => ({ cpus: catalog.cpuTypes(cpuAvailabilityQuery(request.query)) }),
  );
  app.get(
    '/v2/catalog/cpus/:id',
    {
      preValidation: cpuLists,
      schema: {
        tags,
        summary: 'One CPU flavor',
        params: CatalogIdParams,
        querystring: CpuQuery,
        response: ok(CpuTypeSchema),
      },
    },
    async (request) => catalog.cpuType(request.params.id, cpuAvailabilityQuery(request.query)),
  );

  app.get(
    '/v2/catalog/datacenters',
    {
      preValidation: splitLists('include', 'regions', 'networkVolumeTypes', 'compliance'),
      schema: {
        tags,
        summary: 'List data centers',
        description:
          'include=GPU_AVAILABILITY / CPU_AVAILABILITY adds the stock of each GPU type / CPU flavor hosts there offer. `regions` (any of), `networkVolumeTypes` and `compliance` (all of) and `globalNetwork` filter the list.',
        querystring: DataCenterListQuery,
        response: ok(Type.Object({ dataCenters: Type.Array(DataCenterSchema) })),
      },
    },
    async (request) => {
      const q = request.query;
      return {
        dataCenters: catalog.dataCenters(
          {
            regions: q.regions ?? [],
            networkVolumeTypes: q.networkVolumeTypes ?? [],
            compliance: q.compliance ?? [],
            globalNetwork: q.globalNetwork ?? null,
          },
          dataCenterIncludes(q.include),
        ),
      };
    },
  );
  app.get(
    '/v2/catalog/datacenters/:id',
    {
      preValidation: splitLists('include'),
      schema: {
        tags,
        summary: 'One data center',
        params: CatalogIdParams,
        querystring: DataCenterOneQuery,
        response: ok(DataCenterSchema),
      },
    },
    async (request) => catalog.dataCenter(request.params.id, dataCenterIncludes(request.query.include)),
  );

  app.get(
    '/v2/catalog/pools',
    {
      schema: {
        tags,
        summary: 'List serverless GPU pools with their GPU types (Gantry extension)',
        response: ok(Type.Object({ pools: Type.Array(PoolSchema) })),
      },
    },
    async () => ({ pools: catalog.listPools() }),
  );
  app.get(
    '/v2/catalog/pools/:id',
    {
      schema: {
        tags,
        summary: 'One serverless GPU pool (Gantry extension)',
        params: CatalogIdParams,
        response: ok(PoolSchema),
      },
    },
    async (request) => catalog.getPool(request.params.id),
  );

  app.get(
    '/v2/catalog/templates',
    {
      schema: {
        tags,
        summary: 'List public templates',
        description:
          '`source=official` (the default) lists the templates Gantry ships; `verified` is empty (Gantry verifies no community template); `community` lists the other public templates. At most 100.',
        querystring: TemplatesQuery,
        response: ok(TemplateList),
      },
    },
    async (request) => {
      const source = request.query.source ?? 'official';
      const all = await templates.listPublic();
      const slice =
        source === 'official'
          ? all.filter((t) => t.accountId === null)
          : source === 'community'
            ? all.filter((t) => t.accountId !== null)
            : [];
      return { templates: slice.slice(0, MAX_CATALOG_TEMPLATES).map(templateView) };
    },
  );
  app.get(
    '/v2/catalog/templates/:id',
    {
      schema: {
        tags,
        summary: 'One public template (Gantry extension)',
        params: CatalogIdParams,
        response: ok(TemplateSchema),
      },
    },
    async (request) => templateView(await templates.getPublic(request.params.id)),
  );
}
