/**
 * Route inputs typed from their TypeBox schemas (Fastify's type providers): on an app from
 * `typed(app)`, a route's `request.body`, `params`, `query` and `headers` have the `Static` type of
 * the schemas it declares, and its handler's answer the type of its response schemas. A part the
 * route declares no schema for is `unknown` (the lenient job and worker routes read theirs with
 * their own checks). Types only: `withTypeProvider` returns the same instance.
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
