/**
 * The one catalogue of API errors. Every error an HTTP route or GraphQL resolver can answer is
 * defined here once: a stable code, its HTTP status and title, and how its `detail` is written.
 * `docs/errors.md` lists every code; a test fails when the two drift apart.
 */

export interface ErrorDefinition {
  readonly status: number;
  readonly title: string;
}

export const errorCatalogue = {
  // 400 — malformed requests and cross-field rules
  MALFORMED_JSON: { status: 400, title: 'Bad Request' },
  BAD_REQUEST: { status: 400, title: 'Bad Request' },
  INVALID_PARAMETER: { status: 400, title: 'Bad Request' },
  GPU_OR_CPU_REQUIRED: { status: 400, title: 'Bad Request' },
  CUDA_CONSTRAINT_CONFLICT: { status: 400, title: 'Bad Request' },
  CUDA_CONSTRAINT_ON_CPU: { status: 400, title: 'Bad Request' },
  MOUNT_CONFLICT: { status: 400, title: 'Bad Request' },
  MOUNT_RULE: { status: 400, title: 'Bad Request' },
  GLOBAL_NETWORKING_FIXED: { status: 400, title: 'Bad Request' },
  NO_CAPACITY: { status: 400, title: 'Bad Request' },
  HOST_FULL: { status: 400, title: 'Bad Request' },
  BID_TOO_LOW: { status: 400, title: 'Bad Request' },
  TEMPLATE_IN_USE: { status: 400, title: 'Bad Request' },
  VOLUME_IN_USE: { status: 400, title: 'Bad Request' },
  REGISTRY_IN_USE: { status: 400, title: 'Bad Request' },
  UNKNOWN_REFERENCE: { status: 400, title: 'Bad Request' },
  NOT_SERVERLESS_TEMPLATE: { status: 400, title: 'Bad Request' },
  ENDPOINT_HAS_WORKERS: { status: 400, title: 'Bad Request' },
  ENV_NOT_ALLOWED: { status: 400, title: 'Bad Request' },
  WEBHOOK_NOT_ALLOWED: { status: 400, title: 'Bad Request' },
  IMAGE_NOT_ALLOWED: { status: 400, title: 'Bad Request' },
  ENTRYPOINT_NOT_SUPPORTED: { status: 400, title: 'Bad Request' },
  QUERY_TOO_COMPLEX: { status: 400, title: 'Bad Request' },
  RESOURCE_QUOTA_EXCEEDED: { status: 400, title: 'Bad Request' },
  CAPACITY_INVALID: { status: 400, title: 'Bad Request' },
  // 401 / 403
  UNAUTHORIZED: { status: 401, title: 'Unauthorized' },
  JOIN_TOKEN_INVALID: { status: 401, title: 'Unauthorized' },
  HOST_REVOKED: { status: 401, title: 'Unauthorized' },
  FORBIDDEN: { status: 403, title: 'Forbidden' },
  // 404
  NOT_FOUND: { status: 404, title: 'Not Found' },
  ROUTE_NOT_FOUND: { status: 404, title: 'Not Found' },
  // 405/408/409/413/415/431
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method Not Allowed' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request Timeout' },
  INVALID_STATE: { status: 409, title: 'Conflict' },
  POD_LOCKED: { status: 409, title: 'Conflict' },
  HOST_UNAVAILABLE: { status: 409, title: 'Conflict' },
  AGENT_VERSION_UNSUPPORTED: { status: 409, title: 'Conflict' },
  CONFLICT: { status: 409, title: 'Conflict' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload Too Large' },
  URI_TOO_LONG: { status: 414, title: 'URI Too Long' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported Media Type' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request Header Fields Too Large' },
  // 422
  VALIDATION_FAILED: { status: 422, title: 'Unprocessable Entity' },
  SERVERLESS_TEMPLATE: { status: 422, title: 'Unprocessable Entity' },
  // 429
  RATE_LIMITED: { status: 429, title: 'Too Many Requests' },
  QUOTA_EXCEEDED: { status: 429, title: 'Too Many Requests' },
  TOO_MANY_CONNECTIONS: { status: 429, title: 'Too Many Requests' },
  TOO_MANY_LOG_STREAMS: { status: 429, title: 'Too Many Requests' },
  // 5xx
  INTERNAL: { status: 500, title: 'Internal Server Error' },
  JOB_FAILED: { status: 500, title: 'Internal Server Error' },
  UPSTREAM_UNAVAILABLE: { status: 502, title: 'Bad Gateway' },
  UNAVAILABLE: { status: 503, title: 'Service Unavailable' },
  RUNTIME_UNAVAILABLE: { status: 503, title: 'Service Unavailable' },
  NO_WORKER_READY: { status: 503, title: 'Service Unavailable' },
  JOB_NOT_FINISHED: { status: 504, title: 'Gateway Timeout' },
  UPSTREAM_TIMEOUT: { status: 504, title: 'Gateway Timeout' },
} as const satisfies Record<string, ErrorDefinition>;

export type ErrorCode = keyof typeof errorCatalogue;

/** An error meant for the API caller; `detail` is a sentence the caller can act on. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly errors: string[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, detail: string, options: { errors?: string[]; headers?: Record<string, string> } = {}) {
    // An ApiError is an expected answer, not a fault: capturing a stack trace would cost more
    // than the rest of a refused request (fuzzers and bad keys make many).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(detail);
    Error.stackTraceLimit = limit;
    const def = errorCatalogue[code];
    this.name = 'ApiError';
    this.code = code;
    this.status = def.status;
    this.title = def.title;
    this.detail = detail;
    this.errors = options.errors;
    this.headers = options.headers;
  }

  toProblem(): Problem {
    const body: Problem = {
      type: 'about:blank',
      title: this.title,
      status: this.status,
      detail: this.detail,
      code: this.code,
    };
    if (this.errors) body.errors = this.errors;
    return body;
  }
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors?: string[];
}

export const isApiError = (err: unknown): err is ApiError => err instanceof ApiError;

/** Convenience constructors for the errors raised in many places. */
export const notFound = (kind: string, id: string): ApiError =>
  new ApiError('NOT_FOUND', `No ${kind} with id "${id}" exists for this account.`);

export const badRequest = (detail: string): ApiError => new ApiError('BAD_REQUEST', detail);

export const validationFailed = (errors: string[]): ApiError =>
  new ApiError('VALIDATION_FAILED', `The request failed validation: ${errors.join('; ')}`, { errors });
