import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { TypedApp } from '../type-provider.js';
import {
  OperationTypeNode,
  execute,
  getOperationAST,
  GraphQLError,
  parse,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
} from 'graphql';
import type { Principal } from '../../accounts/accounts-service.js';
import type { GraphqlLimits } from '../../transport/services.js';
import { ApiError, isApiError, type ErrorCode } from '../../domain/errors.js';
import { anonymousCaller } from '../plugins/auth.js';
import { anonymousRefusal, CATALOG_ROOT_FIELDS } from '../../graphql/anonymous-catalog.js';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../json-depth.js';
import { isObject } from '../type-provider.js';
import type { RestRateLimiter } from '../plugins/rate-limit.js';
import type { TransportServices } from '../../transport/services.js';
import type { GraphqlContext } from '../../graphql/context.js';
import { documentRefusal, textRefusal } from '../../graphql/document-limits.js';
import { redactSecrets, secretFormsOf } from '../../graphql/redact-secrets.js';
import { allResolvers } from '../../graphql/resolvers.js';
import { createSchema } from '../../graphql/schema.js';
import { nulArgument, nulVariable } from '../../graphql/nul-arguments.js';
import { unsupportedOperation } from '../../graphql/unsupported-operations.js';

/** One entry of a GraphQL answer's `errors`; `extensions.code` is a code of docs/errors.md. */
interface GraphqlErrorEntry {
  message: string;
  locations?: ReadonlyArray<{ line: number; column: number }>;
  path?: ReadonlyArray<string | number>;
  extensions: { code: string; status?: number; errors?: string[] };
}

interface GraphqlAnswer {
  data?: Record<string, unknown> | null;
  errors?: GraphqlErrorEntry[];
}

interface GraphqlRequest {
  query: unknown;
  variables: unknown;
  operationName: unknown;
}

/** Maps an error graphql-js reports to the answer's shape: ApiErrors keep their detail and code. */
function toEntry(err: GraphQLError, fallback: ErrorCode, log: FastifyBaseLogger, requestId: string): GraphqlErrorEntry {
  const where = { ...(err.locations ? { locations: err.locations } : {}), ...(err.path ? { path: err.path } : {}) };
  const original = err.originalError;
  if (isApiError(original))
    return {
      message: original.detail,
      ...where,
      extensions: {
        code: original.code,
        status: original.status,
        ...(original.errors ? { errors: original.errors } : {}),
      },
    };
  if (original && !(original instanceof GraphQLError)) {
    log.error({ err: original }, 'unhandled error in a GraphQL resolver');
    return {
      message: `An unexpected error occurred; quote request id ${requestId} when reporting it.`,
      ...where,
      extensions: { code: 'INTERNAL' },
    };
  }
  const code = typeof err.extensions?.code === 'string' ? err.extensions.code : fallback;
  return { message: err.message, ...where, extensions: { code } };
}

/**
 * A syntax error names the token it stopped at — `Expected ":", found String "hunter2".` — and a
 * document that fails to parse cannot tell which field a string belongs to: the string's text is
 * left out (its location is in `locations`).
 */
const withoutStringToken = (message: string): string =>
  message.replace(/((?:found|Unexpected) (?:String|BlockString)) "[\s\S]*"\.$/, '$1.');

/** Who asks the catalog without a key: no account (no account's id is empty); the catalog's resolvers read none. */
const NO_ACCOUNT: Principal = { accountId: '', keyId: '', scope: 'read', rateLimitExempt: false };

const TOO_DEEP = 'The GraphQL document is nested too deeply to parse.';

const failure = (message: string, code: ErrorCode): GraphqlAnswer => ({ errors: [{ message, extensions: { code } }] });

/** `variables` as an object: JSON clients send an object or null; GET and some clients send JSON text. */
function variablesOf(raw: unknown): Record<string, unknown> | null | 'invalid' {
  if (raw === undefined || raw === null || raw === '') return null;
  if (typeof raw === 'string') {
    try {
      return variablesOf(JSON.parse(raw));
    } catch {
      return 'invalid';
    }
  }
  return typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : 'invalid';
}

