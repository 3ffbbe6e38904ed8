import type { FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { exceedsJsonDepth, MAX_JSON_DEPTH, tooDeepDetail } from './json-depth.js';

/**
 * Within `scope`, request bodies are JSON whatever their declared content type (workers send JSON
 * as `application/x-www-form-urlencoded`; curl users forget the header), and an empty body is no
 * body (clients POST `/cancel` with nothing). Call it inside an encapsulated plugin so the REST
 * routes keep their strict parsing.
 */
export function useLenientJson(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      const at = /position (\d+)/.exec((err as Error).message)?.[1];
      return done(
        new ApiError(
          'MALFORMED_JSON',
          `The request body is not valid JSON${at ? ` (parsing stopped at character ${at})` : ''}.`,
        ),
        undefined,
      );
    }
    // nesting n levels takes at least 2n characters: short bodies need no walk
    if (text.length > 2 * MAX_JSON_DEPTH && exceedsJsonDepth(value))
      return done(new ApiError('BAD_REQUEST', tooDeepDetail), undefined);
    done(null, value);
  });
}
