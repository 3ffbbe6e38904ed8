import { compareCudaVersions } from '../domain/cuda.js';
import { ApiError, badRequest, validationFailed } from '../domain/errors.js';
import type { Endpoint } from '../domain/endpoint.js';
import { splitList, type EndpointInput } from '../serverless/endpoint-settings.js';
import { loadBalancerUrlOf } from '../serverless/endpoint-view.js';
import { envFromPairs, envToPairs, type GraphqlContext } from './context.js';
import type { FlashBootType } from './flash-boot-type.js';
import type { ResolverMap } from './schema.js';
import { toGqlTemplate } from './template-resolvers.js';

type EnvPair = { key: string; value?: string | null } | null;

/** `EndpointInput` as graphql-js hands it over (coerced by the schema). */
interface GqlEndpointInput {
  id?: string | null;
  name?: string | null;
  templateId?: string | null;
  gpuIds?: string | null;
  gpuCount?: number | null;
  networkVolumeId?: string | null;
  networkVolumeIds?: Array<{ networkVolumeId?: string | null } | null> | null;
  locations?: string | null;
  idleTimeout?: number | null;
  scalerType?: string | null;
  scalerValue?: number | null;
  workersMin?: number | null;
  workersMax?: number | null;
  flashBootType?: FlashBootType | null;
  flashBootKeepSeconds?: number | null;
  allowedCudaVersions?: Array<string | null> | null;
  minCudaVersion?: string | null;
  executionTimeoutMs?: number | null;
  type?: string | null;
  env?: EnvPair[] | null;
  instanceIds?: Array<string | null> | null;
  modelReferences?: Array<string | null> | null;
  hubReleaseId?: string | null;
  template?: {
    name?: string | null;
    imageName?: string | null;
    containerDiskInGb?: number | null;
    dockerArgs?: string | null;
    env?: EnvPair[] | null;
  } | null;
}

const nonEmpty = (xs: ReadonlyArray<string | null> | null | undefined): string[] =>
  (xs ?? []).filter((x): x is string => typeof x === 'string' && x.trim() !== '');

const CUDA_VERSION = /^\d+\.\d+$/;

/**
 * `minCudaVersion` as the allowed list endpoints keep: the CUDA versions of the catalog's hosts
 * from that one up (narrowing allowedCudaVersions when both are sent); the version alone when no
 * host has one that new yet, so workers wait for such a host.
 */
function cudaFrom(minimum: string, allowed: string[] | null, services: GraphqlContext['services']): string[] {
  if (!CUDA_VERSION.test(minimum))
    throw validationFailed([`minCudaVersion: "${minimum}" must be "<major>.<minor>", e.g. "12.4"`]);
  const known =
    allowed && allowed.length > 0
      ? allowed
      : [
          ...new Set(
            services.catalog
              .listGpuTypes({ availability: true })
              .flatMap((g) => (g.cudaVersions ?? []).map((c) => c.version)),
          ),
        ];
  const atLeast = known.filter((v) => CUDA_VERSION.test(v) && compareCudaVersions(v, minimum) >= 0);
  return atLeast.length > 0 ? atLeast.sort(compareCudaVersions) : [minimum];
}

/** GraphQL input → service input. Fields Gantry cannot honour are refused with a sentence saying what to do. */
function toEndpointInput(input: GqlEndpointInput, services: GraphqlContext['services']): EndpointInput {
  if (input.hubReleaseId !== undefined && input.hubReleaseId !== null && input.hubReleaseId.trim() !== '')
    throw badRequest(
      'hubReleaseId: hub releases are not available on Gantry; create a serverless template and pass templateId.',
    );
  const volumes = nonEmpty((input.networkVolumeIds ?? []).map((v) => v?.networkVolumeId ?? null));
  if (volumes.length > 1)
    throw badRequest('networkVolumeIds: an endpoint can mount one network volume; send a single one.');
  const out: EndpointInput = {};
  const copy = [
    'name',
    'templateId',
    'gpuIds',
    'gpuCount',
    'locations',
    'idleTimeout',
    'scalerType',
    'scalerValue',
    'workersMin',
    'workersMax',
    'executionTimeoutMs',
    'flashBootKeepSeconds',
    'type',
  ] as const;
  for (const k of copy) if (input[k] !== undefined) (out as Record<string, unknown>)[k] = input[k];
  if (input.networkVolumeId !== undefined) out.networkVolumeId = input.networkVolumeId;
  if (
    (out.networkVolumeId === undefined || out.networkVolumeId === null || out.networkVolumeId === '') &&
    volumes.length === 1
  )
    out.networkVolumeId = volumes[0]!;
  if (input.flashBootType !== undefined)
    out.flashboot = input.flashBootType === null ? null : input.flashBootType === 'FLASHBOOT';
  if (input.allowedCudaVersions !== undefined)
    out.allowedCudaVersions = input.allowedCudaVersions === null ? null : nonEmpty(input.allowedCudaVersions);
  const minimum = input.minCudaVersion?.trim();
  if (minimum)
    out.allowedCudaVersions = cudaFrom(
      minimum,
      input.allowedCudaVersions ? splitList(nonEmpty(input.allowedCudaVersions)) : null,
      services,
    );
  if (input.env !== undefined) out.env = input.env === null ? null : envFromPairs(input.env);
  // CPU instances (runpodctl `serverless create --compute-type CPU`): a CPU endpoint
  if (input.instanceIds !== undefined)
    out.instanceIds = input.instanceIds === null ? null : nonEmpty(input.instanceIds);
  return out;
}

