import { Type } from '@sinclair/typebox';
import { ID_PATTERN } from '../domain/ids.js';

/** spec 2.14, served as application/problem+json */
export const ErrorResponse = Type.Object(
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

export const IdParams = Type.Object({ id: Type.String({ pattern: ID_PATTERN }) }, { additionalProperties: false });
