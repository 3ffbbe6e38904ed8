import { Type, type Static } from '@sinclair/typebox';
import type { CpuFlavor, DataCenter } from '../../domain/catalog.js';
import { ApiError, validationFailed } from '../../domain/errors.js';
import type { Endpoint } from '../../domain/endpoint.js';
import { instanceIdOf } from '../../domain/endpoint-compute.js';
import type { Template } from '../../domain/template.js';
import type { EndpointInput } from '../../serverless/endpoint-settings.js';
import { Nullable, StringEnum } from '../schemas.js';

// REST v2 endpoint bodies (the public OpenAPI's CreateEndpointRequest / UpdateEndpointRequest) and
// their mapping onto the endpoints service's input. Container settings (image, args, disk, ports,
// registry) live in a serverless template; see serverless.ts for how one is made for the endpoint.

const closed = { additionalProperties: false } as const;
const CUDA = '^\\d+\\.\\d+$';

const Workers = Type.Object(
  {
    min: Type.Optional(Type.Integer({ minimum: 0, description: 'Minimum number of workers; default 0' })),
    max: Type.Optional(Type.Integer({ minimum: 0, description: 'Maximum number of workers; default 3' })),
    idleTimeout: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3600,
        description:
          'Seconds before idle workers scale down; default 10. Refused for a QUEUE endpoint scaling on requestCount.',
      }),
    ),
  },
  closed,
);
const QueueDelayScaling = Type.Object(
  {
    type: StringEnum(['QUEUE_DELAY'] as const),
    queueDelay: Type.Number({ minimum: 0.5, description: 'seconds of queue wait (whole seconds on this platform)' }),
  },
  closed,
);
const RequestCountScaling = Type.Object(
  { type: StringEnum(['REQUEST_COUNT'] as const), requestCount: Type.Integer({ minimum: 1 }) },
  closed,
);
const Scaling = Type.Union([QueueDelayScaling, RequestCountScaling], {
  description: 'QUEUE_DELAY (queue-based endpoints only) or REQUEST_COUNT',
});
const gpuFields = {
  pools: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
    minItems: 1,
    maxItems: 64,
    description: 'serverless GPU pool ids (GET /v2/catalog/gpus `pool`)',
  }),
  excludedTypes: Type.Optional(
    Type.Array(Type.String({ maxLength: 64 }), {
      maxItems: 64,
      description: 'GPU types to subtract from the pools; not offered on this platform (must be empty)',
    }),
  ),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 16, description: 'GPUs per worker; default 1' })),
  allowedCudaVersions: Type.Optional(
    Type.Array(Type.String({ pattern: CUDA }), { maxItems: 32, description: 'host CUDA versions; [] = any' }),
  ),
  minCudaVersion: Type.Optional(
    Type.String({
      pattern: '^$|^\\d+\\.\\d+$',
      description: 'the lowest host CUDA version workers may run on; "" removes the bound',
    }),
  ),
};
const CreateGpu = Type.Object(gpuFields, closed);
const UpdateGpu = Type.Object({ ...gpuFields, pools: Type.Optional(gpuFields.pools) }, closed);
const Cpu = Type.Array(
  Type.Object({ id: Type.String({ minLength: 1 }), vcpuCount: Type.Integer({ minimum: 2 }) }, closed),
  {
    minItems: 1,
    maxItems: 16,
    description:
      "a CPU endpoint's CPU configurations (flavor and vCPUs; memory from the flavor), in preference order; replaces gpu",
  },
);
const Flashboot = StringEnum(['OFF', 'FLASHBOOT', 'PRIORITY_FLASHBOOT'] as const, {
  description: 'default OFF; PRIORITY_FLASHBOOT is not offered on this platform',
});

/** An endpoint answer's `flashBootKeepSeconds` (Gantry extension). */
export const FlashBootKeepAnswer = Type.Integer({
  description:
    'Gantry extension: seconds an idle FlashBoot worker is kept suspended (as stored; serverless.flashboot.maxKeepMs bounds it at use)',
});

const containerFields = {
  image: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'container image' })),
  args: Type.Optional(Type.String({ maxLength: 4096, description: 'arguments to the entrypoint' })),
  disk: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: 'container disk, GB' })),
  ports: Type.Optional(
    Type.Array(Type.String({ maxLength: 32 }), { maxItems: 64, description: '"<port>/<protocol>"' }),
  ),
  env: Type.Optional(
    Type.Record(Type.String(), Type.String({ maxLength: 32768 }), {
      maxProperties: 256,
      description: "environment variables; merged over the template's per key",
    }),
  ),
  registry: Type.Optional(Nullable(Type.String({ maxLength: 64, description: 'registry credential id' }))),
};