async function saveEndpoint(input: GqlEndpointInput, { services, principal }: GraphqlContext): Promise<Endpoint> {
  const { endpoints, templates } = services;
  const accountId = principal.accountId;
  const fields = toEndpointInput(input, services);
  const id = input.id?.trim();
  if (id) return endpoints.replace(accountId, id, fields);
  const inline = input.template;
  if (!inline || (fields.templateId !== undefined && fields.templateId !== null && fields.templateId !== ''))
    return endpoints.create(accountId, fields);
  // An inline template (runpodctl --image): create it as a serverless template, and drop it
  // again if the endpoint is refused, so a failed call leaves nothing behind.
  if (!inline.imageName)
    throw badRequest("template.imageName is required to create the endpoint's template inline (or pass templateId).");
  const template = await templates.create(accountId, {
    name: inline.name || `${fields.name ?? 'endpoint'} template`,
    imageName: inline.imageName,
    args: inline.dockerArgs ?? '',
    ...(inline.containerDiskInGb ? { containerDiskInGb: inline.containerDiskInGb } : {}),
    env: envFromPairs(inline.env),
    isServerless: true,
  });
  try {
    return await endpoints.create(accountId, { ...fields, templateId: template.id });
  } catch (err) {
    await templates.delete(accountId, template.id).catch(() => undefined);
    throw err;
  }
}

/**
 * The endpoint's workers, in the `pods { desiredStatus }` shape clients read: a dead worker (its
 * row is kept an hour) is EXITED; every other one is meant to run.
 */
const workerPods = async (e: Endpoint, { services, principal }: GraphqlContext) =>
  (await services.endpoints.workers(principal.accountId, e.id)).map((w) => ({
    id: w.id,
    desiredStatus: w.status === 'dead' ? 'EXITED' : 'RUNNING',
  }));

export const endpointResolvers: ResolverMap<GraphqlContext> = {
  Query: {
    endpoint: (_root, args: { id: string }, ctx: GraphqlContext) =>
      ctx.services.endpoints.get(ctx.principal.accountId, args.id),
  },
  Mutation: {
    saveEndpoint: (_root, args: { input: GqlEndpointInput }, ctx: GraphqlContext) => saveEndpoint(args.input, ctx),
    deleteEndpoint: async (_root, args: { id: string }, ctx: GraphqlContext) => {
      await ctx.services.endpoints.delete(ctx.principal.accountId, args.id);
      return null;
    },
    updateEndpointTemplate: (
      _root,
      args: { input?: { endpointId?: string | null; templateId?: string | null } | null },
      ctx: GraphqlContext,
    ) => {
      const endpointId = args.input?.endpointId;
      const templateId = args.input?.templateId;
      if (!endpointId || !templateId)
        throw new ApiError('VALIDATION_FAILED', 'updateEndpointTemplate needs input.endpointId and input.templateId.', {
          errors: ['input.endpointId and input.templateId are required'],
        });
      return ctx.services.endpoints.update(ctx.principal.accountId, endpointId, { templateId });
    },
  },
  Endpoint: {
    gpuIds: (e: Endpoint) => e.gpuIds.join(','),
    locations: (e: Endpoint) => e.locations.join(','),
    allowedCudaVersions: (e: Endpoint) => e.allowedCudaVersions.join(','),
    minCudaVersion: (e: Endpoint) => e.minCudaVersion,
    flashBootType: (e: Endpoint): FlashBootType => (e.flashboot ? 'FLASHBOOT' : 'OFF'),
    computeType: (e: Endpoint) => (e.instanceIds.length > 0 ? 'CPU' : 'GPU'),
    instanceIds: (e: Endpoint) => e.instanceIds,
    workersStandby: () => 0,
    userId: (e: Endpoint) => e.accountId,
    env: (e: Endpoint) => envToPairs(e.env),
    createdAt: (e: Endpoint) => new Date(e.createdAt).toISOString(),
    aiKey: () => null,
    modelReferences: () => [],
    template: async (e: Endpoint, _args, ctx: GraphqlContext) => {
      const template = await ctx.services.endpoints.templateOf(e);
      return template ? toGqlTemplate(template, e.accountId) : null;
    },
    networkVolume: async (e: Endpoint, _args, ctx: GraphqlContext) =>
      e.networkVolumeId === null ? null : ctx.services.volumes.get(e.accountId, e.networkVolumeId).catch(() => null),
    networkVolumeIds: async (e: Endpoint, _args, ctx: GraphqlContext) => {
      if (e.networkVolumeId === null) return [];
      const volume = await ctx.services.volumes.get(e.accountId, e.networkVolumeId).catch(() => null);
      return [{ networkVolumeId: e.networkVolumeId, dataCenterId: volume?.dataCenterId ?? null }];
    },
    pods: (e: Endpoint, _args, ctx: GraphqlContext) => workerPods(e, ctx),
    loadBalancerUrl: (e: Endpoint, _args, ctx: GraphqlContext) => loadBalancerUrlOf(e, ctx.services.config.proxy),
  },
};
