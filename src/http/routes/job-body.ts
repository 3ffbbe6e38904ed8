/** What the client job routes share: body limits, their parameters' schemas, a job body's shape, the `wait` parameter. */
import type { FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { isObject } from '../type-provider.js';
import { ApiError } from '../../domain/errors.js';
import { normalizeWait, type WaitBounds } from '../../domain/job-policy.js';
import type { SubmitBody } from '../../jobs/client-jobs.js';

const MB = 1024 * 1024;
/** wire-protocol §2: 10 MB for /run, 20 MB for /runsync. */
export const RUN_BODY_LIMIT = 10 * MB;
export const RUNSYNC_BODY_LIMIT = 20 * MB;

export const EndpointParams = Type.Object({ endpointId: Type.String({ minLength: 1 }) });
/**
 * A request of any route under `/v2/:endpointId/…`: a structural type, so every route whose
 * parameters include `endpointId` fits (a `TypedRequest` fits only its own schema's routes).
 */
export type EndpointRequest = FastifyRequest & { params: Static<typeof EndpointParams> };
export const JobParams = Type.Object({
  endpointId: Type.String({ minLength: 1 }),
  jobId: Type.String({ minLength: 1 }),
});
export const WaitQuery = Type.Object({ wait: Type.Optional(Type.Number({ description: 'milliseconds to wait' })) });

/** The `wait` query parameter: numeric where the route declares `WaitQuery`, raw text where it declares no query schema. */
export function waitOf(request: { query: unknown }, bounds: WaitBounds): number {
  const { query } = request;
  const wait = normalizeWait(isObject(query) ? query.wait : undefined, bounds);
  if (!wait.ok)
    throw new ApiError('INVALID_PARAMETER', `Invalid query parameter: ${wait.violations.join('; ')}.`, {
      errors: wait.violations,
    });
  return wait.value;
}

/** A `/run` or `/runsync` body (spec 2.12); the service checks the fields' values. */
export function jobBody(body: unknown): SubmitBody {
  if (body === undefined || body === null)
    throw new ApiError('INVALID_PARAMETER', 'The job request needs a JSON body: {"input": {...}}.', {
      errors: ['input is required'],
    });
  if (!isObject(body))
    throw new ApiError('INVALID_PARAMETER', 'The job request must be a JSON object: {"input": {...}}.', {
      errors: ['body must be an object'],
    });
  if (body.input !== undefined && !isObject(body.input))
    throw new ApiError('INVALID_PARAMETER', 'The job request is invalid: input must be a JSON object.', {
      errors: ['input must be a JSON object'],
    });
  return body;
}
