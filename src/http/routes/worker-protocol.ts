import type { FastifyReply } from 'fastify';
import { Type } from '@sinclair/typebox';
import { isObject, typed, type TypedApp, type TypedRequest } from '../type-provider.js';
import { ApiError } from '../../domain/errors.js';
import { takeReportTrusted } from '../../domain/held-report.js';
import type { WorkerPostOutcome } from '../../jobs/worker-post.js';
import type { Endpoint } from '../../domain/endpoint.js';
import type { TransportServices } from '../../transport/services.js';
import { principalOf } from '../plugins/auth.js';
import { deferredRefusal, WorkerRateLimiter, workerRateLimitHook } from '../plugins/worker-rate-limit.js';
import { clientGone } from '../client-gone.js';
import { useLenientJson } from '../lenient-json.js';
import { EndpointLookup } from './endpoint-lookup.js';
import { RUNSYNC_BODY_LIMIT } from './job-body.js';

const WORKER_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Jobs one batch take may hand out. */
const MAX_BATCH = 1000;

/** The router's parameters, as text (never refused by the schema; `workerIdOf` checks the worker id). */
const WorkerParams = Type.Object({
  endpointId: Type.String(),
  workerId: Type.String(),
  jobId: Type.Optional(Type.String()),
});
type WorkerRequest = TypedRequest<{ params: typeof WorkerParams }>;

/**
 * The query parameters: no schema, workers send what they send. A value is text, a list when the
 * parameter is repeated.
 */
const queryOf = (request: WorkerRequest): Record<string, unknown> => (isObject(request.query) ? request.query : {});

function workerIdOf(request: WorkerRequest): string {
  const { workerId } = request.params;
  if (!WORKER_ID.test(workerId)) {
    const hint = workerId.includes('$')
      ? ' It looks like an unreplaced placeholder: set RUNPOD_POD_ID for the worker.'
      : '';
    throw new ApiError(
      'INVALID_PARAMETER',
      `Invalid worker id "${workerId.slice(0, 64)}": use 1-128 letters, digits, ".", "_" or "-".${hint}`,
    );
  }
  return workerId;
}

/**
 * The jobs a ping says its worker holds, or null when it says nothing of them. The Python SDK
 * sends `job_id=<ids, comma-separated>` with `runpod_version`, and leaves `job_id` out when it
 * holds none, so `runpod_version` alone is an empty list; a bare ping is a sign of life only. A
 * repeated `job_id` is no list a worker sends: it says nothing.
 */
function pingedJobsOf(query: Record<string, unknown>): string[] | null {
  const ids = query.job_id;
  if (typeof ids === 'string')
    return ids
      .split(',')
      .map((id) => id.trim())
      .filter((id) => id !== '');
  return ids === undefined && query.runpod_version !== undefined ? [] : null;
}

function jobIdOf(request: WorkerRequest): string {
  const jobId = request.params.jobId ?? queryOf(request).id;
  if (typeof jobId !== 'string' || !jobId)
    throw new ApiError(
      'INVALID_PARAMETER',
      'The job id is missing: post to …/job-done/<worker>/<job id> (or pass ?id=<job id>).',
    );
  return jobId;
}

/**
 * The worker protocol (wire-protocol §1): job-take (long-poll), job-take-batch, job-stop
 * (long-poll), job-done, job-stream and ping. Workers send the raw key; its account must own the
 * endpoint (a launched worker's own key is bound to the endpoint and its worker id). A worker is
 * (endpoint, worker id): calls through another endpoint never touch it. Calls are limited per
 * worker and per endpoint (`jobs.workerRateLimits`). Result posts are idempotent: a late, repeated or superseded post answers 200 and
 * changes nothing. A take with `job_in_progress=0` and a ping's `job_id` list are the worker's word
 * on the jobs it holds: what they show it no longer holds goes back to the queue (held-report.ts).
 * Not in the OpenAPI document: workers, not people, call these.
 */
