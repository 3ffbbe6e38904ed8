import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { execute, getOperationAST, GraphQLError, Kind, parse, validate, visit, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import type { Principal } from '../accounts/accounts-service.js';
import { isApiError, type ErrorCode } from '../domain/errors.js';
import { principalOf } from '../http/plugins/auth.js';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../http/json-depth.js';
import type { Services } from '../services.js';
import type { GraphqlContext } from './context.js';
import { allResolvers } from './resolvers.js';
import { createSchema } from './schema.js';
import { nulArgument, nulVariable } from './nul-arguments.js';

/** One entry of a GraphQL answer's `errors`; `extensions.code` is a code of docs/errors.md. */
export interface GraphqlErrorEntry {
  message: string;
  locations?: ReadonlyArray<{ line: number; column: number }>;
  path?: ReadonlyArray<string | number>;
  extensions: { code: string; status?: number; errors?: string[] };
}

export interface GraphqlAnswer {
  data?: Record<string, unknown> | null;
  errors?: GraphqlErrorEntry[];
}

interface GraphqlRequest {
  query: unknown;
  variables: unknown;
  operationName: unknown;
}

const SECRET_FIELD = /password|secret|token/i;

/** Secret values a request carries (inline or in variables), to keep them out of error messages. */
function secretsOf(document: DocumentNode | null, variables: unknown): string[] {
  const found: string[] = [];
  const walk = (v: unknown, key = ''): void => {
    if (typeof v === 'string' && SECRET_FIELD.test(key) && v.length > 0) found.push(v);
    else if (Array.isArray(v)) v.forEach((x) => walk(x, key));
    else if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) walk(x, k);
  };
  walk(variables);
  if (document)
    visit(document, {
      ObjectField(node) {
        if (SECRET_FIELD.test(node.name.value) && node.value.kind === Kind.STRING && node.value.value.length > 0) found.push(node.value.value);
      },
    });
  return found;
}

const redact = (text: string, secrets: readonly string[]): string => secrets.reduce((t, s) => t.split(s).join('[redacted]'), text);

/** Maps an error graphql-js reports to the answer's shape: ApiErrors keep their detail and code. */
function toEntry(err: GraphQLError, fallback: ErrorCode, log: FastifyBaseLogger, requestId: string): GraphqlErrorEntry {
  const where = { ...(err.locations ? { locations: err.locations } : {}), ...(err.path ? { path: err.path } : {}) };
  const original = err.originalError;
  if (isApiError(original))
    return { message: original.detail, ...where, extensions: { code: original.code, status: original.status, ...(original.errors ? { errors: original.errors } : {}) } };
  if (original && !(original instanceof GraphQLError)) {
    log.error({ err: original }, 'unhandled error in a GraphQL resolver');
    return { message: `An unexpected error occurred; quote request id ${requestId} when reporting it.`, ...where, extensions: { code: 'INTERNAL' } };
  }
  const code = typeof err.extensions?.code === 'string' ? err.extensions.code : fallback;
  return { message: err.message, ...where, extensions: { code } };
}

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

