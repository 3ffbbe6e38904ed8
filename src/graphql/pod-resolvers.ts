import { badRequest } from '../domain/errors.js';
import type { Mounts } from '../domain/mounts.js';
import type { CreatePodInput } from '../pods/pod-rules.js';
import type { PodView } from '../pods/pod-view.js';
import { splitList } from '../serverless/endpoint-settings.js';
import { envFromPairs, type GraphqlContext } from './context.js';
import type { ResolverMap } from './schema.js';

/** The status a pod is driven toward, as GraphQL clients read `desiredStatus`. */
const desiredStatus = (p: PodView): string =>
  p.status === 'TERMINATED' ? 'TERMINATED' : p.status === 'EXITED' || p.status === 'ERROR' ? 'EXITED' : 'RUNNING';

/** A pod in the GraphQL shape: env read as "K=V" strings, ports as a comma list. */
export function toGqlPod(p: PodView, { services }: GraphqlContext) {
  const gpuName = p.gpu
    ? (services.config.catalog.gpuTypes.find((g) => g.id === p.gpu!.id)?.displayName ?? p.gpu.id)
    : null;
  const runtime = p.status === 'RUNNING' && p.runtime ? p.runtime : null;
  return {
    id: p.id,
    name: p.name,
    imageName: p.image,
    env: Object.entries(p.env).map(([k, v]) => `${k}=${v}`),
    desiredStatus: desiredStatus(p),
    lastStatusChange: p.statusChangedAt,
    costPerHr: p.cost,
    containerDiskInGb: p.disk,
    volumeInGb: p.mounts.persistent?.size ?? 0,
    volumeMountPath: p.mounts.persistent?.path ?? p.mounts.network?.[0]?.path ?? null,
    dockerArgs: p.args,
    dockerId: null,
    gpuCount: p.gpu?.count ?? 0,
    // What the pod is given: a CPU pod's vCPUs and memory, a GPU pod's allotment with its GPUs.
    vcpuCount: p.vcpuCount,
    memoryInGb: p.memoryInGb,
    podType: 'RESERVED',
    port: null,
    ports: p.ports.join(','),
    uptimeSeconds: runtime?.uptime ?? 0,
    machineId: p.hostId,
    machine: {
      podHostId: p.id,
      gpuDisplayName: gpuName,
      gpuTypeId: p.gpu?.id ?? null,
      location: p.dataCenterId,
      dataCenterId: p.dataCenterId,
    },
    runtime: runtime
      ? {
          uptimeInSeconds: runtime.uptime ?? 0,
          ports: (runtime.ports ?? []).map((port) => ({
            ip: port.ip,
            isIpPublic: port.ip !== null,
            privatePort: port.private,
            publicPort: port.public,
            type: port.type,
          })),
          gpus: (runtime.gpus ?? []).map((g, i) => ({
            id: g.id ?? String(i),
            gpuUtilPercent: g.util,
            memoryUtilPercent: g.memoryUtil,
          })),
          container: { cpuPercent: runtime.cpu?.util ?? 0, memoryPercent: runtime.memory?.util ?? 0 },
        }
      : null,
  };
}

interface GqlPodInput {
  name?: string | null;
  imageName?: string | null;
  gpuTypeId?: string | null;
  gpuTypeIdList?: Array<string | null> | null;
  gpuCount?: number | null;
  instanceId?: string | null;
  vcpuCount?: number | null;
  minVcpuCount?: number | null;
  minMemoryInGb?: number | null;
  cloudType?: 'ALL' | 'SECURE' | 'COMMUNITY' | null;
  dataCenterId?: string | null;
  countryCode?: string | null;
  containerDiskInGb?: number | null;
  volumeInGb?: number | null;
  volumeMountPath?: string | null;
  dockerArgs?: string | null;
  ports?: string | null;
  env?: Array<{ key: string; value?: string | null } | null> | null;
  templateId?: string | null;
  networkVolumeId?: string | null;
  allowedCudaVersions?: Array<string | null> | null;
  minCudaVersion?: string | null;
  startSsh?: boolean | null;
  startJupyter?: boolean | null;
  containerRegistryAuthId?: string | null;
  globalNetworking?: boolean | null;
  stopAfter?: string | null;
  terminateAfter?: string | null;
  compliance?: Array<string | null> | null;
}

/**
 * Inputs that ask for something Gantry does not do are refused rather than dropped: a pod asked
 * to stop at a time would otherwise run on. Empty values (what clients send by default) pass.
 */
function refuseUnsupported(input: GqlPodInput): void {
  if (input.stopAfter?.trim())
    throw badRequest('stopAfter is not supported by Gantry; stop the pod with podStop (or POST /v2/pods/{id}/action).');
  if (input.terminateAfter?.trim())
    throw badRequest('terminateAfter is not supported by Gantry; end the pod with podTerminate.');
  if ((input.compliance ?? []).some((c) => c?.trim()))
    throw badRequest('compliance is not supported by Gantry: its hosts carry no compliance attributes.');
}

const DEFAULT_MOUNT_PATH = '/workspace';

/**
 * The platform's own template ids clients send on their own, as the catalog templates Gantry
 * ships: runpod-python's create_pod names "runpod-ubuntu" for every CPU pod it makes.
 */
const PLATFORM_TEMPLATES: Readonly<Record<string, string>> = { 'runpod-ubuntu': 'gantry-ubuntu-cpu' };
const templateIdOf = (id: string): string => (Object.hasOwn(PLATFORM_TEMPLATES, id) ? PLATFORM_TEMPLATES[id]! : id);