const commonFields = {
  ...containerFields,
  templateId: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'a serverless template (yours or a public one)' }),
  ),
  cpu: Type.Optional(Cpu),
  dataCenterIds: Type.Optional(
    Type.Array(Type.String({ maxLength: 64 }), { maxItems: 64, description: 'data centers; [] = any' }),
  ),
  networkVolumes: Type.Optional(
    Type.Array(Type.String({ maxLength: 64 }), { maxItems: 1, description: 'at most one network volume id' }),
  ),
  flashboot: Type.Optional(Flashboot),
  flashBootKeepSeconds: Type.Optional(
    Type.Number({
      description:
        'Gantry extension: seconds an idle FlashBoot worker is kept suspended, whole seconds 0 to 86400 (default 600), at most serverless.flashboot.maxKeepMs at use',
    }),
  ),
  scaling: Type.Optional(Scaling),
  workers: Type.Optional(Workers),
};

export const CreateEndpointRequest = Type.Object(
  {
    ...commonFields,
    name: Type.String({ minLength: 1, maxLength: 191 }),
    type: StringEnum(['QUEUE', 'LOAD_BALANCER'] as const, { description: 'request routing; required' }),
    scaling: Scaling,
    gpu: Type.Optional(CreateGpu),
    timeout: Type.Optional(
      Type.Integer({ description: 'execution timeout of jobs, ms (5 s to 7 days); default 300000' }),
    ),
  },
  closed,
);
export const UpdateEndpointRequest = Type.Object(
  {
    ...commonFields,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 191 })),
    gpu: Type.Optional(UpdateGpu),
    timeout: Type.Optional(Type.Integer({ description: 'execution timeout of jobs, ms (5 s to 7 days)' })),
  },
  { ...closed, description: 'Only the fields sent change.' },
);
export type UpdateBody = Static<typeof UpdateEndpointRequest>;

/** The container fields of a body that a template holds (env is the endpoint's own). */
export const containerGiven = (b: UpdateBody): boolean =>
  b.image !== undefined ||
  b.args !== undefined ||
  b.disk !== undefined ||
  b.ports !== undefined ||
  b.registry !== undefined;

/** Rules of a v2 body that are not its schema's: one problem per violation, naming the field. */
function problems(
  b: UpdateBody & { type?: string },
  current: Endpoint | null,
  dataCenters: readonly Pick<DataCenter, 'id'>[],
): string[] {
  const out: string[] = [];
  if (b.gpu?.excludedTypes && b.gpu.excludedTypes.length > 0)
    out.push('gpu.excludedTypes: not offered on this platform; pick pools only (send [] or omit it)');
  if (b.gpu?.excludedTypes !== undefined && b.gpu.pools === undefined)
    out.push('gpu.excludedTypes: requires gpu.pools in the same request');
  if (b.flashboot === 'PRIORITY_FLASHBOOT')
    out.push('flashboot: PRIORITY_FLASHBOOT is not offered; use OFF or FLASHBOOT');
  if (b.scaling?.type === 'QUEUE_DELAY' && !Number.isInteger(b.scaling.queueDelay))
    out.push(`scaling.queueDelay: must be whole seconds on this platform (got ${b.scaling.queueDelay})`);
  const type = b.type ?? (current ? (current.type === 'LB' ? 'LOAD_BALANCER' : 'QUEUE') : 'QUEUE');
  const scaler = b.scaling?.type ?? current?.scalerType ?? 'QUEUE_DELAY';
  if (type === 'LOAD_BALANCER' && scaler === 'QUEUE_DELAY')
    out.push('scaling.type: a LOAD_BALANCER endpoint scales on REQUEST_COUNT, not QUEUE_DELAY');
  if (type === 'QUEUE' && scaler === 'REQUEST_COUNT' && b.workers?.idleTimeout !== undefined)
    out.push('workers.idleTimeout: does not apply to a QUEUE endpoint scaling on REQUEST_COUNT; omit it');
  const known = new Set(dataCenters.map((d) => d.id));
  for (const d of b.dataCenterIds ?? [])
    if (!known.has(d)) out.push(`dataCenterIds: "${d}" is not a data center; valid: ${[...known].join(', ')}`);
  return out;
}

/** Country codes of the data centers named (the service constrains placement by country). */
const countriesOf = (ids: readonly string[], dataCenters: readonly Pick<DataCenter, 'id' | 'country'>[]) => [
  ...new Set(ids.map((id) => dataCenters.find((d) => d.id === id)?.country).filter((c) => c !== undefined)),
];

/**
 * A v2 body → the endpoints service's input (`current` null on create). Refuses with 400
 * GPU_OR_CPU_REQUIRED what the compute selection cannot be, and with 422 naming the field what
 * breaks a rule the schema cannot state. `templateId` is the template the endpoint runs (the
 * caller resolves container fields into one first); `seedCuda` are the template's CUDA versions.
 */
