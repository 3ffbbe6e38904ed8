/**
 * Older field names a `/v2` body still accepts (documented aliases, docs/api.md): a route's
 * `preValidation` hook rewrites them to the v2 names before its schema validates the body, so the
 * schema (and the OpenAPI document) speak only v2 and the handler reads only v2 names. A body that
 * sends an older name together with the v2 name of the same field answers 422 naming both.
 */
import type { FastifyRequest } from 'fastify';
import { validationFailed } from '../domain/errors.js';
import { isObject } from './type-provider.js';

/** A `preValidation` hook renaming `aliases` (older name → v2 name) in an object body; other bodies pass to the schema untouched. */
export function aliasHook(aliases: Record<string, string>) {
  return async (request: FastifyRequest): Promise<void> => {
    const body = request.body;
    if (!isObject(body)) return;
    const present = Object.keys(aliases).filter((old) => Object.hasOwn(body, old));
    const clashes = present
      .filter((old) => Object.hasOwn(body, aliases[old]!))
      .map((old) => `${old}: is the older name of ${aliases[old]}; send one of ${old} and ${aliases[old]}, not both`);
    if (clashes.length > 0) throw validationFailed(clashes);
    for (const old of present) {
      body[aliases[old]!] = body[old];
      delete body[old];
    }
  };
}
