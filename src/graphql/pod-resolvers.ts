import { ApiError, badRequest, isApiError } from '../domain/errors.js';
import type { Mounts } from '../domain/mounts.js';
import type { CreatePodInput } from '../pods/pod-rules.js';
import type { PodView } from '../pods/pod-view.js';
import { splitList } from '../serverless/endpoint-settings.js';
import { envFromPairs, type GraphqlContext } from './context.js';
import type { ResolverMap } from './schema.js';

/** The status a pod is driven toward, as GraphQL clients read `desiredStatus`. */
const desiredStatus = (p: PodView): string =>
  p.status === 'TERMINATED' ? 'TERMINATED' : p.status === 'EXITED' || p.status === 'ERROR' ? 'EXITED' : 'RUNNING';

type RuntimePort = NonNullable<NonNullable<PodView['runtime']>['ports']>[number];

/**
 * Each port as the platform lists it (docs/graphql.md): first as the pod's own network reaches it
 * (isIpPublic false) — its cluster address or global networking address with the private port, or
 * for a pod with neither its host's address with the published port — then as published on its
 * host (isIpPublic true). dstack keeps the last entry of its port, SkyPilot reads its internal
 * address from the first kind.
 */
function runtimePorts(p: PodView, ports: readonly RuntimePort[]) {
  const own = p.cluster?.ip ?? p.globalNetworking.ip ?? null;
  return ports.flatMap((port) => {
    const published = {
      ip: port.ip,
      isIpPublic: port.ip !== null,
      privatePort: port.private,
      publicPort: port.public,
      type: port.type,
    };
    if (own !== null) return [{ ...published, ip: own, isIpPublic: false, publicPort: port.private }, published];
    return port.ip !== null ? [{ ...published, isIpPublic: false }, published] : [published];
  });
}

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
    podType: p.interruptible ? 'INTERRUPTABLE' : 'RESERVED',
    port: null,
    ports: p.ports.join(','),
    uptimeSeconds: runtime?.uptime ?? 0,
    machineId: p.hostId,
    clusterIp: p.cluster?.ip ?? null,
    containerRegistryAuthId: p.registry,
    networkVolumeId: p.mounts.network?.[0]?.volumeId ?? null,
    machine: {
      // what `ssh <podHostId>@<proxy>` takes, as on the platform: the SSH proxy's username for the pod
      podHostId: p.ssh.proxy?.username ?? p.id,
      gpuDisplayName: gpuName,
      gpuTypeId: p.gpu?.id ?? null,
      location: p.dataCenterId,
      dataCenterId: p.dataCenterId,
    },
    runtime: runtime
      ? {
          uptimeInSeconds: runtime.uptime ?? 0,
          ports: runtimePorts(p, runtime.ports ?? []),
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

export interface GqlPodInput {
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
  deployCost?: number | null;
}

/**
 * Inputs that ask for something Gantry does not do are refused rather than dropped. Empty values
 * (what clients send by default) pass.
 */
function refuseUnsupported(input: GqlPodInput): void {
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
export function toCreatePod(
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
  if (input.stopAfter?.trim()) out.stopAfter = input.stopAfter;
  if (input.terminateAfter?.trim()) out.terminateAfter = input.terminateAfter;
  if (input.deployCost != null) out.deployCost = input.deployCost;
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

/** A pod already terminated, never made, or another account's. */
const gone = (): ApiError => new ApiError('NOT_FOUND', 'pod not found to terminate');

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
    podTerminate: async (_root, args: { input?: { podId?: string | null } | null }, ctx: GraphqlContext) => {
      const { accountId } = ctx.principal;
      const podId = podIdOf(args.input);
      try {
        if ((await ctx.services.pods.get(accountId, podId)).status === 'TERMINATED') throw gone();
        await ctx.services.pods.act(accountId, podId, 'terminate');
      } catch (err) {
        // the platform's words for a pod that is not there to terminate (dstack's cleanup reads them)
        if (isApiError(err) && err.code === 'NOT_FOUND') throw gone();
        throw err;
      }
      return null;
    },
  },
};
