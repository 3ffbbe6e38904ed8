import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { requestIdOf } from './request-id.js';

const withHeader = (value: string | string[] | undefined) =>
  ({ headers: value === undefined ? {} : { 'x-request-id': value } }) as unknown as IncomingMessage;

test('a short x-request-id of letters, digits and ._:- is kept; anything else gets a fresh UUID', () => {
  assert.equal(requestIdOf(withHeader('req-1.a_b:c')), 'req-1.a_b:c');
  for (const unsafe of [undefined, '', 'a\nb', 'a\r\nlevel=60', 'sp ace', '"q"', '{}', 'x'.repeat(129), ['a', 'b']]) {
    assert.match(
      requestIdOf(withHeader(unsafe)),
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
      String(unsafe),
    );
  }
});