export function workerProtocolRoutes(app: TypedApp, services: TransportServices): void {
  const { jobs, workers, config } = services;
  const endpoints = new EndpointLookup(services.endpoints);
  const limiter = new WorkerRateLimiter({
    clock: services.clock,
    ...config.jobs.workerRateLimits,
    liveWorkers: (endpointId) => workers.liveWorkers(endpointId),
  });
  // No automatic HEAD twins: a HEAD on job-take or job-stop would consume jobs or stop notices.
  // Logged at warn (or quieter, if the server is): a line per ping (Fastify's request lines are
  // info) would let workers flood the log.
  const logLevel =
    (['error', 'fatal', 'silent'] as const).find((l) => l === config.server.logLevel) ?? ('warn' as const);
  const opts = {
    config: { ownRateLimits: true, jobApi: true, workerProtocol: true, scope: 'write' as const },
    schema: { hide: true, params: WorkerParams },
    exposeHeadRoute: false,
    logLevel,
    onRequest: workerRateLimitHook(limiter),
  };
  const endpointOf = (request: WorkerRequest): Promise<Endpoint> =>
    endpoints.get(principalOf(request).accountId, request.params.endpointId);

  /** A worker's long-poll; an open one keeps the worker alive for the heartbeat check. */
  async function longPoll<T>(
    endpoint: Endpoint,
    workerId: string,
    busy: boolean | undefined,
    wait: () => Promise<T>,
  ): Promise<T> {
    await workers.seen(endpoint.id, workerId, busy);
    const closed = workers.pollOpened(endpoint.id, workerId);
    try {
      return await wait();
    } finally {
      closed();
    }
  }

  const take = (batch: boolean) => async (request: WorkerRequest, reply: FastifyReply) => {
    const endpoint = await endpointOf(request);
    const workerId = workerIdOf(request);
    const query = queryOf(request);
    const requested = Number(query.batch_size ?? 1);
    const batchSize = batch
      ? Math.min(MAX_BATCH, Math.max(1, Number.isFinite(requested) ? Math.floor(requested) : 1))
      : 1;
    // job_in_progress: a hint for /health, and with 0 the worker's word that it holds no job:
    // what the store says it holds from earlier takes goes back to the queue (held-report.ts).
    const busy =
      query.job_in_progress === undefined
        ? undefined
        : query.job_in_progress === '1' || query.job_in_progress === 'true';
    const holdsNone =
      (query.job_in_progress === '0' || query.job_in_progress === 'false') &&
      takeReportTrusted(request.headers['user-agent']);
    // A worker being suspended (FlashBoot) is handed nothing: its take answers empty at once, and
    // one it holds open ends when the suspension begins (suspend-gate.ts).
    if (workers.gate.isClosed(endpoint.id, workerId)) {
      await workers.seen(endpoint.id, workerId, busy);
      return reply.code(204).send();
    }
    const signal = workers.gate.takeSignal(endpoint.id, workerId, clientGone(reply));
    const taken = await longPoll(endpoint, workerId, busy, () =>
      jobs.worker.take(endpoint.id, workerId, {
        batchSize,
        waitMs: config.jobs.takeWaitMs,
        signal,
        holdsNone,
      }),
    ).finally(() => signal.done());
    if (taken.length === 0) return reply.code(204).send();
    await workers.seen(endpoint.id, workerId, true);
    return batch ? taken : taken[0];
  };
  void app.register(async (plain) => {
    useLenientJson(plain);
    const scope = typed(plain); // a plugin's instance does not keep the provider's types

    scope.get('/v2/:endpointId/job-take/:workerId', opts, take(false));
    scope.get('/v2/:endpointId/job-take-batch/:workerId', opts, take(true));

    scope.get('/v2/:endpointId/job-stop/:workerId', opts, async (request, reply) => {
      const endpoint = await endpointOf(request);
      const workerId = workerIdOf(request);
      const ids = await longPoll(endpoint, workerId, undefined, () =>
        jobs.worker.stopRequests(endpoint.id, workerId, { waitMs: config.jobs.stopWaitMs, signal: clientGone(reply) }),
      );
      if (ids.length === 0) return reply.code(204).send();
      return { jobsToStop: ids };
    });

    const answer = (jobId: string, outcome: WorkerPostOutcome) => {
      switch (outcome.outcome) {
        case 'applied':
          return { id: jobId, status: outcome.status, accepted: true };
        case 'ignored':
          return { id: jobId, status: outcome.status, accepted: false, reason: outcome.reason };
        case 'refused':
          // The job was requeued or is held by another worker: this post is superseded.
          return { id: jobId, status: outcome.refusal.status, accepted: false, reason: outcome.refusal.reason };
        case 'not-found':
          throw new ApiError('NOT_FOUND', `No job with id "${jobId}" exists (it may have expired).`);
        default:
          return ((o: never) => o)(outcome);
      }
    };

    const done = async (request: WorkerRequest) => {
      const endpoint = await endpointOf(request);
      const workerId = workerIdOf(request);
      const jobId = jobIdOf(request);
      // Over the limits, only a result finishing a job this worker holds goes through: the SDK
      // drops a result after three refused tries, and the job would sit running until its
      // execution timeout. Such results are bounded by the takes, which stay limited.
      const refused = deferredRefusal(request);
      if (refused && !(await jobs.worker.finishesHeldJob(workerId, jobId, request.body ?? {}, endpoint.id)))
        throw refused;
      await workers.seen(endpoint.id, workerId);
      const outcome = await jobs.worker.complete(workerId, jobId, request.body ?? {}, endpoint.id, endpoint.accountId);
      if (outcome.stopPod && outcome.outcome !== 'not-found') workers.requestRecycle(endpoint.id, workerId);
      return answer(jobId, outcome);
    };
    const doneOpts = {
      ...opts,
      bodyLimit: RUNSYNC_BODY_LIMIT,
      onRequest: workerRateLimitHook(limiter, { deferred: true }),
    };
    scope.post('/v2/:endpointId/job-done/:workerId/:jobId', doneOpts, done);
    scope.post('/v2/:endpointId/job-done/:workerId', doneOpts, done);

    const stream = async (request: WorkerRequest) => {
      const endpoint = await endpointOf(request);
      const workerId = workerIdOf(request);
      const jobId = jobIdOf(request);
      await workers.seen(endpoint.id, workerId, true);
      return answer(jobId, await jobs.worker.appendStream(workerId, jobId, request.body ?? null, endpoint.id));
    };
    scope.post('/v2/:endpointId/job-stream/:workerId/:jobId', { ...opts, bodyLimit: RUNSYNC_BODY_LIMIT }, stream);
    scope.post('/v2/:endpointId/job-stream/:workerId', { ...opts, bodyLimit: RUNSYNC_BODY_LIMIT }, stream);

    scope.get('/v2/:endpointId/ping/:workerId', opts, async (request) => {
      const endpoint = await endpointOf(request);
      const workerId = workerIdOf(request);
      const query = queryOf(request);
      if (query.status === 'unhealthy') {
        // The worker failed its own checks and exits next: its jobs will never finish here.
        const news = await workers.unhealthy(endpoint.id, workerId);
        const moved = await jobs.worker.workerLost(workerId, endpoint.id);
        // once per worker: a repeated report must not become a line per ping
        if (news)
          request.log.warn(
            { workerId, endpointId: endpoint.id, check: query.check, reason: query.reason, ...moved },
            'worker reported itself unhealthy',
          );
        return { status: 'unhealthy' };
      }
      const listed = pingedJobsOf(query);
      await workers.seen(endpoint.id, workerId, (listed?.length ?? 0) > 0);
      if (listed) await jobs.worker.pinged(endpoint.id, workerId, listed);
      return { status: 'ok' };
    });
  });
}
