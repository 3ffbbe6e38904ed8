/**
 * `podEditJob`: upstream's edit of a pod's container settings, over the pods service's change
 * (the path `PATCH /v2/pods/{id}` takes): only the fields sent change, and a change the instance
 * sees restarts a running pod on its host with a fresh container disk, its volume kept. Unlike the
 * REST pod routes it may change a cluster's member: dstack gives a cluster's pods their registry
 * credential this way, since createCluster takes none.
 */
import { badRequest } from '../domain/errors.js';
import { MAX_DISK_GB } from '../domain/limits.js';
import type { PatchPodInput } from '../pods/pod-rules.js';
import type { PodView } from '../pods/pod-view.js';
import { splitList } from '../serverless/endpoint-settings.js';
import { envFromPairs, type GraphqlContext } from './context.js';
import { toGqlPod } from './pod-resolvers.js';
import type { ResolverMap } from './schema.js';

interface PodEditJobInput {
  podId?: string | null;
  imageName?: string | null;
  containerDiskInGb?: number | null;
  volumeInGb?: number | null;
  dockerArgs?: string | null;
  env?: Array<{ key: string; value?: string | null } | null> | null;
  ports?: string | null;
  containerRegistryAuthId?: string | null;
  volumeMountPath?: string | null;
}

const DEFAULT_MOUNT_PATH = '/workspace';

/**
 * The pod's volume as the edit leaves it: a network volume's path, or the pod volume's path (its
 * size is fixed: the mount rules refuse another, and a volume added to a pod created without one).
 */
function mountsOf(input: PodEditJobInput, pod: PodView): PatchPodInput['mounts'] {
  const path = input.volumeMountPath || undefined;
  const network = pod.mounts.network?.[0];
  if (network) {
    if (input.volumeInGb)
      throw badRequest(
        `volumeInGb: pod "${pod.id}" mounts network volume "${network.volumeId}", whose size is the volume's (updateNetworkVolume); send 0 or leave it out.`,
      );
    return path === undefined ? undefined : { network: [{ volumeId: network.volumeId, path }] };
  }
  const size = input.volumeInGb ?? pod.mounts.persistent?.size ?? 0;
  if (size === 0) return undefined;
  return { persistent: { size, path: path ?? pod.mounts.persistent?.path ?? DEFAULT_MOUNT_PATH } };
}

/** The edit as a change of the pod (the PATCH body's names); null fields are not sent. */
async function editOf(input: PodEditJobInput, current: () => Promise<PodView>): Promise<PatchPodInput> {
  const patch: PatchPodInput = {};
  if (input.imageName) patch.image = input.imageName;
  if (input.containerDiskInGb != null) {
    const disk = input.containerDiskInGb;
    if (disk < 1 || disk > MAX_DISK_GB)
      throw badRequest(`containerDiskInGb must be a whole number of GB from 1 to ${MAX_DISK_GB} (got ${disk}).`);
    patch.disk = disk;
  }
  if (input.dockerArgs != null) patch.args = input.dockerArgs;
  if (input.env != null) patch.env = envFromPairs(input.env);
  if (input.ports != null) patch.ports = splitList(input.ports);
  if (input.containerRegistryAuthId != null)
    patch.registry = input.containerRegistryAuthId === '' ? null : input.containerRegistryAuthId;
  if (input.volumeInGb != null || input.volumeMountPath) {
    const mounts = mountsOf(input, await current());
    if (mounts) patch.mounts = mounts;
  }
  return patch;
}

export const podEditResolvers: ResolverMap<GraphqlContext> = {
  Mutation: {
    podEditJob: async (_root, args: { input?: PodEditJobInput | null }, ctx: GraphqlContext) => {
      const input = args.input ?? {};
      const podId = input.podId;
      if (!podId) throw badRequest('input.podId is required.');
      const accountId = ctx.principal.accountId;
      const patch = await editOf(input, () => ctx.services.pods.get(accountId, podId));
      return toGqlPod(await ctx.services.pods.update(accountId, podId, patch, { clusterMember: true }), ctx);
    },
  },
};
