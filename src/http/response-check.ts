/**
 * Test mode: every JSON answer checked against the response schema its route states for the
 * status, so that an answer drifting from what /v2/openapi.json and /v1/openapi.json publish
 * fails the suites that make it rather than reaching a client.
 *
 * The check runs on the bytes sent (after serialization: what fast-json-stringify drops or
 * coerces is seen as the client sees it). A mismatch is answered as a 500 problem naming the
 * route, the status and each violation, and reported to `onMismatch` (the test harness fails
 * the file with the list when it closes the app). Off unless `buildApp` is given
 * `checkResponses` (production never pays for it).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ApiError } from '../domain/errors.js';
import { describeViolation } from './plugins/errors.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export interface ResponseMismatch {
  /** `GET /v1/pods/:podId` */
  route: string;
  status: number;
  /** One `field: problem` per violation; `body` is the whole answer. */
  violations: string[];
}

type SchemaMap = Record<string, unknown>;

/** The schema the route states for `status`: exact code, then `4xx`-style, then `default`. */
function schemaFor(responses: SchemaMap, status: number): { found: boolean; schema?: unknown } {
  const entry = responses[String(status)] ?? responses[`${String(status)[0]}xx`] ?? responses.default;
  if (entry === undefined) return { found: false };
  // `{ description, content: { '<media type>': { schema } } }` (e.g. an event stream)
  const content = (entry as { content?: Record<string, { schema?: unknown }> }).content;
  if (content && typeof content === 'object') {
    const json = Object.entries(content).find(([type]) => /json/.test(type));
    return json ? { found: true, schema: json[1].schema } : { found: true };
  }
  return { found: true, schema: entry };
}

/**
 * A serializer that cannot render the handler's value (a required field missing, a value of no
 * type the schema allows) throws: in test mode that throw names the route and status.
 */
export const serializerCheck =
  (onMismatch: (m: ResponseMismatch) => void) =>
  (serialize: (data: unknown) => string, at: { method: string; url: string; httpStatus: string | undefined }) =>
  (data: unknown): string => {
    try {
      return serialize(data);
    } catch (err) {
      const route = `${at.method} ${at.url}`;
      const violations = [`body: ${err instanceof Error ? err.message : String(err)}`];
      onMismatch({ route, status: Number(at.httpStatus) || 0, violations });
      throw new ApiError(
        'INTERNAL',
        `The ${at.httpStatus ?? 'default'} answer of ${route} breaks the response schema the route states: ${violations.join('; ')}`,
        { errors: violations },
      );
    }
  };

/** Installs the check on `app` (before its routes are added). */
export function checkResponses(app: FastifyInstance, onMismatch: (m: ResponseMismatch) => void): void {
  const ajv = addFormats(new Ajv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false }));
  const compiled = new WeakMap<object, ValidateFunction>();
  const validatorOf = (schema: object): ValidateFunction => {
    let v = compiled.get(schema);
    if (!v) compiled.set(schema, (v = ajv.compile(schema)));
    return v;
  };
  const flagged = new WeakSet<FastifyRequest>();

  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const responses = request.routeOptions.schema?.response as SchemaMap | undefined;
    if (!responses || flagged.has(request)) return payload;
    const type = String(reply.getHeader('content-type') ?? '');
    const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
    if (text === null || text === '' || !/json/.test(type)) return payload;
    const status = reply.statusCode;
    const route = `${request.method} ${request.routeOptions.url ?? request.url}`;
    const config = request.routeOptions.config as
      { jobApi?: boolean; answers?: Record<number, object> | undefined } | undefined;
    let { found, schema } = schemaFor(responses, status);
    // The client job API (spec 4.4) states only its errors as Fastify schemas: its successes are
    // serialized without one on the hot path, and checked here against `config.answers`
    // (routes/job-answers.ts).
    if (!found && config?.answers?.[status]) ({ found, schema } = { found: true, schema: config.answers[status] });
    let violations: string[] = [];
    if (!found) {
      // An error answer the route does not list is the error handler's problem+json, checked by
      // the routes that list it. What stays free-form: the worker protocol's and the OpenAI
      // proxy's answers (what the worker sent).
      const freeForm = config?.jobApi === true;
      if (status < 400 && !freeForm) violations = [`body: the route states no response schema for status ${status}`];
    } else if (schema && typeof schema === 'object') {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        violations = ['body: is not valid JSON'];
      }
      if (violations.length === 0) {
        const validate = validatorOf(schema);
        if (!validate(body)) violations = (validate.errors ?? []).map((e) => describeViolation(e, 'body'));
      }
    }
    if (violations.length === 0) return payload;
    flagged.add(request);
    onMismatch({ route, status, violations });
    throw new ApiError(
      'INTERNAL',
      `The ${status} answer of ${route} breaks the response schema the route states: ${violations.join('; ')}`,
      { errors: violations },
    );
  });
}
