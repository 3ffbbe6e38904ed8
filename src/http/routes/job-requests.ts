import type { TypedApp } from '../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import { ApiError } from '../../domain/errors.js';
import { JOB_STATUSES } from '../../domain/job-state.js';
import type { TransportServices } from '../../transport/services.js';
import type { JobListingPosition, JobSummary } from '../../jobs/job-view.js';
import { principalOf } from '../plugins/auth.js';
import { jobRateLimitHooks } from '../plugins/job-rate-limit.js';
import { errorResponses, Nullable, StringEnum } from '../schemas.js';
import type { JobRouteContext } from './jobs.js';

const EndpointParams = Type.Object({ endpointId: Type.String({ minLength: 1 }) });

/** Other query parameters pass (`api_key` authenticates). */
const JobRequestsQuery = Type.Object({
  status: Type.Optional(StringEnum(JOB_STATUSES, { description: 'only jobs in this status' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'jobs per page' })),
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: 512, description: 'the nextCursor of the previous page' }),
  ),
});

const JobRequest = Type.Object({
  id: Type.String(),
  status: StringEnum(JOB_STATUSES),
  createdAt: Type.String({ format: 'date-time' }),
  delayTime: Type.Optional(Type.Number({ description: 'ms in the queue before a worker took it; present once taken' })),
  executionTime: Type.Optional(Type.Number({ description: 'ms a worker ran it; present once finished after running' })),
  retries: Type.Integer(),
});

const JobRequestList = Type.Object({
  requests: Type.Array(JobRequest),
  nextCursor: Nullable(Type.String({ description: 'pass as ?cursor= for the next page; null on the last page' })),
});

const toRequest = (job: JobSummary): Static<typeof JobRequest> => ({
  id: job.id,
  status: job.status,
  createdAt: new Date(job.createdAt).toISOString(),
  ...(job.delayMs !== null ? { delayTime: job.delayMs } : {}),
  ...(job.executionMs !== null ? { executionTime: job.executionMs } : {}),
  retries: job.retries,
});

/** Cursors are opaque to clients: the last job's creation time and id, base64url. */
const encodeJobCursor = (p: JobListingPosition): string =>
  Buffer.from(`${p.createdAt}.${p.id}`, 'utf8').toString('base64url');

function decodeJobCursor(cursor: string): JobListingPosition {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const dot = text.indexOf('.');
  const createdAt = Number(text.slice(0, dot));
  const id = text.slice(dot + 1);
  if (
    dot <= 0 ||
    !Number.isSafeInteger(createdAt) ||
    createdAt < 0 ||
    id.length === 0 ||
    encodeJobCursor({ createdAt, id }) !== cursor
  ) {
    const violation = 'cursor: is not a cursor this route answered; pass the nextCursor of the previous page';
    throw new ApiError('INVALID_PARAMETER', `Invalid query parameter: ${violation}.`, { errors: [violation] });
  }
  return { createdAt, id };
}

/**
 * `GET /v2/{endpointId}/requests` (spec 4.4 names it only as rate limited: 10 per 10 s, 2 at once):
 * the caller's recent jobs on the endpoint, newest first, a page at a time. Shares the job API's
 * limiter and endpoint cache (`jobRoutes` answers them).
 */
export function jobRequestRoutes(
  app: TypedApp,
  services: TransportServices,
  { limiter, endpoints }: JobRouteContext,
): void {
  app.get(
    '/v2/:endpointId/requests',
    {
      config: { ownRateLimits: true, jobApi: true },
      ...jobRateLimitHooks(limiter, 'requests'),
      schema: {
        tags: ['jobs'],
        summary: "The endpoint's recent jobs, newest first",
        description:
          'Each job with its status, creation time, delayTime, executionTime and retries; never its input, output or s3Config. Jobs leave the list when they expire (ttl) or their results are no longer retained. Limited to 10 requests per 10 seconds, 2 at once.',
        params: EndpointParams,
        querystring: JobRequestsQuery,
        response: { 200: JobRequestList, ...errorResponses },
      },
    },
    async (request): Promise<Static<typeof JobRequestList>> => {
      const query = request.query;
      const endpoint = await endpoints.get(principalOf(request).accountId, request.params.endpointId);
      const after = query.cursor === undefined ? undefined : decodeJobCursor(query.cursor);
      const page = await services.jobs.recent(endpoint.accountId, endpoint.id, {
        now: services.clock.now(),
        limit: query.limit ?? 100,
        ...(query.status !== undefined ? { status: query.status } : {}),
        ...(after !== undefined ? { after } : {}),
      });
      return { requests: page.jobs.map(toRequest), nextCursor: page.next === null ? null : encodeJobCursor(page.next) };
    },
  );
}
