/** REST v1 billing (`/v1/billing/*`): bare arrays of records from a BillingQueries source. */
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { principalOf } from '../../plugins/auth.js';
import { errorResponses } from './common.js';

const tags = ['billing'];
const BucketSize = Type.Unsafe<'hour' | 'day' | 'week' | 'month' | 'year'>({
  type: 'string',
  enum: ['hour', 'day', 'week', 'month', 'year'],
  default: 'day',
});
const Time = Type.String({ format: 'date-time' });
const window = { startTime: Type.Optional(Time), endTime: Type.Optional(Time), bucketSize: Type.Optional(BucketSize) };

const PodQuery = Type.Object({
  ...window,
  grouping: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['podId', 'gpuTypeId'] })),
  podId: Type.Optional(Type.String()),
  gpuTypeId: Type.Optional(Type.String()),
});
const EndpointQuery = Type.Object({
  ...window,
  grouping: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['endpointId', 'podId', 'gpuTypeId'] })),
  endpointId: Type.Optional(Type.String()),
  podId: Type.Optional(Type.String()),
  gpuTypeId: Type.Optional(Type.String()),
  dataCenterId: Type.Optional(Type.String()),
  imageName: Type.Optional(Type.String()),
  templateId: Type.Optional(Type.String()),
});
const VolumeQuery = Type.Object(window);

const BillingRecord = Type.Object({
  time: Type.String(),
  amount: Type.Number(),
  timeBilledMs: Type.Optional(Type.Integer()),
  diskSpaceBilledGb: Type.Optional(Type.Integer()),
  podId: Type.Optional(Type.String()),
  endpointId: Type.Optional(Type.String()),
  gpuTypeId: Type.Optional(Type.String()),
});
const VolumeBillingRecord = Type.Object({
  time: Type.String(),
  amount: Type.Number(),
  diskSpaceBilledGb: Type.Optional(Type.Integer()),
  highPerformanceStorageAmount: Type.Optional(Type.Number()),
  highPerformanceStorageDiskSpaceBilledGb: Type.Optional(Type.Integer()),
});

type PodBillingQuery = Static<typeof PodQuery>;
type EndpointBillingQuery = Static<typeof EndpointQuery>;
type VolumeBillingQuery = Static<typeof VolumeQuery>;
type BillingRecordV1 = Static<typeof BillingRecord>;
type VolumeBillingRecordV1 = Static<typeof VolumeBillingRecord>;

/** Where /v1/billing/* reads its records, per account; v1 names and shapes. */
export interface BillingQueries {
  pods(accountId: string, query: PodBillingQuery): Promise<BillingRecordV1[]>;
  endpoints(accountId: string, query: EndpointBillingQuery): Promise<BillingRecordV1[]>;
  networkVolumes(accountId: string, query: VolumeBillingQuery): Promise<VolumeBillingRecordV1[]>;
}

/** Until billing is wired in, every window holds no records. */
export const noBilling: BillingQueries = {
  pods: () => Promise.resolve([]),
  endpoints: () => Promise.resolve([]),
  networkVolumes: () => Promise.resolve([]),
};

export function billingV1Routes(app: FastifyInstance, billing: BillingQueries): void {
  app.get(
    '/billing/pods',
    {
      schema: {
        tags,
        operationId: 'PodBilling',
        summary: 'Pod billing history (a bare array of buckets)',
        querystring: PodQuery,
        response: { 200: Type.Array(BillingRecord), ...errorResponses },
      },
    },
    async (request) => billing.pods(principalOf(request).accountId, request.query as PodBillingQuery),
  );
  app.get(
    '/billing/endpoints',
    {
      schema: {
        tags,
        operationId: 'EndpointBilling',
        summary: 'Serverless billing history (a bare array of buckets)',
        querystring: EndpointQuery,
        response: { 200: Type.Array(BillingRecord), ...errorResponses },
      },
    },
    async (request) => billing.endpoints(principalOf(request).accountId, request.query as EndpointBillingQuery),
  );
  app.get(
    '/billing/networkvolumes',
    {
      schema: {
        tags,
        operationId: 'NetworkVolumeBilling',
        summary: 'Network volume billing history (a bare array of buckets)',
        querystring: VolumeQuery,
        response: { 200: Type.Array(VolumeBillingRecord), ...errorResponses },
      },
    },
    async (request) => billing.networkVolumes(principalOf(request).accountId, request.query as VolumeBillingQuery),
  );
}
