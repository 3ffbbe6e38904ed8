/**
 * The field kinds every section of the config file's schema is written in (config-schema.ts and
 * the runtimes' own sections, `src/runtime/<kind>/config.ts`): each a TypeBox schema with its
 * default and description, and the annotations config-decode.ts reads (`env`, `bounds`, …).
 */
import { Type, type TLiteral, type TSchema, type TUnion } from '@sinclair/typebox';
import type { ConfigAnnotations } from './config-decode.js';

type Options = ConfigAnnotations & {
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  pattern?: string;
};

/** A non-negative number (milliseconds, bytes, a count kept as given). */
export const amount = (fallback: number, description: string, options: Options = {}) =>
  Type.Number({ minimum: 0, default: fallback, description, ...options });
/** A non-negative number raised to `floor` when below it, e.g. a loop period that must not spin. */
export const atLeast = (floor: number, fallback: number, description: string, options: Options = {}) =>
  Type.Transform(amount(fallback, description, options))
    .Decode((n) => Math.max(floor, n))
    .Encode((n) => n);
/** A whole count (fractions dropped), raised to `floor` when below it. */
export const count = (floor: number, fallback: number, description: string, options: Options = {}) =>
  Type.Transform(amount(fallback, description, options))
    .Decode((n) => Math.max(floor, Math.floor(n)))
    .Encode((n) => n);
export const flag = (fallback: boolean, description: string, options: Options = {}) =>
  Type.Boolean({ default: fallback, description, ...options });
export const choice = <const T extends readonly string[]>(
  values: T,
  fallback: T[number],
  description: string,
  options: Options = {},
) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    {
      default: fallback,
      description,
      ...options,
    },
  ) as unknown as TUnion<[TLiteral<T[number]>]>;
export const text = (fallback: string, description: string, options: Options = {}) =>
  Type.String({ default: fallback, description, ...options });
export const nonEmpty = (options: Options = {}) =>
  Type.String({ pattern: '\\S', mustBe: 'a non-empty string', ...options });
/** A value, or null (the default) for "computed" or "none". */
export const orNull = <T extends TSchema>(schema: T, description: string, options: Options = {}) =>
  Type.Union([schema, Type.Null()], { default: null, description, ...options });
/** A TCP port a listener of its own listens on (0 picks a free one); absent: its default, which follows the server's. */
export const listenPort = (description: string, env: string, defaultText: string) =>
  Type.Optional(
    Type.Transform(
      Type.Number({ minimum: 0, maximum: 65_535, bounds: 'a TCP port (0-65535)', description, env, defaultText }),
    )
      .Decode((n) => Math.floor(n))
      .Encode((n) => n),
  );
