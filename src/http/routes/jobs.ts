import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ApiError } from '../../domain/errors.js';
import { isTerminalJobStatus } from '../../domain/job-state.js';
import { normalizeWait, RUNSYNC_WAIT, STATUS_SYNC_WAIT, STREAM_WAIT, type WaitBounds } from '../../domain/job-policy.js';
import type { JobOperation } from '../../domain/job-rate-limits.js';
import type { Endpoint } from '../../serverless/endpoint.js';
import type { SubmitBody } from '../../jobs/client-jobs.js';
import type { Services } from '../../services.js';
import { principalOf } from '../plugins/auth.js';
import { endJobRequestFlight, JobRateLimiter, jobRateLimitHooks } from '../plugins/job-rate-limit.js';
import { errorResponses } from '../schemas.js';
import { clientGone } from '../client-gone.js';
import { useLenientJson } from '../lenient-json.js';
import { endpointHealth } from './endpoint-health.js';
import { EndpointLookup } from './endpoint-lookup.js';

const MB = 1024 * 1024;
/** wire-protocol §2: 10 MB for /run, 20 MB for /runsync. */
export const RUN_BODY_LIMIT = 10 * MB;
export const RUNSYNC_BODY_LIMIT = 20 * MB;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const EndpointParams = Type.Object({ endpointId: Type.String({ minLength: 1 }) });
const JobParams = Type.Object({ endpointId: Type.String({ minLength: 1 }), jobId: Type.String({ minLength: 1 }) });
const WaitQuery = Type.Object({ wait: Type.Optional(Type.Number({ description: 'milliseconds to wait' })) });

function waitOf(request: FastifyRequest, bounds: WaitBounds): number {
  const wait = normalizeWait((request.query as { wait?: unknown }).wait, bounds);
  if (!wait.ok) throw new ApiError('INVALID_PARAMETER', `Invalid query parameter: ${wait.violations.join('; ')}.`, { errors: wait.violations });
  return wait.value;
}

