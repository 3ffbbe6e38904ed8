/** REST v1 billing (`/v1/billing/*`): bare arrays of records from a BillingQueries source. */
import type { TypedApp } from '../../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import type { BillingService } from '../../../billing/billing-service.js';
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

/** Sums records per bucket start, keeping the bucket order. */
const perBucket = <R extends { startTime: string; totalAmount: number }>(records: R[]): Map<string, number> => {
  const out = new Map<string, number>();
  for (const r of records) out.set(r.startTime, (out.get(r.startTime) ?? 0) + r.totalAmount);
  return out;
};
const cents = (x: number): number => Math.round(x * 1e9) / 1e9;

/**
 * v1's billing over the v2 billing service: v1 asks with the same window parameters (no `lastN`)
 * and answers bare arrays of `{time, amount}`; grouped by pod (or endpoint) when asked to, else
 * one record per bucket. Filters v2 does not keep per record (GPU type, data center, image,
 * template) are accepted and do not narrow (docs/rest-v1.md).
 */
export const billingFromService = (service: BillingService): BillingQueries => ({
  async pods(accountId, q) {
    const { records } = await service.listPodBilling(accountId, {
      startTime: q.startTime,
      endTime: q.endTime,
      bucketSize: q.bucketSize,
      ...(q.podId ? { podId: q.podId } : {}),
    });
    if (q.grouping === 'podId' || q.podId)
      return records.map((r) => ({ time: r.startTime, amount: cents(r.totalAmount), podId: r.podId }));
    return [...perBucket(records)].map(([time, amount]) => ({ time, amount: cents(amount) }));
  },
  async endpoints(accountId, q) {
    const { records } = await service.listServerlessBilling(accountId, {
      startTime: q.startTime,
      endTime: q.endTime,
      bucketSize: q.bucketSize,
      ...(q.endpointId ? { serverlessId: q.endpointId } : {}),
    });
    if (q.grouping === 'endpointId' || q.endpointId)
      return records.map((r) => ({ time: r.startTime, amount: cents(r.totalAmount), endpointId: r.serverlessId }));
    return [...perBucket(records)].map(([time, amount]) => ({ time, amount: cents(amount) }));
  },
  async networkVolumes(accountId, q) {
    const { records } = await service.listNetworkVolumeBilling(accountId, {
      startTime: q.startTime,
      endTime: q.endTime,
      bucketSize: q.bucketSize,
    });
    return [...perBucket(records)].map(([time, amount]) => ({ time, amount: cents(amount) }));
  },
});

export function billingV1Routes(app: TypedApp, billing: BillingQueries): void {
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
    async (request) => billing.pods(principalOf(request).accountId, request.query),
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
    async (request) => billing.endpoints(principalOf(request).accountId, request.query),
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
    async (request) => billing.networkVolumes(principalOf(request).accountId, request.query),
  );
}
