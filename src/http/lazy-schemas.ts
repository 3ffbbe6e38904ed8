/**
 * Route schemas compiled on a route's first use rather than when the app is built.
 *
 * Compiling every route's validators (Ajv) and response serializers (fast-json-stringify) at
 * start took about 360 ms of a server's ~1.3 s start, and a restart that adopts running pods
 * waits for it before it listens. A route now compiles its schemas the first time a request
 * needs them (a few milliseconds, once); `eager` compiles them all at build time, as tests do
 * to prove that every schema compiles.
 */
import type { FastifyInstance, FastifySchemaValidationError } from 'fastify';
import type { FastifyValidationResult } from 'fastify/types/schema.js';
import type { Ajv } from 'ajv';
import fastJsonStringify from 'fast-json-stringify';

type Validator = ((data: unknown, context?: unknown) => ReturnType<FastifyValidationResult>) & {
  errors?: FastifySchemaValidationError[] | null;
  schemaEnv?: unknown;
};

/** A validator that compiles on its first call; Fastify reads `errors` from it after a failed call. */
function lazyValidator(compile: () => Validator): Validator {
  let compiled: Validator | null = null;
  const validate: Validator = function (data: unknown, context?: unknown) {
    compiled ??= compile();
    const result: ReturnType<FastifyValidationResult> =
      context === undefined ? compiled(data) : compiled(data, context);
    validate.errors = compiled.errors;
    return result;
  };
  // Fastify passes the parent object (so Ajv may coerce a root value in place) only to a validator
  // that has `schemaEnv`, as compiled Ajv functions do.
  validate.schemaEnv = true;
  return validate;
}

function lazySerializer(compile: () => (data: unknown) => string): (data: unknown) => string {
  let compiled: ((data: unknown) => string) | null = null;
  return (data) => (compiled ??= compile())(data);
}

/**
 * Sets the app's compilers: bodies with `bodyAjv`, other parts with `paramAjv`, responses with
 * fast-json-stringify; compiled on first use unless `eager`.
 */
export function useRouteCompilers(
  app: FastifyInstance,
  compilers: {
    bodyAjv: Ajv;
    paramAjv: Ajv;
    eager: boolean;
    /** Wraps each route's response serializer (the response check of tests, response-check.ts). */
    wrapSerializer?: (
      serialize: (data: unknown) => string,
      at: { method: string; url: string; httpStatus: string | undefined },
    ) => (data: unknown) => string;
  },
): void {
  const { bodyAjv, paramAjv, eager, wrapSerializer } = compilers;
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const compile = (): Validator => (httpPart === 'body' ? bodyAjv : paramAjv).compile(schema) as Validator;
    return eager ? compile() : lazyValidator(compile);
  });
  app.setSerializerCompiler(({ schema, method, url, httpStatus }) => {
    const compile = (): ((data: unknown) => string) =>
      fastJsonStringify(schema as Parameters<typeof fastJsonStringify>[0]);
    const serialize = eager ? compile() : lazySerializer(compile);
    return wrapSerializer ? wrapSerializer(serialize, { method, url, httpStatus }) : serialize;
  });
}