/** GraphQL pod input → the REST create body the pods service takes. */
function toCreatePod(
  input: GqlPodInput,
  compute: Pick<CreatePodInput, 'gpu' | 'cpu'>,
  ctx: GraphqlContext,
): CreatePodInput {
  refuseUnsupported(input);
  const out: CreatePodInput = { name: input.name ?? '', ...compute };
  if (input.imageName) out.image = input.imageName;
  if (input.dockerArgs != null) out.args = input.dockerArgs;
  if (input.containerDiskInGb != null) out.disk = input.containerDiskInGb;
  if (input.ports != null) out.ports = splitList(input.ports);
  if (input.env != null) out.env = envFromPairs(input.env);
  if (input.templateId) out.templateId = templateIdOf(input.templateId);
  if (input.containerRegistryAuthId) out.registry = input.containerRegistryAuthId;
  if (input.cloudType === 'SECURE' || input.cloudType === 'COMMUNITY') out.cloud = input.cloudType;
  if (input.dataCenterId) out.dataCenterIds = [input.dataCenterId];
  else if (input.countryCode) {
    const country = input.countryCode.toUpperCase();
    out.dataCenterIds = ctx.services.config.catalog.dataCenters.filter((d) => d.country === country).map((d) => d.id);
    if (out.dataCenterIds.length === 0)
      throw badRequest(
        `countryCode "${input.countryCode}" has no data center; valid: ${[...new Set(ctx.services.config.catalog.dataCenters.map((d) => d.country))].join(', ')}.`,
      );
  }
  const cuda = (input.allowedCudaVersions ?? []).filter((v): v is string => typeof v === 'string' && v !== '');
  if (cuda.length > 0) out.allowedCudaVersions = cuda;
  if (input.minCudaVersion) out.minCudaVersion = input.minCudaVersion;
  if (input.startSsh != null) out.startSsh = input.startSsh;
  if (input.startJupyter != null) out.startJupyter = input.startJupyter;
  if (input.globalNetworking != null) out.globalNetworking = input.globalNetworking;
  // a GPU pod gets at least these with its GPUs (docs/catalog.md); clients send 0 for "any"
  if (compute.gpu && input.minVcpuCount) out.minVcpuCount = input.minVcpuCount;
  if (compute.gpu && input.minMemoryInGb) out.minMemoryInGb = input.minMemoryInGb;
  const path = input.volumeMountPath || DEFAULT_MOUNT_PATH;
  const mounts: Mounts = {};
  if (input.networkVolumeId) mounts.network = [{ volumeId: input.networkVolumeId, path }];
  else if (input.volumeInGb && input.volumeInGb > 0 && compute.gpu)
    mounts.persistent = { size: input.volumeInGb, path };
  if (mounts.network || mounts.persistent) out.mounts = mounts;
  return out;
}

/** `cpu3c-2-4` (flavor-vCPUs-memory, as runpod-python sends it) or a bare flavor id. */
function parseInstanceId(
  instanceId: string | null | undefined,
  vcpuCount: number | null | undefined,
  ctx: GraphqlContext,
): { id: string; vcpuCount: number } {
  const flavors = ctx.services.config.catalog.cpuFlavors;
  const [flavor, vcpus] = (instanceId || flavors[0]?.id || '').split('-');
  return { id: flavor ?? '', vcpuCount: vcpuCount ?? (vcpus ? Number(vcpus) : 2) };
}

const podIdOf = (input: { podId?: string | null } | null | undefined): string => {
  if (!input?.podId) throw badRequest('input.podId is required.');
  return input.podId;
};

export const podResolvers: ResolverMap<GraphqlContext> = {
  Query: {
    pod: async (_root, args: { input?: { podId?: string | null } | null }, ctx: GraphqlContext) =>
      toGqlPod(await ctx.services.pods.get(ctx.principal.accountId, podIdOf(args.input)), ctx),
  },
  Mutation: {
    podFindAndDeployOnDemand: async (_root, args: { input?: GqlPodInput | null }, ctx: GraphqlContext) => {
      const input = args.input ?? {};
      const gpuTypeId = input.gpuTypeId || (input.gpuTypeIdList ?? []).find((g): g is string => !!g);
      if (!gpuTypeId)
        throw badRequest(
          'gpuTypeId is required for a GPU pod (see the gpuTypes query); use deployCpuPod for a CPU pod.',
        );
      const body = toCreatePod(input, { gpu: { id: gpuTypeId, count: input.gpuCount ?? 1 } }, ctx);
      return toGqlPod(await ctx.services.pods.create(ctx.principal.accountId, body), ctx);
    },
    deployCpuPod: async (_root, args: { input?: GqlPodInput | null }, ctx: GraphqlContext) => {
      const input = args.input ?? {};
      const body = toCreatePod(input, { cpu: parseInstanceId(input.instanceId, input.vcpuCount, ctx) }, ctx);
      return toGqlPod(await ctx.services.pods.create(ctx.principal.accountId, body), ctx);
    },
    podStop: async (_root, args: { input?: { podId?: string | null } | null }, ctx: GraphqlContext) =>
      toGqlPod(await ctx.services.pods.act(ctx.principal.accountId, podIdOf(args.input), 'stop'), ctx),
    podResume: async (_root, args: { input?: { podId?: string | null } | null }, ctx: GraphqlContext) =>
      toGqlPod(await ctx.services.pods.act(ctx.principal.accountId, podIdOf(args.input), 'start'), ctx),
    podBidResume: async (_root, args: { input?: { podId?: string | null } | null }, ctx: GraphqlContext) =>
      toGqlPod(await ctx.services.pods.act(ctx.principal.accountId, podIdOf(args.input), 'start'), ctx),
    podTerminate: async (_root, args: { input?: { podId?: string | null } | null }, ctx: GraphqlContext) => {
      await ctx.services.pods.act(ctx.principal.accountId, podIdOf(args.input), 'terminate');
      return null;
    },
  },
};
