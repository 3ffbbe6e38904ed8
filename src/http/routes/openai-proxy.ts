/**
 * `POST` and `GET /v2/{endpointId}/openai/v1/*`: an OpenAI-style request becomes a job whose input
 * carries `openai_route` and `openai_input` (what OpenAI-compatible workers read: the body, `{}`
 * for a GET such as the `openai` client's `models.list()`); the answer is the job's output, or with
 * `stream: true` its chunks as server-sent events ending in `[DONE]` (docs/serverless.md).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ApiError } from '../../domain/errors.js';
import { isTerminalJobStatus } from '../../domain/job-state.js';
import { RUNSYNC_WAIT, STREAM_WAIT } from '../../domain/job-policy.js';
import type { SubmitBody } from '../../jobs/client-jobs.js';
import type { Endpoint } from '../../domain/endpoint.js';
import type { TransportServices } from '../../transport/services.js';
import { clientGone } from '../client-gone.js';
import { endJobRequestFlight } from '../plugins/job-rate-limit.js';
import { isObject, type TypedApp } from '../type-provider.js';
import { RUNSYNC_BODY_LIMIT, waitOf, type EndpointRequest } from './job-body.js';

export interface OpenAiRouteDeps {
  jobs: TransportServices['jobs'];
  endpointOf: (request: EndpointRequest) => Endpoint | Promise<Endpoint>;
  /** the route's options (its rate limit hooks and config) */
  route: object;
}

/** The router's parameters, as text (never refused here): the endpoint and the OpenAI path after `/v1/`. */
const OpenAiParams = Type.Object({ endpointId: Type.String(), '*': Type.String() });

export function openAiRoutes(scope: TypedApp, { jobs, endpointOf, route }: OpenAiRouteDeps): void {
  scope.route({
    method: ['GET', 'POST'],
    url: '/v2/:endpointId/openai/v1/*',
    ...route,
    bodyLimit: RUNSYNC_BODY_LIMIT,
    schema: { hide: true, params: OpenAiParams },
    handler: async (request, reply) => {
      const endpoint = await endpointOf(request);
      const openaiRoute = `/v1/${request.params['*']}`;
      const body = request.body === undefined ? {} : request.body;
      const submit: SubmitBody = { input: { openai_route: openaiRoute, openai_input: body } };
      if (isObject(body) && body.stream === true) return streamOpenAi(jobs, request, reply, endpoint, submit);
      const view = await jobs.client.runSync(endpoint.id, endpoint.accountId, submit, {
        defaultExecutionTimeoutMs: endpoint.executionTimeoutMs,
        waitMs: waitOf(request, RUNSYNC_WAIT),
        signal: clientGone(reply),
      });
      switch (view.status) {
        case 'COMPLETED':
          // A streaming handler's aggregate of one chunk is the response itself.
          return Array.isArray(view.output) && view.output.length === 1
            ? (view.output[0] as unknown)
            : (view.output ?? null);
        case 'FAILED':
        case 'TIMED_OUT':
        case 'CANCELLED':
          throw new ApiError(
            'JOB_FAILED',
            `Job ${view.id} ended ${view.status}${view.error ? `: ${view.error}` : ''}.`,
          );
        case 'IN_QUEUE':
        case 'IN_PROGRESS':
          throw new ApiError(
            'JOB_NOT_FINISHED',
            `Job ${view.id} is still ${view.status}; poll GET /v2/${endpoint.id}/status/${view.id} for its result.`,
          );
        default:
          return ((s: never) => s)(view.status);
      }
    },
  });
}

/** `stream: true` OpenAI requests: the job's chunks as server-sent events, then `[DONE]`. */
async function streamOpenAi(
  jobs: TransportServices['jobs'],
  request: FastifyRequest,
  reply: FastifyReply,
  endpoint: Endpoint,
  submit: SubmitBody,
): Promise<void> {
  const { id } = await jobs.client.submit(endpoint.id, endpoint.accountId, submit, {
    defaultExecutionTimeoutMs: endpoint.executionTimeoutMs,
  });
  const gone = clientGone(reply);
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-request-id': request.id,
  });
  let sawDone = false;
  const write = (chunk: unknown): void => {
    for (const item of Array.isArray(chunk) ? chunk : [chunk]) {
      const text =
        typeof item === 'string'
          ? item.startsWith('data:')
            ? item
            : `data: ${item}`
          : `data: ${JSON.stringify(item)}`;
      if (text.includes('[DONE]')) sawDone = true;
      raw.write(text.endsWith('\n\n') ? text : `${text.replace(/\n*$/, '')}\n\n`);
    }
  };
  try {
    for (;;) {
      const r = await jobs.client.stream(endpoint.accountId, endpoint.id, id, {
        waitMs: STREAM_WAIT.default,
        signal: gone,
      });
      for (const c of r.stream) write(c.output);
      if (gone.aborted) {
        await jobs.client.cancel(endpoint.accountId, endpoint.id, id).catch(() => undefined);
        return;
      }
      if (isTerminalJobStatus(r.status)) {
        if (r.status !== 'COMPLETED') {
          const view = await jobs.client.status(endpoint.accountId, endpoint.id, id).catch(() => null);
          raw.write(
            `data: ${JSON.stringify({ error: { message: `job ${id} ended ${r.status}${view?.error ? `: ${view.error}` : ''}`, type: r.status } })}\n\n`,
          );
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