/** What runGraphql needs besides the request: the document bounds and the caller's rate-limit charge. */
interface GraphqlRunOptions {
  method: 'GET' | 'POST';
  log: FastifyBaseLogger;
  requestId: string;
  limits: GraphqlLimits;
  /**
   * Charges the operation's root fields beyond the one the request itself was charged, before it
   * runs; throws a 429 ApiError (and charges nothing) when they do not fit the key's windows.
   */
  chargeRootFields?: (extra: number) => void;
}

/**
 * Parses, validates and runs one GraphQL request for a caller. Answers never throw — failures are
 * `errors` entries — but for a rate-limit refusal, which is the HTTP 429 every route answers, and a
 * caller without a key (`principal` null) asking more than the catalog: the 401 of every route.
 * The document's bounds are checked on its text before parsing and on its AST before validation:
 * both checks are linear in the document, while validating or running an unbounded one is not.
 */
async function runGraphql(
  schema: GraphQLSchema,
  services: TransportServices,
  principal: Principal | null,
  request: GraphqlRequest,
  options: GraphqlRunOptions,
): Promise<GraphqlAnswer> {
  if (typeof request.query !== 'string' || request.query.trim() === '')
    return failure(
      'Send the GraphQL document as "query" (a string), e.g. {"query": "{ myself { id } }"}.',
      'BAD_REQUEST',
    );
  const tooLarge = textRefusal(request.query, options.limits);
  if (tooLarge) return failure(tooLarge, 'QUERY_TOO_COMPLEX');
  const variables = variablesOf(request.variables);
  if (variables === 'invalid') return failure('"variables" must be a JSON object.', 'BAD_REQUEST');
  if (exceedsJsonDepth(variables))
    return failure(`"variables" nest more than ${MAX_JSON_DEPTH} levels deep.`, 'BAD_REQUEST');
  const variableWithNul = nulVariable(variables);
  if (variableWithNul) return failure(variableWithNul, 'VALIDATION_FAILED');
  const operationName =
    typeof request.operationName === 'string' && request.operationName !== '' ? request.operationName : undefined;

  let document: DocumentNode;
  try {
    document = parse(request.query);
  } catch (err) {
    if (err instanceof GraphQLError)
      return {
        errors: [
          { ...toEntry(err, 'BAD_REQUEST', options.log, options.requestId), message: withoutStringToken(err.message) },
        ],
      };
    // A backstop: textRefusal bounds the nesting the recursive parser sees.
    if (err instanceof RangeError) return failure(TOO_DEEP, 'BAD_REQUEST');
    throw err;
  }
  const argumentWithNul = nulArgument(document);
  if (argumentWithNul) return failure(argumentWithNul, 'VALIDATION_FAILED');
  const unsupported = unsupportedOperation(document, operationName);
  if (unsupported) return failure(unsupported, 'BAD_REQUEST');
  const secrets = secretFormsOf(document, variables);
  const clean = (answer: GraphqlAnswer): GraphqlAnswer =>
    answer.errors
      ? { ...answer, errors: answer.errors.map((e) => ({ ...e, message: redactSecrets(e.message, secrets) })) }
      : answer;

  const bounded = documentRefusal(document, schema, options.limits);
  if ('refusal' in bounded) return failure(bounded.refusal, 'QUERY_TOO_COMPLEX');
  if (principal === null) {
    const refusal = anonymousRefusal(document, operationName);
    if (refusal)
      throw new ApiError(
        'UNAUTHORIZED',
        `An API key is required: send "Authorization: Bearer <key>" (${refusal}). Without one, only the catalog may be queried: ${[...CATALOG_ROOT_FIELDS].filter((f) => !f.startsWith('__')).join(', ')}.`,
        { headers: { 'WWW-Authenticate': 'Bearer' } },
      );
  }

  let invalid: readonly GraphQLError[];
  try {
    // No "Did you mean …?": suggestions would spell out the schema to anyone probing it.
    invalid = validate(schema, document, undefined, { hideSuggestions: true });
  } catch (err) {
    if (err instanceof RangeError) return failure(TOO_DEEP, 'BAD_REQUEST');
    throw err;
  }
  if (invalid.length > 0)
    return clean({ errors: invalid.map((e) => toEntry(e, 'VALIDATION_FAILED', options.log, options.requestId)) });

  const operation = getOperationAST(document, operationName);
  if (operation?.operation === OperationTypeNode.MUTATION) {
    if (options.method === 'GET')
      return failure('Mutations must be sent with POST; GET /graphql runs queries only.', 'METHOD_NOT_ALLOWED');
    if (principal?.scope !== 'write')
      return failure(`This API key has the "${principal?.scope}" scope; mutations need a "write" key.`, 'FORBIDDEN');
  }
  if (operation?.operation === OperationTypeNode.SUBSCRIPTION)
    return failure('Subscriptions are not supported.', 'BAD_REQUEST');

  // Each root field is a request against the key's rate limits: the request itself counted one.
  const executed = bounded.measure.operations.find((m) => m.node === operation);
  if (executed && executed.topFields > 1) options.chargeRootFields?.(executed.topFields - 1);

  const contextValue: GraphqlContext = { services, principal: principal ?? NO_ACCOUNT };
  const result: ExecutionResult = await execute({
    schema,
    document,
    variableValues: variables,
    operationName,
    contextValue,
    hideSuggestions: true,
  });
  const answer: GraphqlAnswer = { data: result.data ?? null };
  if (result.errors && result.errors.length > 0)
    answer.errors = result.errors.map((e) => toEntry(e, 'VALIDATION_FAILED', options.log, options.requestId));
  return clean(answer);
}