/** Parses, validates and runs one GraphQL request for a caller. Answers never throw: failures are `errors` entries. */
export async function runGraphql(
  schema: GraphQLSchema,
  services: Services,
  principal: Principal,
  request: GraphqlRequest,
  options: { method: 'GET' | 'POST'; log: FastifyBaseLogger; requestId: string },
): Promise<GraphqlAnswer> {
  if (typeof request.query !== 'string' || request.query.trim() === '')
    return failure('Send the GraphQL document as "query" (a string), e.g. {"query": "{ myself { id } }"}.', 'BAD_REQUEST');
  const variables = variablesOf(request.variables);
  if (variables === 'invalid') return failure('"variables" must be a JSON object.', 'BAD_REQUEST');
  if (exceedsJsonDepth(variables)) return failure(`"variables" nest more than ${MAX_JSON_DEPTH} levels deep.`, 'BAD_REQUEST');
  const variableWithNul = nulVariable(variables);
  if (variableWithNul) return failure(variableWithNul, 'VALIDATION_FAILED');
  const operationName = typeof request.operationName === 'string' && request.operationName !== '' ? request.operationName : undefined;

  let document: DocumentNode;
  try {
    document = parse(request.query);
  } catch (err) {
    if (err instanceof GraphQLError) return { errors: [toEntry(err, 'BAD_REQUEST', options.log, options.requestId)] };
    // graphql-js parses recursively: a document nested a few thousand levels overflows the stack.
    if (err instanceof RangeError) return failure(TOO_DEEP, 'BAD_REQUEST');
    throw err;
  }
  const argumentWithNul = nulArgument(document);
  if (argumentWithNul) return failure(argumentWithNul, 'VALIDATION_FAILED');
  const secrets = secretsOf(document, variables);
  const clean = (answer: GraphqlAnswer): GraphqlAnswer =>
    answer.errors ? { ...answer, errors: answer.errors.map((e) => ({ ...e, message: redact(e.message, secrets) })) } : answer;

  let invalid: readonly GraphQLError[];
  try {
    invalid = validate(schema, document);
  } catch (err) {
    if (err instanceof RangeError) return failure(TOO_DEEP, 'BAD_REQUEST');
    throw err;
  }
  if (invalid.length > 0) return clean({ errors: invalid.map((e) => toEntry(e, 'VALIDATION_FAILED', options.log, options.requestId)) });

  const operation = getOperationAST(document, operationName);
  if (operation?.operation === 'mutation') {
    if (options.method === 'GET') return failure('Mutations must be sent with POST; GET /graphql runs queries only.', 'METHOD_NOT_ALLOWED');
    if (principal.scope !== 'write')
      return failure(`This API key has the "${principal.scope}" scope; mutations need a "write" key.`, 'FORBIDDEN');
  }
  if (operation?.operation === 'subscription') return failure('Subscriptions are not supported.', 'BAD_REQUEST');

  const contextValue: GraphqlContext = { services, principal };
  const result: ExecutionResult = await execute({ schema, document, variableValues: variables, operationName, contextValue });
  const answer: GraphqlAnswer = { data: (result.data as Record<string, unknown> | null | undefined) ?? null };
  if (result.errors && result.errors.length > 0) answer.errors = result.errors.map((e) => toEntry(e, 'VALIDATION_FAILED', options.log, options.requestId));
  return clean(answer);
}

const description =
  'The GraphQL management API (saveEndpoint, myself, saveTemplate, gpuTypes, pods, registry credentials). ' +
  'Send {"query", "variables"?, "operationName"?}. The key may also be passed as ?api_key=. Errors answer HTTP 200 ' +
  'with errors[].message and errors[].extensions.code; a missing or bad key answers 401. Mutations need a write key.';

export function graphqlRoutes(app: FastifyInstance, services: Services): void {
  const schema = createSchema(allResolvers());
  const config = { scope: 'read', queryKey: true } as const;
  const tags = ['graphql'];

  app.post('/graphql', { config, schema: { tags, summary: 'Run a GraphQL query or mutation', description } }, async (request) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const input: GraphqlRequest = typeof body === 'object' && !Array.isArray(body) ? { query: body.query, variables: body.variables, operationName: body.operationName } : { query: undefined, variables: undefined, operationName: undefined };
    return runGraphql(schema, services, principalOf(request), input, { method: 'POST', log: request.log, requestId: request.id });
  });

  app.get('/graphql', { config, schema: { tags, summary: 'Run a GraphQL query (no mutations)', description } }, async (request) => {
    const q = (request.query ?? {}) as Record<string, unknown>;
    return runGraphql(schema, services, principalOf(request), { query: q.query, variables: q.variables, operationName: q.operationName }, { method: 'GET', log: request.log, requestId: request.id });
  });
}
