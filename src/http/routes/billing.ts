import type { TypedApp } from '../type-provider.js';
import { Type, type TProperties, type TSchema } from '@sinclair/typebox';
import type { TransportServices } from '../../transport/services.js';
import { BUCKET_SIZES, type BucketSize as BucketSizeName } from '../../billing/billing-window.js';
import { principalOf } from '../plugins/auth.js';
import { errorResponses, Nullable } from '../schemas.js';

const tags = ['billing'];
const closed = { additionalProperties: false } as const;

const BucketSize = Type.Unsafe<BucketSizeName>({
  type: 'string',
  enum: [...BUCKET_SIZES],
  default: 'day',
  description: 'Length of each billing time bucket (UTC; a week starts on Monday). Defaults to day.',
});
const windowParams = {
  startTime: Type.Optional(
    Type.String({
      format: 'date-time',
      description:
        'Start of the billing period (RFC 3339). Defaults to 30 days ago. Snapped down to the start of its bucketSize bucket.',
    }),
  ),
  endTime: Type.Optional(
    Type.String({
      format: 'date-time',
      description:
        'End of the billing period (RFC 3339), exclusive. Defaults to now. Snapped up to the end of its bucket unless on a boundary.',
    }),
  ),
  bucketSize: Type.Optional(BucketSize),
  lastN: Type.Optional(
    Type.Integer({
      minimum: 1,
      description:
        'The last N buckets of bucketSize, ending with the current one. Mutually exclusive with startTime/endTime.',
    }),
  ),
};
const filter = (name: string, description: string) =>
  Type.Object(
    { ...windowParams, [name]: Type.Optional(Type.String({ minLength: 1, maxLength: 191, description })) },
    closed,
  );

const BillingQueryString = Type.Object(windowParams, closed);
const PodQueryString = filter('podId', 'Filter to a specific pod (GPU or CPU).');
const ServerlessQueryString = filter('serverlessId', 'Filter to a specific serverless endpoint.');
const VolumeQueryString = filter('networkVolumeId', 'Filter to a specific network volume.');
const ClusterQueryString = filter('clusterId', 'Filter to a specific cluster.');

const usd = (description: string) => Type.Number({ format: 'double', description });
const TimeRange = {
  startTime: Type.String({ format: 'date-time', description: 'Start of the range, inclusive (RFC 3339).' }),
  endTime: Type.String({ format: 'date-time', description: 'End of the range, exclusive (RFC 3339).' }),
};
const Query = { ...TimeRange, bucketSize: BucketSize };

const BillingAmounts = {
  totalAmount: usd('Total cost in USD for the bucket across all resources.'),
  podGpuAmount: usd('GPU pod compute cost in USD for the bucket.'),
  podCpuAmount: usd('CPU pod compute cost in USD for the bucket.'),
  podDiskAmount: usd('Pod disk cost in USD for the bucket.'),
  serverlessGpuAmount: usd('Serverless GPU compute cost in USD for the bucket.'),
  serverlessCpuAmount: usd('Serverless CPU compute cost in USD for the bucket.'),
  serverlessDiskAmount: usd('Serverless disk cost in USD for the bucket.'),
  serverlessFeeAmount: usd('Serverless platform fee in USD for the bucket.'),
  storageStandardAmount: usd('Standard network volume storage cost in USD for the bucket.'),
  storageHighPerformanceAmount: usd('High-performance network volume storage cost in USD for the bucket.'),
  endpointAmount: usd('Runpod public endpoint cost in USD for the bucket.'),
  clusterGpuAmount: usd('Cluster GPU compute cost in USD for the bucket.'),
  clusterDiskAmount: usd('Cluster disk cost in USD for the bucket.'),
  clusterNetworkingAmount: usd('Cluster inter-node networking cost in USD for the bucket.'),
};
const PodAmounts = {
  totalAmount: usd('Total pod cost in USD for the bucket.'),
  gpuAmount: usd('GPU pod compute cost in USD for the bucket.'),
  cpuAmount: usd('CPU pod compute cost in USD for the bucket.'),
  diskAmount: usd('Pod disk cost in USD for the bucket.'),
};
const ServerlessAmounts = {
  totalAmount: usd('Total serverless cost in USD for the bucket.'),
  gpuAmount: usd('Serverless GPU compute cost in USD for the bucket.'),
  cpuAmount: usd('Serverless CPU compute cost in USD for the bucket.'),
  diskAmount: usd('Serverless disk cost in USD for the bucket.'),
  feeAmount: usd('Serverless platform fee in USD for the bucket.'),
};
const EndpointAmounts = { totalAmount: usd('Total public endpoint cost in USD for the bucket.') };
const VolumeAmounts = {
  totalAmount: usd('Total network volume cost in USD for the bucket, across standard and high-performance storage.'),
  standardAmount: usd('Standard storage cost in USD for the bucket.'),
  highPerformanceAmount: usd('High-performance storage cost in USD for the bucket.'),
};
const ClusterAmounts = {
  totalAmount: usd('Total Instant Cluster cost in USD for the bucket.'),
  gpuAmount: usd('Cluster GPU compute cost in USD for the bucket.'),
  diskAmount: usd('Cluster disk cost in USD for the bucket.'),
  networkingAmount: usd('Cluster inter-node networking cost in USD for the bucket.'),
};

