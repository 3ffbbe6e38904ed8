import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';

/**
 * What an empty `application/json` body answers: nothing on a route that declares no body (the
 * request has none), and 400 naming the route on one that takes a body.
 */
export function emptyBodyProblem(request: FastifyRequest): ApiError | null {
  if (request.routeOptions.schema?.body === undefined) return null;
  return new ApiError(
    'MALFORMED_JSON',
    `The request body is empty; ${request.method} ${request.routeOptions.url ?? request.url} takes a JSON body.`,
  );
}
