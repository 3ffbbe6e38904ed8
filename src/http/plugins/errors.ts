import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import type { ErrorObject } from 'ajv';
import { ApiError, validationFailed } from '../../domain/errors.js';

/** Renders one Ajv violation as `field: message`, naming the field the way the client wrote it. */
export function describeViolation(e: ErrorObject, root = 'body'): string {
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  const at = (extra?: string): string => [path, extra].filter(Boolean).join('.') || root;
  switch (e.keyword) {
    case 'additionalProperties':
      return `${at(String(e.params.additionalProperty))}: unknown property`;
    case 'required':
      return `${at(String(e.params.missingProperty))}: is required`;
    case 'type':
      return `${at()}: must be ${e.params.type === 'integer' ? 'an integer' : `of type ${String(e.params.type)}`}`;
    case 'enum':
      return `${at()}: must be one of ${(e.params.allowedValues as unknown[]).map(String).join(', ')}`;
    default:
      return `${at()}: ${e.message ?? 'is invalid'}`;
  }
}

function send(reply: FastifyReply, err: ApiError): void {
  if (err.headers) void reply.headers(err.headers);
  void reply.code(err.status).type('application/problem+json').send(err.toProblem());
}

/** Where JSON parsing stopped, without quoting the body back (it may hold a password). */
function jsonProblem(message: string): ApiError {
  const at = /position (\d+)/.exec(message)?.[1];
  const where = at
    ? ` (parsing stopped at character ${at})`
    : message.includes('Unexpected end')
      ? ' (it ends too early)'
      : '';
  return new ApiError('MALFORMED_JSON', `The request body is not valid JSON${where}.`);
}

/** Errors Fastify raises before routing (bad URL encoding, over-long path parameters). */
export function frameworkErrors(error: FastifyError, _request: unknown, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH')
    return send(
      reply,
      new ApiError('URI_TOO_LONG', 'A path parameter is longer than 256 characters; no resource has such an id.'),
    );
  if (error.code === 'FST_ERR_BAD_URL')
    return send(reply, new ApiError('BAD_REQUEST', 'The request URL is not valid percent-encoding.'));
  return send(reply, new ApiError('BAD_REQUEST', error.message));
}

/** Maps every failure — ours, Fastify's, or unexpected — to application/problem+json. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(
    (error: FastifyError & { validation?: ErrorObject[]; validationContext?: string }, request, reply) => {
      if (error instanceof ApiError) return send(reply, error);
      if (error.validation) {
        const context = error.validationContext ?? 'body';
        const messages = error.validation.map((v) => describeViolation(v, context));
        if (context === 'body') return send(reply, validationFailed(messages));
        return send(
          reply,
          new ApiError(
            'INVALID_PARAMETER',
            `Invalid ${context === 'querystring' ? 'query parameter' : 'path parameter'}: ${messages.join('; ')}`,
            { errors: messages },
          ),
        );
      }
      switch (error.code) {
        case 'FST_ERR_CTP_INVALID_JSON_BODY':
        case 'FST_ERR_CTP_EMPTY_JSON_BODY':
          return send(reply, jsonProblem(error.message));
        case 'FST_ERR_CTP_BODY_TOO_LARGE':
          return send(
            reply,
            new ApiError(
              'PAYLOAD_TOO_LARGE',
              `The request body is larger than the ${request.routeOptions.bodyLimit ?? 'configured'} bytes this route accepts.`,
            ),
          );
        case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
          return send(
            reply,
            new ApiError(
              'UNSUPPORTED_MEDIA_TYPE',
              `Send the body as application/json (got ${String(request.headers['content-type'] ?? 'no content type')}).`,
            ),
          );
        case 'FST_ERR_CTP_INVALID_TYPE':
          return send(reply, new ApiError('UNSUPPORTED_MEDIA_TYPE', 'The Content-Type header is malformed.'));
      }
      if (error instanceof SyntaxError) return send(reply, jsonProblem(error.message));
      const status = error.statusCode ?? 500;
      if (status >= 400 && status < 500) {
        return send(
          reply,
          new ApiError(
            status === 404
              ? 'ROUTE_NOT_FOUND'
              : status === 413
                ? 'PAYLOAD_TOO_LARGE'
                : status === 415
                  ? 'UNSUPPORTED_MEDIA_TYPE'
                  : 'BAD_REQUEST',
            error.message,
          ),
        );
      }
      request.log.error({ err: error }, 'unhandled error');
      return send(
        reply,
        new ApiError('INTERNAL', `An unexpected error occurred; quote request id ${request.id} when reporting it.`),
      );
    },
  );

  app.setNotFoundHandler((request, reply) => {
    send(
      reply,
      new ApiError(
        'ROUTE_NOT_FOUND',
        `No route ${request.method} ${request.url.split('?')[0]}. See /docs for the API.`,
      ),
    );
  });
}
