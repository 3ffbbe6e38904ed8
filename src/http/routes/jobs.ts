import type { FastifyReply } from 'fastify';
import type { TSchema, TUnknown } from '@sinclair/typebox';
import { typed, type TypedApp, type TypedRequest } from '../type-provider.js';
import { isTerminalJobStatus } from '../../domain/job-state.js';
import { RUNSYNC_WAIT, STATUS_SYNC_WAIT, STREAM_WAIT } from '../../domain/job-policy.js';
import type { JobOperation } from '../../domain/job-rate-limits.js';
import type { Endpoint } from '../../domain/endpoint.js';
import type { TransportServices } from '../../transport/services.js';
import { principalOf } from '../plugins/auth.js';
import { JobRateLimiter, jobRateLimitHooks } from '../plugins/job-rate-limit.js';
import { errorResponses } from '../schemas.js';
import { clientGone } from '../client-gone.js';
import { useLenientJson } from '../lenient-json.js';
import { endpointHealth } from './endpoint-health.js';
import {
  EndpointParams,
  type EndpointRequest,
  JobParams,
  jobBody,
  RUN_BODY_LIMIT,
  RUNSYNC_BODY_LIMIT,
  WaitQuery,
  waitOf,
} from './job-body.js';
import { openAiRoutes } from './openai-proxy.js';
import { JOB_ANSWERS } from './job-answers.js';
import { EndpointLookup } from './endpoint-lookup.js';

/** A request of a route under `/v2/:endpointId/…/:jobId`; a body, where one is read, is `unknown` (lenient JSON, checked by `jobBody`). */
type JobRequest = TypedRequest<{ params: typeof JobParams }>;
/** Only the error answers have schemas: a success is the service's answer as it is. */
type JobResponses = typeof errorResponses & { 200?: TUnknown };

/** What the job routes share with job routes registered beside them (`job-requests.ts`): one limiter, one endpoint cache. */
export interface JobRouteContext {
  limiter: JobRateLimiter;
  endpoints: EndpointLookup;
}

/**
 * The client job API (spec 4.4, wire-protocol §2) under `/v2/{endpointId}/…`. Success is always
 * 200 (the JS SDK treats anything else as an error); errors are problem+json. The spec 8.1 limits
 * apply instead of the REST limiter.
 */
