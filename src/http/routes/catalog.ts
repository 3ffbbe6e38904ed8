import { isObject, type TypedApp } from '../type-provider.js';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { CpuAvailabilityQuery, GpuAvailabilityQuery } from '../../catalog/catalog-v2.js';
import { ApiError, validationFailed } from '../../domain/errors.js';
import type { TransportServices } from '../../transport/services.js';
import { errorResponses } from '../schemas.js';
import { TemplateList, TemplateSchema, templateView } from './templates.js';
import {
  CatalogIdParams,
  CpuQuery,
  CpuTypeSchema,
  DataCenterListQuery,
  DataCenterOneQuery,
  DataCenterSchema,
  GpuQuery,
  GpuTypeSchema,
  PoolSchema,
  TemplatesQuery,
} from './catalog-schemas.js';

const tags = ['catalog'];

const ok = <T extends object>(schema: T) => ({ 200: schema, ...errorResponses });

/** Splits comma-separated values of the named query parameters before validation reads them as arrays. */
const splitLists =
  (...keys: string[]) =>
  async (request: FastifyRequest): Promise<void> => {
    const query = request.query;
    if (!isObject(query)) return;
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
    throw new ApiError('INVALID_PARAMETER', `${stray.join(', ')}: valid only with include=AVAILABILITY.`, {
      errors: stray.map((k) => `${k}: valid only with include=AVAILABILITY`),
    });
};

/**
 * Without `product`, availability is every product's: the seed's own call
 * (`GET /v2/catalog/gpus?include=AVAILABILITY`, spec 2.2 rule 3) sends none, although upstream's
 * newer document requires one. Pods, clusters and workers draw on one inventory, so it is one figure.
 */
const GPU_PRODUCTS = ['POD', 'CLUSTER', 'SERVERLESS'] as const;
const CPU_PRODUCTS = ['POD', 'SERVERLESS'] as const;

const COUNTRY = /^[A-Z]{2}$/;
const CUDA_EXACT = /^\d+\.\d+$/;
const CUDA_FLOOR = /^\d+(\.\d+)?$/;

/** The availability a GPU query asks for, or null; cross-parameter rules are 400, malformed values 422. */
function gpuAvailabilityQuery(query: GpuQuery): GpuAvailabilityQuery | null {
  if (!(query.include ?? []).includes('AVAILABILITY')) {
    onlyWithAvailability(query, ['product', 'count', 'cloud', 'countryCodes', 'cudaVersions', 'minCudaVersion']);
    return null;
  }
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
    products: query.product && query.product.length > 0 ? query.product : [...GPU_PRODUCTS],
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
  const vcpuCount = query.vcpuCount ?? null;
  if (vcpuCount !== null && (vcpuCount & (vcpuCount - 1)) !== 0)
    throw new ApiError('INVALID_PARAMETER', `vcpuCount: ${vcpuCount} is not a power of two.`, {
      errors: ['vcpuCount: must be a power of two'],
    });
  return { products: query.product && query.product.length > 0 ? query.product : [...CPU_PRODUCTS], vcpuCount };
}

const dataCenterIncludes = (include: readonly string[] | undefined) => ({
  gpu: (include ?? []).includes('GPU_AVAILABILITY'),
  cpu: (include ?? []).includes('CPU_AVAILABILITY'),
});

/** At most this many templates answer GET /v2/catalog/templates (no pagination yet). */
const MAX_CATALOG_TEMPLATES = 100;

export function catalogRoutes(app: TypedApp, { catalog, templates }: TransportServices): void {
  const gpuLists = splitLists('include', 'product', 'countryCodes', 'cudaVersions');
  app.get(
    '/v2/catalog/gpus',
    {
      preValidation: gpuLists,
      schema: {
        tags,
        summary: 'List GPU types with prices',
        description:
          'include=AVAILABILITY adds live stock read from the inventory: `availability`, `dataCenters` and `cudaVersions`, scoped by `product` (default: every product), `count`, `cloud`, `countryCodes` and the CUDA filters.',
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
        description:
          'include=AVAILABILITY adds live stock for `vcpuCount` vCPUs (`product` defaults to every product).',
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
