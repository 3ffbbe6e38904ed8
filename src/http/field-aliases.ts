/**
 * Older field names a `/v2` body still accepts (documented aliases, docs/api.md): a route's
 * `preValidation` hook rewrites them to the v2 names before its schema validates the body, so the
 * schema (and the OpenAPI document) speak only v2 and the handler reads only v2 names. A body that
 * sends an old name together with the v2 name of the same field answers 422 naming both.
 */
import type { FastifyRequest } from 'fastify';
import { validationFailed } from '../domain/errors.js';
import { isObject } from './type-provider.js';

/**
 * Old name → v2 name, or a function that moves the old field's value into the body under its v2
 * name(s) (for an alias that is not a plain rename); `conflictsWith` is the v2 field it replaces.
 */
export type FieldAlias =
  | string
  | {
      conflictsWith: string;
      /** Writes the value into `body` (the old field is already removed); answers a violation or null. */
      move: (value: unknown, body: Record<string, unknown>) => string | null;
    };

/** A `preValidation` hook rewriting `aliases` in an object body; other bodies pass to the schema untouched. */
export function aliasHook(aliases: Record<string, FieldAlias>) {
  return async (request: FastifyRequest): Promise<void> => {
    const body = request.body;
    if (!isObject(body)) return;
    const present = Object.keys(aliases).filter((old) => Object.hasOwn(body, old));
    if (present.length === 0) return;
    const clashes = present.flatMap((old) => {
      const alias = aliases[old]!;
      const v2 = typeof alias === 'string' ? alias : alias.conflictsWith;
      return Object.hasOwn(body, v2)
        ? [`${old}: is the older name of ${v2}; send one of ${old} and ${v2}, not both`]
        : [];
    });
    if (clashes.length > 0) throw validationFailed(clashes);
    const problems: string[] = [];
    for (const old of present) {
      const alias = aliases[old]!;
      const value = body[old];
      delete body[old];
      if (typeof alias === 'string') body[alias] = value;
      else {
        const problem = alias.move(value, body);
        if (problem !== null) problems.push(problem);
      }
    }
    if (problems.length > 0) throw validationFailed(problems);
  };
}