/** A list response: records (a time range, the amounts, the resource id if any) and metadata. */
function listResponse<A extends TProperties>(amounts: A, idName?: string, uniqueName?: string) {
  const id = idName ? { [idName]: Type.String() } : {};
  const echoed = idName
    ? { [idName]: Nullable(Type.String({ description: `The ${idName} filter applied, if any.` })) }
    : {};
  const unique = uniqueName ? { [uniqueName]: Type.Integer() } : {};
  return Type.Object({
    records: Type.Array(Type.Object({ ...TimeRange, ...id, ...amounts })),
    metadata: Type.Object({
      query: Type.Object({ ...Query, ...echoed }),
      recordCount: Type.Integer({ description: 'Number of records returned.' }),
      ...unique,
      totals: Type.Object(amounts),
    }),
  });
}

const ok = <S extends TSchema>(schema: S) => ({ 200: schema, ...errorResponses });

/**
 * REST v2 billing (docs/billing.md), as the public OpenAPI describes it: time buckets of what the
 * caller's account spent, per resource family or per resource. Another account's id as a filter
 * answers no records, never its figures.
 */
export function billingRoutes(app: TypedApp, { billing }: TransportServices): void {
  app.get(
    '/v2/billing',
    {
      schema: {
        tags,
        operationId: 'listBilling',
        summary: 'Get aggregated billing history',
        querystring: BillingQueryString,
        response: ok(listResponse(BillingAmounts)),
      },
    },
    (request) => billing.listBilling(principalOf(request).accountId, request.query),
  );
  app.get(
    '/v2/billing/pods',
    {
      schema: {
        tags,
        operationId: 'listPodBilling',
        summary: 'Get pod billing history',
        querystring: PodQueryString,
        response: ok(listResponse(PodAmounts, 'podId', 'uniquePodCount')),
      },
    },
    (request) => billing.listPodBilling(principalOf(request).accountId, request.query),
  );
  app.get(
    '/v2/billing/serverless',
    {
      schema: {
        tags,
        operationId: 'listServerlessBilling',
        summary: 'Get serverless billing history',
        querystring: ServerlessQueryString,
        response: ok(listResponse(ServerlessAmounts, 'serverlessId', 'uniqueServerlessCount')),
      },
    },
    (request) => billing.listServerlessBilling(principalOf(request).accountId, request.query),
  );
  app.get(
    '/v2/billing/endpoints',
    {
      schema: {
        tags,
        operationId: 'listEndpointBilling',
        summary: 'Get public endpoint billing history',
        querystring: BillingQueryString,
        response: ok(listResponse(EndpointAmounts)),
      },
    },
    (request) => billing.listEndpointBilling(principalOf(request).accountId, request.query),
  );
  app.get(
    '/v2/billing/network-volumes',
    {
      schema: {
        tags,
        operationId: 'listNetworkVolumeBilling',
        summary: 'Get network volume billing history',
        querystring: VolumeQueryString,
        response: ok(listResponse(VolumeAmounts, 'networkVolumeId', 'uniqueNetworkVolumeCount')),
      },
    },
    (request) => billing.listNetworkVolumeBilling(principalOf(request).accountId, request.query),
  );
  app.get(
    '/v2/billing/clusters',
    {
      schema: {
        tags,
        operationId: 'listClusterBilling',
        summary: 'Get cluster billing history (Gantry has no clusters yet: no records)',
        querystring: ClusterQueryString,
        response: ok(listResponse(ClusterAmounts, 'clusterId', 'uniqueClusterCount')),
      },
    },
    (request) => billing.listClusterBilling(principalOf(request).accountId, request.query),
  );
}