export function jobRoutes(app: TypedApp, services: TransportServices): JobRouteContext {
  const { jobs, workers } = services;
  const endpoints = new EndpointLookup(services.endpoints);
  const limiter = new JobRateLimiter({
    clock: services.clock,
    liveWorkers: (endpointId) => workers.liveWorkers(endpointId),
    perWorker: services.config.jobs.rateLimitPerWorker,
    enabled: services.config.jobs.rateLimits,
    share: services.jobRequestCounts ?? undefined,
  });
  const unsubscribe = services.jobRequestCounts?.subscribe((key, count) => limiter.receive(key, count));
  if (unsubscribe) app.addHook('onClose', async () => void unsubscribe());
  const route = (op: JobOperation, extra: { scope?: 'read' | 'write' } = {}) => ({
    config: { ownRateLimits: true, jobApi: true, answers: JOB_ANSWERS[op], ...extra },
    ...jobRateLimitHooks(limiter, op),
  });
  const doc = <P extends TSchema>(
    summary: string,
    params: P,
    querystring?: typeof WaitQuery,
  ): { tags: string[]; summary: string; params: P; querystring?: typeof WaitQuery; response: JobResponses } => ({
    tags: ['jobs'],
    summary,
    params,
    ...(querystring ? { querystring } : {}),
    response: errorResponses,
  });
  const endpointOf = (request: EndpointRequest): Endpoint | Promise<Endpoint> => {
    const accountId = principalOf(request).accountId;
    const { endpointId } = request.params;
    return endpoints.peek(accountId, endpointId) ?? endpoints.get(accountId, endpointId);
  };

  void app.register(async (plain) => {
    useLenientJson(plain);
    const scope = typed(plain); // a plugin's instance does not keep the provider's types

    scope.post(
      '/v2/:endpointId/run',
      {
        ...route('run'),
        bodyLimit: RUN_BODY_LIMIT,
        schema: doc('Queue a job (body: input, webhook, policy, s3Config)', EndpointParams),
      },
      (request) => {
        const submit = (endpoint: Endpoint) =>
          jobs.client.submit(endpoint.id, endpoint.accountId, jobBody(request.body), {
            defaultExecutionTimeoutMs: endpoint.executionTimeoutMs,
          });
        const endpoint = endpointOf(request);
        return endpoint instanceof Promise ? endpoint.then(submit) : submit(endpoint);
      },
    );

    scope.post(
      '/v2/:endpointId/runsync',
      {
        ...route('runsync'),
        bodyLimit: RUNSYNC_BODY_LIMIT,
        schema: doc(
          'Queue a job and wait for its result (wait 1000-300000 ms, default 90000)',
          EndpointParams,
          WaitQuery,
        ),
      },
      async (request, reply) => {
        const endpoint = await endpointOf(request);
        const waitMs = waitOf(request, RUNSYNC_WAIT);
        const view = await jobs.client.runSync(endpoint.id, endpoint.accountId, jobBody(request.body), {
          defaultExecutionTimeoutMs: endpoint.executionTimeoutMs,
          waitMs,
          signal: clientGone(reply),
        });
        return isTerminalJobStatus(view.status) ? view : { id: view.id, status: view.status };
      },
    );

    const status = async (request: JobRequest) => {
      const endpoint = await endpointOf(request);
      return jobs.client.status(endpoint.accountId, endpoint.id, request.params.jobId);
    };
    // The POST forms (the Go SDK's) only read: a read key may call them.
    scope.get(
      '/v2/:endpointId/status/:jobId',
      { ...route('status'), schema: doc('A job: status, timings, output or error', JobParams) },
      status,
    );
    scope.post(
      '/v2/:endpointId/status/:jobId',
      { ...route('status', { scope: 'read' }), schema: { ...doc('A job (POST form)', JobParams), hide: true } },
      status,
    );

    const statusSync = async (request: JobRequest, reply: FastifyReply) => {
      const endpoint = await endpointOf(request);
      const waitMs = waitOf(request, STATUS_SYNC_WAIT);
      return jobs.client.waitForTerminal(endpoint.accountId, endpoint.id, request.params.jobId, {
        waitMs,
        signal: clientGone(reply),
      });
    };
    scope.get(
      '/v2/:endpointId/status-sync/:jobId',
      { ...route('status'), schema: doc('A job, once finished or after wait ms', JobParams, WaitQuery) },
      statusSync,
    );
    scope.post(
      '/v2/:endpointId/status-sync/:jobId',
      {
        ...route('status', { scope: 'read' }),
        schema: { ...doc('status-sync (POST form)', JobParams, WaitQuery), hide: true },
      },
      statusSync,
    );

    const stream = async (request: JobRequest, reply: FastifyReply) => {
      const endpoint = await endpointOf(request);
      const waitMs = waitOf(request, STREAM_WAIT);
      const r = await jobs.client.stream(endpoint.accountId, endpoint.id, request.params.jobId, {
        waitMs,
        signal: clientGone(reply),
      });
      return { id: r.id, status: r.status, stream: r.stream };
    };
    scope.get(
      '/v2/:endpointId/stream/:jobId',
      {
        ...route('stream'),
        schema: doc('Stream chunks buffered since the last call (waits while none)', JobParams, WaitQuery),
      },
      stream,
    );
    scope.post(
      '/v2/:endpointId/stream/:jobId',
      {
        ...route('stream', { scope: 'read' }),
        schema: { ...doc('stream (POST form)', JobParams, WaitQuery), hide: true },
      },
      stream,
    );

    scope.post(
      '/v2/:endpointId/cancel/:jobId',
      { ...route('cancel'), schema: doc('Cancel a queued or running job', JobParams) },
      async (request) => {
        const endpoint = await endpointOf(request);
        return jobs.client.cancel(endpoint.accountId, endpoint.id, request.params.jobId);
      },
    );

    scope.post(
      '/v2/:endpointId/retry/:jobId',
      { ...route('retry'), schema: doc('Requeue a FAILED or TIMED_OUT job (same id and input)', JobParams) },
      async (request) => {
        const endpoint = await endpointOf(request);
        return jobs.client.retry(endpoint.accountId, endpoint.id, request.params.jobId);
      },
    );

    scope.post(
      '/v2/:endpointId/purge-queue',
      { ...route('purge-queue'), schema: doc('Delete every queued job of the endpoint', EndpointParams) },
      async (request) => {
        const endpoint = await endpointOf(request);
        return jobs.client.purgeQueue(endpoint.id);
      },
    );

    scope.get(
      '/v2/:endpointId/health',
      { ...route('health'), schema: doc('Job and worker counts of the endpoint', EndpointParams) },
      async (request) => {
        const endpoint = await endpointOf(request);
        return endpointHealth(services, endpoint.id);
      },
    );

    openAiRoutes(scope, { jobs, endpointOf, route: route('openai') });
  });

  return { limiter, endpoints };
}