export function toEndpointInput(
  b: UpdateBody & { type?: 'QUEUE' | 'LOAD_BALANCER' },
  current: Endpoint | null,
  ctx: {
    dataCenters: readonly Pick<DataCenter, 'id' | 'country'>[];
    cpuFlavors: readonly CpuFlavor[];
    templateId?: string;
    seedCuda?: string[];
  },
): EndpointInput {
  if (b.cpu !== undefined && b.gpu !== undefined)
    throw new ApiError('GPU_OR_CPU_REQUIRED', 'Set exactly one of "gpu" or "cpu", not both.');
  if (current === null && b.gpu === undefined && b.cpu === undefined)
    throw new ApiError(
      'GPU_OR_CPU_REQUIRED',
      'Set "gpu" with the GPU pools workers may run on (see GET /v2/catalog/gpus), or "cpu" with the CPU flavors (GET /v2/catalog/cpus).',
    );
  const found = problems(b, current, ctx.dataCenters);
  if (found.length > 0) throw validationFailed(found);
  const create = current === null;
  const input: EndpointInput = {};
  if (b.name !== undefined) input.name = b.name;
  if (b.type !== undefined) input.type = b.type;
  if (ctx.templateId !== undefined) input.templateId = ctx.templateId;
  if (b.gpu?.pools !== undefined) input.gpuIds = b.gpu.pools.map((p) => p.trim());
  if (b.gpu?.count !== undefined) input.gpuCount = b.gpu.count;
  if (b.gpu?.allowedCudaVersions !== undefined) input.allowedCudaVersions = b.gpu.allowedCudaVersions;
  else if (create && b.gpu && ctx.seedCuda && ctx.seedCuda.length > 0) input.allowedCudaVersions = ctx.seedCuda;
  // `cpu` or `gpu` is the whole compute selection: sending one replaces the other
  if (b.cpu !== undefined) {
    input.instanceIds = b.cpu.map((c) => instanceIdOf(c.id, c.vcpuCount, ctx.cpuFlavors));
    if (!create) Object.assign(input, { gpuIds: null, allowedCudaVersions: null, minCudaVersion: null });
  } else if (b.gpu?.pools !== undefined && !create) input.instanceIds = null;
  if (b.gpu?.minCudaVersion !== undefined)
    input.minCudaVersion = b.gpu.minCudaVersion === '' ? null : b.gpu.minCudaVersion;
  if (b.workers?.min !== undefined) input.workersMin = b.workers.min;
  if (b.workers?.max !== undefined) input.workersMax = b.workers.max;
  if (b.workers?.idleTimeout !== undefined) input.idleTimeout = b.workers.idleTimeout;
  else if (create) input.idleTimeout = 10;
  if (b.scaling !== undefined) {
    input.scalerType = b.scaling.type;
    input.scalerValue = b.scaling.type === 'QUEUE_DELAY' ? b.scaling.queueDelay : b.scaling.requestCount;
  }
  if (b.timeout !== undefined) input.executionTimeoutMs = b.timeout;
  else if (create) input.executionTimeoutMs = 300_000;
  if (b.dataCenterIds !== undefined) input.locations = countriesOf(b.dataCenterIds, ctx.dataCenters);
  if (b.networkVolumes !== undefined) input.networkVolumeId = b.networkVolumes[0] ?? null;
  if (b.flashboot !== undefined) input.flashboot = b.flashboot === 'FLASHBOOT';
  if (b.flashBootKeepSeconds !== undefined) input.flashBootKeepSeconds = b.flashBootKeepSeconds;
  if (b.env !== undefined) input.env = b.env;
  return input;
}

/** Marks a template made for one endpoint's container settings: it is replaced and deleted with it. */
export const ENDPOINT_TEMPLATE_MARK = 'gantry:endpoint-container';
export const isEndpointTemplate = (t: Template | null): boolean =>
  t !== null && !t.isPublic && t.readme.startsWith(ENDPOINT_TEMPLATE_MARK);

/** The endpoints service's field names → the v2 body's, for its validation messages. */
const V2_NAMES: Record<string, string> = {
  gpuIds: 'gpu.pools',
  gpuCount: 'gpu.count',
  allowedCudaVersions: 'gpu.allowedCudaVersions',
  minCudaVersion: 'gpu.minCudaVersion',
  workersMin: 'workers.min',
  workersMax: 'workers.max',
  idleTimeout: 'workers.idleTimeout',
  scalerType: 'scaling.type',
  scalerValue: 'scaling',
  locations: 'dataCenterIds',
  instanceIds: 'cpu',
  executionTimeoutMs: 'timeout',
  networkVolumeId: 'networkVolumes',
};
const rename = (text: string): string =>
  text.replace(
    /\b(gpuIds|gpuCount|allowedCudaVersions|workersMin|workersMax|idleTimeout|scalerType|scalerValue|locations|instanceIds|executionTimeoutMs|networkVolumeId)\b/g,
    (m) => V2_NAMES[m] ?? m,
  );

/** Runs a service call, answering its validation errors in the v2 body's field names. */
export async function inV2Names<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof ApiError && (err.code === 'VALIDATION_FAILED' || err.code === 'UNKNOWN_REFERENCE'))
      throw new ApiError(err.code, rename(err.detail), err.errors ? { errors: err.errors.map(rename) } : {});
    throw err;
  }
}
