import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { ID_PATTERN } from '../domain/ids.js';

/** spec 2.14, served as application/problem+json */
const ErrorResponse = Type.Object(
  {
    type: Type.Optional(Type.String()),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Array(Type.String())),
  },
  { $id: undefined, description: 'application/problem+json' },
);

/** The error answers every authenticated route can give, for the OpenAPI document. */
export const errorResponses = {
  '4xx': ErrorResponse,
  '5xx': ErrorResponse,
} as const;

/** A 204 answer: no body (the handler sends none), documented as `null` like before. */
export const Deleted = Type.Unsafe<void>(Type.Null({ description: 'Deleted' }));

export const IdParams = Type.Object({ id: Type.String({ pattern: ID_PATTERN }) }, { additionalProperties: false });

/**
 * `T | null` as a JSON-Schema type array rather than `anyOf`: the response serializer picks a
 * branch of an `anyOf` by validating the value against each (formats included) on every
 * response, while a type array costs nothing.
 */
export const Nullable = <T extends TSchema & { type: string }>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] });

/** A string from a fixed set, as one `enum` (not an `anyOf` of literals, for the same reason). */
export const StringEnum = <const V extends readonly string[]>(values: V, options: { description?: string } = {}) =>
  Type.Unsafe<V[number]>({ type: 'string', enum: [...values], ...options });
