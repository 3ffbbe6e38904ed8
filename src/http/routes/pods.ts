import type { TypedApp } from '../type-provider.js';
import type { Static } from '@sinclair/typebox';
import type { TransportServices } from '../../transport/services.js';
import { principalOf } from '../plugins/auth.js';
import { IdParams, errorResponses } from '../schemas.js';
import {
  CreatePodRequest,
  PatchPodRequest,
  Pod,
  PodActionRequest,
  PodList,
  PodListQuery,
  PodPageHeaders,
} from '../schemas/pod-schemas.js';

type IdParams = Static<typeof IdParams>;

export function podRoutes(app: TypedApp, { pods }: TransportServices): void {
  app.post(
    '/v2/pods',
    {
      schema: {
        operationId: 'createPod',
        tags: ['pods'],
        summary: 'Create a pod',
        description:
          'Placement and reservation happen in the request (no capacity → 400); the pod answers PROVISIONING and starts asynchronously. Poll GET /v2/pods/{id} for RUNNING.',
        body: CreatePodRequest,
        response: { 201: Pod, ...errorResponses },
      },
    },
    async (request, reply) => {
      const pod = await pods.create(principalOf(request).accountId, request.body);
      return reply.code(201).send(pod);
    },
  );

  app.get(
    '/v2/pods',
    {
      schema: {
        operationId: 'listPods',
        tags: ['pods'],
        summary: "List the account's pods",
        description:
          'TERMINATED pods and cluster member pods are left out unless includeTerminated / includeClusterPods is true. Gantry extension: search, sort, order, offset and limit answer a page of the list, its figures in headers (docs/api.md "Paging the pod list").',
        querystring: PodListQuery,
        response: { 200: { ...PodList, headers: PodPageHeaders }, ...errorResponses },
      },
    },
    async (request, reply) => {
      const q = request.query;
      const accountId = principalOf(request).accountId;
      const filter = {
        includeClusterPods: q.includeClusterPods ?? false,
        includeTerminated: q.includeTerminated ?? false,
        ...(q.status !== undefined ? { status: q.status } : {}),
        ...(q.name !== undefined ? { name: q.name } : {}),
        ...(q.gpuTypeId !== undefined ? { gpuTypeId: q.gpuTypeId } : {}),
        ...(q.dataCenterId !== undefined ? { dataCenterId: q.dataCenterId } : {}),
      };
      // without a paging parameter the answer is the spec's, byte for byte as before
      if (
        q.search === undefined &&
        q.sort === undefined &&
        q.order === undefined &&
        q.offset === undefined &&
        q.limit === undefined
      )
        return { pods: await pods.list(accountId, filter) };
      const page = await pods.listPage(accountId, filter, {
        ...(q.search !== undefined ? { search: q.search } : {}),
        ...(q.sort !== undefined ? { sort: q.sort } : {}),
        ...(q.order !== undefined ? { order: q.order } : {}),
        ...(q.offset !== undefined ? { offset: q.offset } : {}),
        ...(q.limit !== undefined ? { limit: q.limit } : {}),
      });
      void reply
        .header('x-total-count', String(page.total))
        .header('x-gantry-running-count', String(page.running))
        .header('x-gantry-cost-per-hr', String(page.costPerHr));
      return { pods: page.pods };
    },
  );

  app.get(
    '/v2/pods/:id',
    {
      schema: {
        operationId: 'getPod',
        tags: ['pods'],
        summary: 'Read one pod',
        params: IdParams,
        response: { 200: Pod, ...errorResponses },
      },
    },
    async (request) => pods.get(principalOf(request).accountId, request.params.id),
  );

  app.patch(
    '/v2/pods/:id',
    {
      schema: {
        operationId: 'updatePod',
        tags: ['pods'],
        summary: 'Change a pod',
        description:
          'Updates name, image, args, disk, env (replaced whole), ports, registry, locked and mount paths. Changes the instance sees (image, args, env, ports, disk, mounts, registry) restart a RUNNING pod.',
        params: IdParams,
        body: PatchPodRequest,
        response: { 200: Pod, ...errorResponses },
      },
    },
    async (request) => pods.update(principalOf(request).accountId, request.params.id, request.body),
  );

  app.post(
    '/v2/pods/:id/action',
    {
      schema: {
        operationId: 'podAction',
        tags: ['pods'],
        summary: 'Start, stop, restart or terminate a pod',
        description:
          'start/stop/restart answer 200 with the pod, terminate answers 204. An action the status does not allow, or stop/restart of a locked pod, answers 409.',
        params: IdParams,
        body: PodActionRequest,
        response: { 200: Pod, 204: { type: 'null', description: 'terminated' }, ...errorResponses },
      },
    },
    async (request, reply) => {
      const pod = await pods.act(principalOf(request).accountId, request.params.id, request.body.action);
      if (request.body.action === 'terminate') return reply.code(204).send();
      return pod;
    },
  );

  app.delete(
    '/v2/pods/:id',
    {
      schema: {
        operationId: 'deletePod',
        tags: ['pods'],
        summary: 'Terminate a pod',
        params: IdParams,
        response: { 204: { type: 'null', description: 'terminated' }, ...errorResponses },
      },
    },
    async (request, reply) => {
      await pods.act(principalOf(request).accountId, request.params.id, 'terminate');
      return reply.code(204).send();
    },
  );
}
