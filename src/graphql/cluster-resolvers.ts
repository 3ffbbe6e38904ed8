import { GraphQLError } from 'graphql';
import type { CreateClusterInput } from '../clusters/clusters-service.js';
import type { ClusterType } from '../domain/cluster.js';
import { isApiError, validationFailed } from '../domain/errors.js';
import type { Mounts } from '../domain/mounts.js';
import { splitList } from '../serverless/endpoint-settings.js';
import { envFromPairs, type GraphqlContext } from './context.js';
import { toGqlPod } from './pod-resolvers.js';
import type { ResolverMap } from './schema.js';

/** `CreateClusterInput` as graphql-js hands it over. */
interface GqlClusterInput {
  clusterName?: string | null;
  gpuTypeId?: string | null;
  podCount?: number | null;
  gpuCountPerPod?: number | null;
  imageName?: string | null;
  type?: ClusterType | null;
  deployCost?: number | null;
  templateId?: string | null;
  networkVolumeId?: string | null;
  volumeInGb?: number | null;
  allowedCudaVersions?: Array<string | null> | null;
  minCudaVersion?: string | null;
  dataCenterId?: string | null;
  startJupyter?: boolean | null;
  startSsh?: boolean | null;
  containerDiskInGb?: number | null;
  dockerArgs?: string | null;
  env?: Array<{ key: string; value?: string | null } | null> | null;
  volumeMountPath?: string | null;
  ports?: string | null;
}

/** The bounds REST's schema holds a cluster to (src/http/schemas/cluster-schemas.ts). */
const NAME_MAX = 180;
const POD_COUNT = { min: 2, max: 250 };
const DEFAULT_MOUNT_PATH = '/workspace';

/** GraphQL input → the clusters service's create input (the same one REST builds). */
function toCreateCluster(input: GqlClusterInput): CreateClusterInput {
  const { clusterName: name, gpuTypeId, podCount, type } = input;
  const gpuCountPerPod = input.gpuCountPerPod ?? 1;
  const problems = [
    ...(name && name.length <= NAME_MAX ? [] : [`clusterName: is required, 1-${NAME_MAX} characters`]),
    ...(gpuTypeId ? [] : ['gpuTypeId: is required (see the gpuTypes query)']),
    ...(podCount != null && podCount >= POD_COUNT.min && podCount <= POD_COUNT.max
      ? []
      : [`podCount: is required, ${POD_COUNT.min}-${POD_COUNT.max}`]),
    ...(gpuCountPerPod >= 1 ? [] : ['gpuCountPerPod: must be 1 or more']),
    ...(type ? [] : ['type: is required (APPLICATION, TRAINING, SLURM or RAY)']),
    ...(input.imageName || input.templateId ? [] : ['imageName: is required unless templateId is set']),
  ];
  if (problems.length > 0) throw validationFailed(problems);
  const out: CreateClusterInput = {
    name: name!,
    type: type!,
    compute: { gpuTypeId: gpuTypeId!, gpuCountPerPod, podCount: podCount! },
  };
  if (input.imageName) out.image = input.imageName;
  if (input.templateId) out.templateId = input.templateId;
  // dstack's JSON override of the entrypoint travels as args, the path pods' dockerArgs take
  if (input.dockerArgs != null) out.args = input.dockerArgs;
  if (input.containerDiskInGb != null) out.disk = input.containerDiskInGb;
  if (input.env != null) out.env = envFromPairs(input.env);
  if (input.ports != null) out.ports = splitList(input.ports);
  if (input.dataCenterId) out.dataCenterIds = [input.dataCenterId];
  if (input.startSsh != null) out.startSsh = input.startSsh;
  if (input.startJupyter != null) out.startJupyter = input.startJupyter;
  if (input.deployCost != null) out.deployCost = input.deployCost;
  const cuda = (input.allowedCudaVersions ?? []).filter((v): v is string => typeof v === 'string' && v !== '');
  if (cuda.length > 0) out.allowedCudaVersions = cuda;
  if (input.minCudaVersion) out.minCudaVersion = input.minCudaVersion;
  const path = input.volumeMountPath || DEFAULT_MOUNT_PATH;
  const mounts: Mounts = {};
  if (input.networkVolumeId) mounts.network = [{ volumeId: input.networkVolumeId, path }];
  else if (input.volumeInGb && input.volumeInGb > 0) mounts.persistent = { size: input.volumeInGb, path };
  if (mounts.network || mounts.persistent) out.mounts = mounts;
  return out;
}

/** What dstack recognises as a cluster already gone: `errors[0].extensions.code` (its compute.py). */
const clusterNotFound = (id: string): GraphQLError =>
  new GraphQLError(`Cluster "${id}" not found.`, { extensions: { code: 'Cluster not found', status: 404 } });

export const clusterResolvers: ResolverMap<GraphqlContext> = {
  Mutation: {
    createCluster: async (_root, args: { input?: GqlClusterInput | null }, ctx: GraphqlContext) => {
      const { services, principal } = ctx;
      const cluster = await services.clusters.create(principal.accountId, toCreateCluster(args.input ?? {}));
      const members = await services.clusters.listPods(principal.accountId, cluster.id);
      return {
        id: cluster.id,
        name: cluster.name,
        type: cluster.type,
        ...cluster.compute,
        dataCenterId: cluster.dataCenterId ?? null,
        pods: members.map((p) => toGqlPod(p, ctx)),
      };
    },
    deleteCluster: async (_root, args: { input?: { id?: string | null } | null }, ctx: GraphqlContext) => {
      const id = args.input?.id ?? '';
      try {
        await ctx.services.clusters.delete(ctx.principal.accountId, id);
      } catch (err) {
        if (isApiError(err) && err.code === 'NOT_FOUND') throw clusterNotFound(id);
        throw err;
      }
      return true;
    },
  },
};
