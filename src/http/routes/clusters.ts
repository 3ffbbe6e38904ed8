import type { TypedApp } from '../type-provider.js';
import type { TransportServices } from '../../transport/services.js';
import { principalOf } from '../plugins/auth.js';
import { Deleted, IdParams, errorResponses } from '../schemas.js';
import { Cluster, ClusterList, CreateClusterRequest, UpdateClusterRequest } from '../schemas/cluster-schemas.js';
import { PodList } from '../schemas/pod-schemas.js';

/** REST /v2/clusters (docs/clusters.md). */
export function clusterRoutes(app: TypedApp, { clusters }: TransportServices): void {
  app.get(
    '/v2/clusters',
    {
      schema: {
        operationId: 'listClusters',
        tags: ['clusters'],
        summary: "List the account's clusters",
        response: { 200: ClusterList, ...errorResponses },
      },
    },
    async (request) => ({ clusters: await clusters.list(principalOf(request).accountId) }),
  );

  app.post(
    '/v2/clusters',
    {
      schema: {
        operationId: 'createCluster',
        tags: ['clusters'],
        summary: 'Create a cluster',
        description:
          'Creates compute.podCount identical pods, all placed in one data center or none (no capacity → 400), ranked 0..n-1 on a private network. The pods answer PROVISIONING and start asynchronously.',
        body: CreateClusterRequest,
        response: { 201: Cluster, ...errorResponses },
      },
    },
    async (request, reply) => {
      const cluster = await clusters.create(principalOf(request).accountId, request.body);
      return reply.code(201).send(cluster);
    },
  );

  app.get(
    '/v2/clusters/:id',
    {
      schema: {
        operationId: 'getCluster',
        tags: ['clusters'],
        summary: 'Read one cluster',
        description: 'The pods field is a summary; GET /v2/clusters/{id}/pods answers the member pods.',
        params: IdParams,
        response: { 200: Cluster, ...errorResponses },
      },
    },
    async (request) => clusters.get(principalOf(request).accountId, request.params.id),
  );

  app.patch(
    '/v2/clusters/:id',
    {
      schema: {
        operationId: 'updateCluster',
        tags: ['clusters'],
        summary: 'Rename a cluster',
        description: 'Only the name changes: shape, type and container configuration are fixed at creation.',
        params: IdParams,
        body: UpdateClusterRequest,
        response: { 200: Cluster, ...errorResponses },
      },
    },
    async (request) => clusters.rename(principalOf(request).accountId, request.params.id, request.body.name ?? ''),
  );

  app.delete(
    '/v2/clusters/:id',
    {
      schema: {
        operationId: 'deleteCluster',
        tags: ['clusters'],
        summary: 'Delete a cluster',
        description: 'Terminates every member pod, then deletes the cluster.',
        params: IdParams,
        response: { 204: Deleted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await clusters.delete(principalOf(request).accountId, request.params.id);
      return reply.code(204).send();
    },
  );

  app.get(
    '/v2/clusters/:id/pods',
    {
      schema: {
        operationId: 'listClusterPods',
        tags: ['clusters'],
        summary: "List a cluster's pods",
        description: 'Every member as a complete Pod, by rank.',
        params: IdParams,
        response: { 200: PodList, ...errorResponses },
      },
    },
    async (request) => ({ pods: await clusters.listPods(principalOf(request).accountId, request.params.id) }),
  );
}