/** A `/run` or `/runsync` body (spec 2.12); the service checks the fields' values. */
function jobBody(body: unknown): SubmitBody {
  if (body === undefined || body === null)
    throw new ApiError('INVALID_PARAMETER', 'The job request needs a JSON body: {"input": {...}}.', { errors: ['input is required'] });
  if (!isObject(body)) throw new ApiError('INVALID_PARAMETER', 'The job request must be a JSON object: {"input": {...}}.', { errors: ['body must be an object'] });
  if (body.input !== undefined && !isObject(body.input))
    throw new ApiError('INVALID_PARAMETER', 'The job request is invalid: input must be a JSON object.', { errors: ['input must be a JSON object'] });
  return body;
}

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
export function jobRoutes(app: FastifyInstance, services: Services): JobRouteContext {
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
    config: { ownRateLimits: true, jobApi: true, ...extra },
    ...jobRateLimitHooks(limiter, op),
  });
  const doc = (summary: string, params: typeof EndpointParams | typeof JobParams, querystring?: typeof WaitQuery) => ({
    tags: ['jobs'],
    summary,
    params,
    ...(querystring ? { querystring } : {}),
    response: errorResponses,
  });
  const endpointOf = (request: FastifyRequest): Endpoint | Promise<Endpoint> => {
    const accountId = principalOf(request).accountId;
    const endpointId = (request.params as { endpointId: string }).endpointId;
    return endpoints.peek(accountId, endpointId) ?? endpoints.get(accountId, endpointId);
  };

  void app.register(async (scope) => {
    useLenientJson(scope);

    scope.post('/v2/:endpointId/run', { ...route('run'), bodyLimit: RUN_BODY_LIMIT, schema: doc('Queue a job (body: input, webhook, policy, s3Config)', EndpointParams) }, (request) => {
      const submit = (endpoint: Endpoint) => jobs.submit(endpoint.id, endpoint.accountId, jobBody(request.body), { defaultExecutionTimeoutMs: endpoint.executionTimeoutMs });
      const endpoint = endpointOf(request);
      return endpoint instanceof Promise ? endpoint.then(submit) : submit(endpoint);
    });

    scope.post(
      '/v2/:endpointId/runsync',
      { ...route('runsync'), bodyLimit: RUNSYNC_BODY_LIMIT, schema: doc('Queue a job and wait for its result (wait 1000-300000 ms, default 90000)', EndpointParams, WaitQuery) },
      async (request, reply) => {
        const endpoint = await endpointOf(request);
        const waitMs = waitOf(request, RUNSYNC_WAIT);
        const view = await jobs.runSync(endpoint.id, endpoint.accountId, jobBody(request.body), {
          defaultExecutionTimeoutMs: endpoint.executionTimeoutMs,
          waitMs,
          signal: clientGone(reply),
        });
        return isTerminalJobStatus(view.status) ? view : { id: view.id, status: view.status };
      },
    );

    const status = async (request: FastifyRequest) => {
      const endpoint = await endpointOf(request);
      return jobs.status(endpoint.accountId, endpoint.id, (request.params as { jobId: string }).jobId);
    };
    // The POST forms (the Go SDK's) only read: a read key may call them.
    scope.get('/v2/:endpointId/status/:jobId', { ...route('status'), schema: doc('A job: status, timings, output or error', JobParams) }, status);
    scope.post('/v2/:endpointId/status/:jobId', { ...route('status', { scope: 'read' }), schema: { ...doc('A job (POST form)', JobParams), hide: true } }, status);

    const statusSync = async (request: FastifyRequest, reply: FastifyReply) => {
      const endpoint = await endpointOf(request);
      const waitMs = waitOf(request, STATUS_SYNC_WAIT);
      return jobs.waitForTerminal(endpoint.accountId, endpoint.id, (request.params as { jobId: string }).jobId, { waitMs, signal: clientGone(reply) });
    };
    scope.get('/v2/:endpointId/status-sync/:jobId', { ...route('status'), schema: doc('A job, once finished or after wait ms', JobParams, WaitQuery) }, statusSync);
    scope.post('/v2/:endpointId/status-sync/:jobId', { ...route('status', { scope: 'read' }), schema: { ...doc('status-sync (POST form)', JobParams, WaitQuery), hide: true } }, statusSync);

    const stream = async (request: FastifyRequest, reply: FastifyReply) => {
      const endpoint = await endpointOf(request);
      const waitMs = waitOf(request, STREAM_WAIT);
      const r = await jobs.stream(endpoint.accountId, endpoint.id, (request.params as { jobId: string }).jobId, { waitMs, signal: clientGone(reply) });
      return { id: r.id, status: r.status, stream: r.stream };
    };
    scope.get('/v2/:endpointId/stream/:jobId', { ...route('stream'), schema: doc('Stream chunks buffered since the last call (waits while none)', JobParams, WaitQuery) }, stream);
    scope.post('/v2/:endpointId/stream/:jobId', { ...route('stream', { scope: 'read' }), schema: { ...doc('stream (POST form)', JobParams, WaitQuery), hide: true } }, stream);

    scope.post('/v2/:endpointId/cancel/:jobId', { ...route('cancel'), schema: doc('Cancel a queued or running job', JobParams) }, async (request) => {
      const endpoint = await endpointOf(request);
      return jobs.cancel(endpoint.accountId, endpoint.id, (request.params as { jobId: string }).jobId);
    });

    scope.post('/v2/:endpointId/retry/:jobId', { ...route('retry'), schema: doc('Requeue a FAILED or TIMED_OUT job (same id and input)', JobParams) }, async (request) => {
      const endpoint = await endpointOf(request);
      return jobs.retry(endpoint.accountId, endpoint.id, (request.params as { jobId: string }).jobId);
    });

    scope.post('/v2/:endpointId/purge-queue', { ...route('purge-queue'), schema: doc('Delete every queued job of the endpoint', EndpointParams) }, async (request) => {
      const endpoint = await endpointOf(request);
      return jobs.purgeQueue(endpoint.id);
    });

    scope.get('/v2/:endpointId/health', { ...route('health'), schema: doc('Job and worker counts of the endpoint', EndpointParams) }, async (request) => {
      const endpoint = await endpointOf(request);
      return endpointHealth(services, endpoint.id);
    });

    scope.post(
      '/v2/:endpointId/openai/v1/*',
      { ...route('openai'), bodyLimit: RUNSYNC_BODY_LIMIT, schema: { hide: true } },
      async (request, reply) => {
        const endpoint = await endpointOf(request);
        const openaiRoute = `/v1/${(request.params as { '*': string })['*']}`;
        const body = request.body === undefined ? {} : request.body;
        const submit: SubmitBody = { input: { openai_route: openaiRoute, openai_input: body } };
        if (isObject(body) && body.stream === true) return streamOpenAi(request, reply, endpoint, submit);
        const view = await jobs.runSync(endpoint.id, endpoint.accountId, submit, {
          defaultExecutionTimeoutMs: endpoint.executionTimeoutMs,
          waitMs: waitOf(request, RUNSYNC_WAIT),
          signal: clientGone(reply),
        });
        switch (view.status) {
          case 'COMPLETED':
            // A streaming handler's aggregate of one chunk is the response itself.
            return Array.isArray(view.output) && view.output.length === 1 ? view.output[0] : (view.output ?? null);
          case 'FAILED':
          case 'TIMED_OUT':
          case 'CANCELLED':
            throw new ApiError('JOB_FAILED', `Job ${view.id} ended ${view.status}${view.error ? `: ${view.error}` : ''}.`);
          case 'IN_QUEUE':
          case 'IN_PROGRESS':
            throw new ApiError('JOB_NOT_FINISHED', `Job ${view.id} is still ${view.status}; poll GET /v2/${endpoint.id}/status/${view.id} for its result.`);
          default:
            return ((s: never) => s)(view.status);
        }
      },
    );
  });

  return { limiter, endpoints };

  /** `stream: true` OpenAI requests: the job's chunks as server-sent events, then `[DONE]`. */
  async function streamOpenAi(request: FastifyRequest, reply: FastifyReply, endpoint: Endpoint, submit: SubmitBody): Promise<void> {
    const { id } = await jobs.submit(endpoint.id, endpoint.accountId, submit, { defaultExecutionTimeoutMs: endpoint.executionTimeoutMs });
    const gone = clientGone(reply);
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': request.id });
    let sawDone = false;
    const write = (chunk: unknown): void => {
      for (const item of Array.isArray(chunk) ? chunk : [chunk]) {
        const text = typeof item === 'string' ? (item.startsWith('data:') ? item : `data: ${item}`) : `data: ${JSON.stringify(item)}`;
        if (text.includes('[DONE]')) sawDone = true;
        raw.write(text.endsWith('\n\n') ? text : `${text.replace(/\n*$/, '')}\n\n`);
      }
    };
    try {
      for (;;) {
        const r = await jobs.stream(endpoint.accountId, endpoint.id, id, { waitMs: STREAM_WAIT.default, signal: gone });
        for (const c of r.stream) write(c.output);
        if (gone.aborted) {
          await jobs.cancel(endpoint.accountId, endpoint.id, id).catch(() => undefined);
          return;
        }
        if (isTerminalJobStatus(r.status)) {
          if (r.status !== 'COMPLETED') {
            const view = await jobs.status(endpoint.accountId, endpoint.id, id).catch(() => null);
            raw.write(`data: ${JSON.stringify({ error: { message: `job ${id} ended ${r.status}${view?.error ? `: ${view.error}` : ''}`, type: r.status } })}\n\n`);
          }
          break;
        }
      }
      if (!sawDone) raw.write('data: [DONE]\n\n');
    } catch (err) {
      raw.write(`data: ${JSON.stringify({ error: { message: (err as Error).message } })}\n\n`);
    } finally {
      raw.end();
      endJobRequestFlight(request);
    }
  }
}
