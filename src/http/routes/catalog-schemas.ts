/**
 * The catalog's REST v2 schemas (`/v2/catalog/*`): path and query parameters, and the GpuType,
 * CpuType, DataCenter and pool answers of the public OpenAPI. The routes are in catalog.ts.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Nullable, StringEnum } from '../schemas.js';

/** Catalog ids are free text (GPU type ids contain spaces); send them URL-encoded. */
export const CatalogIdParams = Type.Object(
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
  'Comma-separated optional expansions. Supported value: AVAILABILITY (for `product`, default every product).',
  { maxItems: 1 },
);

export const GpuQuery = Type.Object({
  include: Type.Optional(CatalogInclude),
  product: Type.Optional(
    CommaList(
      StringEnum(['POD', 'CLUSTER', 'SERVERLESS']),
      'Availability product contexts: POD, CLUSTER, SERVERLESS. Valid only with include=AVAILABILITY (400 otherwise); without it, every product (the seed sends none). In Gantry pods, clusters and serverless workers draw on one inventory, so each context reads the same stock.',
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
export type GpuQuery = Static<typeof GpuQuery>;

export const CpuQuery = Type.Object({
  include: Type.Optional(CatalogInclude),
  product: Type.Optional(
    CommaList(
      StringEnum(['POD', 'SERVERLESS']),
      'Availability product contexts: POD, SERVERLESS. Valid only with include=AVAILABILITY (400 otherwise); without it, every product.',
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
export type CpuQuery = Static<typeof CpuQuery>;

const DataCenterInclude = CommaList(
  StringEnum(['GPU_AVAILABILITY', 'CPU_AVAILABILITY']),
  'Comma-separated optional expansions: GPU_AVAILABILITY, CPU_AVAILABILITY.',
);
export const DataCenterOneQuery = Type.Object({ include: Type.Optional(DataCenterInclude) });
export const DataCenterListQuery = Type.Object({
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

export const TemplatesQuery = Type.Object({
  source: Type.Optional(
    StringEnum(['official', 'verified', 'community'], {
      description:
        '`official` (default): the templates Gantry ships; `verified`: none (Gantry verifies no community template); `community`: other public templates.',
    }),
  ),
});

const DataCenterAvailability = Type.Object({ id: Type.String(), name: Type.String(), availability: AvailabilityLevel });

export const GpuTypeSchema = Type.Object({
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
      secureSpot: Type.Number({
        description:
          'Gantry extension: the least an interruptible pod may bid per GPU-hour in SECURE cloud (its `bidPerGpu` floor; docs/pods.md)',
      }),
      communitySpot: Type.Number({ description: 'Gantry extension: the same in COMMUNITY cloud' }),
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

export const CpuTypeSchema = Type.Object({
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

export const DataCenterSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  region: StringEnum(REGIONS),
  globalNetwork: Type.Boolean(),
  networkVolumeTypes: Type.Array(StringEnum(VOLUME_TYPES)),
  compliance: Type.Array(StringEnum(COMPLIANCE)),
  gpuAvailability: Type.Optional(Type.Array(ResourceAvailability)),
  cpuAvailability: Type.Optional(Type.Array(ResourceAvailability)),
});

export const PoolSchema = Type.Object({
  id: Type.String(),
  displayName: Type.String(),
  memoryInGb: Type.Number(),
  gpuTypes: Type.Array(Type.String()),
});
