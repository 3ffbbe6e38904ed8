import { badRequest } from '../domain/errors.js';
import type { GraphqlContext } from './context.js';
import { toCreatePod, toGqlPod, type GqlPodInput } from './pod-resolvers.js';
import type { ResolverMap } from './schema.js';

interface GqlRentInput extends GqlPodInput {
  bidPerGpu?: number | null;
  cudaVersion?: string | null;
  volumeKey?: string | null;
}

/** Interruptible (spot) pods over the same pods service REST uses (docs/pods.md, "Interruptible pods"). */
export const interruptibleResolvers: ResolverMap<GraphqlContext> = {
  Mutation: {
    podRentInterruptable: async (_root, args: { input?: GqlRentInput | null }, ctx: GraphqlContext) => {
      const { bidPerGpu, cudaVersion, volumeKey, ...input } = args.input ?? {};
      if (!input.gpuTypeId)
        throw badRequest('gpuTypeId is required: interruptible pods are GPU pods (see the gpuTypes query).');
      if (volumeKey?.trim()) throw badRequest('volumeKey is not supported by Gantry: it does not encrypt pod volumes.');
      if (cudaVersion && !input.minCudaVersion && !input.allowedCudaVersions?.length)
        input.minCudaVersion = cudaVersion;
      const body = toCreatePod(input, { gpu: { id: input.gpuTypeId, count: input.gpuCount ?? 1 } }, ctx);
      // SkyPilot sends its zone as data center ids separated by commas
      if (input.dataCenterId?.includes(','))
        body.dataCenterIds = input.dataCenterId.split(',').flatMap((id) => (id.trim() ? [id.trim()] : []));
      body.interruptible = true;
      if (bidPerGpu != null) body.bidPerGpu = bidPerGpu;
      return toGqlPod(await ctx.services.pods.create(ctx.principal.accountId, body), ctx);
    },
    podBidResume: async (
      _root,
      args: { input?: { podId?: string | null; bidPerGpu?: number | null; gpuCount?: number | null } | null },
      ctx: GraphqlContext,
    ) => {
      const { podId, bidPerGpu, gpuCount } = args.input ?? {};
      if (!podId) throw badRequest('input.podId is required.');
      if (bidPerGpu == null) throw badRequest('input.bidPerGpu is required: the bid per GPU, USD per hour.');
      const { accountId } = ctx.principal;
      const pod = await ctx.services.pods.get(accountId, podId);
      if (gpuCount != null && gpuCount !== (pod.gpu?.count ?? 0))
        throw badRequest(
          `Pod "${podId}" has ${pod.gpu?.count ?? 0} GPUs: it resumes with its own (gpuCount ${gpuCount}).`,
        );
      return toGqlPod(await ctx.services.pods.bidResume(accountId, podId, bidPerGpu), ctx);
    },
  },
};
