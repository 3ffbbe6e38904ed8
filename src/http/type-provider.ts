/**
 * Route inputs typed from their TypeBox schemas (Fastify's type providers): on an app from
 * `typed(app)`, a route's `request.body`, `params`, `query` and `headers` have the `Static` type of
 * the schemas it declares, and its handler's answer the type of its response schemas. A part the
 * route declares no schema for is `unknown` (the lenient job and worker routes read theirs with
 * their own checks, through `isObject`, `pathParam` and `queryParam`). Types only: `withTypeProvider`
 * returns the same instance.
 */
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyRequest,
  FastifySchema,
  FastifyTypeProvider,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
} from 'fastify';
import type { Static, TSchema } from '@sinclair/typebox';

export interface TypeBoxProvider extends FastifyTypeProvider {
  validator: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
  serializer: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
}

/** An app (or plugin scope) whose routes are typed from their TypeBox schemas. */
export type TypedApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxProvider
>;

export const typed = (app: FastifyInstance): TypedApp => app.withTypeProvider<TypeBoxProvider>();

/** The request of a route whose schema is (or includes) `S`, for handlers and helpers shared by several routes. */
export type TypedRequest<S extends FastifySchema> = FastifyRequest<
  RouteGenericInterface,
  RawServerDefault,
  RawRequestDefaultExpression,
  S,
  TypeBoxProvider
>;

/** A plain object (not null, not a list): how a request part without a schema is read. */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A path parameter, for a hook that runs for many routes (so knows no one schema): the router's
 * text, or undefined where the route has no such parameter.
 */
export function pathParam(request: FastifyRequest, name: string): string | undefined {
  const params = request.params;
  const value = isObject(params) ? params[name] : undefined;
  return typeof value === 'string' ? value : undefined;
}

/** A query parameter where no schema types the query: text, a list when repeated, or undefined. */
export const queryParam = (request: FastifyRequest, name: string): unknown =>
  isObject(request.query) ? request.query[name] : undefined;