const description =
  'The GraphQL management API (saveEndpoint, myself, saveTemplate, gpuTypes, pods, registry credentials). ' +
  'Send {"query", "variables"?, "operationName"?}. The key may also be passed as ?api_key=. Errors answer HTTP 200 ' +
  'with errors[].message and errors[].extensions.code; a bad key answers 401, and so does a missing one unless the query ' +
  'reads only the catalog (gpuTypes, dataCenters, countryCodes, cpuFlavors, serverlessGpuPools; graphql.anonymousCatalog). Mutations need a write key. ' +
  'A document over a bound (size, depth, aliases, fields, root fields, cost) is refused with QUERY_TOO_COMPLEX before it runs; ' +
  'each root field counts as one request against the rate limits (429 when they do not all fit). Batches (JSON arrays) are not accepted.';

/** Where GraphQL counts against the REST rate limits: the limiters the auth hook charges (per key; per client address without one). */
export function graphqlRoutes(
  app: TypedApp,
  services: TransportServices,
  limiters: { keys: RestRateLimiter; anonymous: RestRateLimiter },
): void {
  const schema = createSchema(allResolvers());
  const config = { scope: 'read', queryKey: true, anonymous: services.config.graphql.anonymousCatalog } as const;
  const tags = ['graphql'];
  const optionsFor = (request: FastifyRequest, reply: FastifyReply, method: 'GET' | 'POST'): GraphqlRunOptions => {
    const principal = request.principal;
    const charge = principal
      ? (extra: number) => void reply.headers(limiters.keys.charge(principal.keyId, extra, 1))
      : (extra: number) => void reply.headers(limiters.anonymous.charge(anonymousCaller(request), extra, 1));
    return {
      method,
      log: request.log,
      requestId: request.id,
      limits: services.config.graphql,
      ...(principal?.rateLimitExempt ? {} : { chargeRootFields: charge }),
    };
  };

  app.post(
    '/graphql',
    { config, schema: { tags, summary: 'Run a GraphQL query or mutation', description } },
    async (request, reply) => {
      const body = request.body ?? {};
      if (Array.isArray(body))
        return failure(
          'Batched requests (a JSON array of operations) are not supported; send one {"query": …} per request.',
          'BAD_REQUEST',
        );
      // no body schema: GraphQL answers a malformed request in its own shape
      const input: GraphqlRequest = isObject(body)
        ? { query: body.query, variables: body.variables, operationName: body.operationName }
        : { query: undefined, variables: undefined, operationName: undefined };
      return runGraphql(schema, services, request.principal, input, optionsFor(request, reply, 'POST'));
    },
  );

  app.get(
    '/graphql',
    { config, schema: { tags, summary: 'Run a GraphQL query (no mutations)', description } },
    async (request, reply) => {
      const q = isObject(request.query) ? request.query : {};
      return runGraphql(
        schema,
        services,
        request.principal,
        { query: q.query, variables: q.variables, operationName: q.operationName },
        optionsFor(request, reply, 'GET'),
      );
    },
  );
}
