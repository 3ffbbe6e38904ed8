import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientErrorProblem, rawProblemResponse } from './client-errors.js';

const limits = { requestTimeoutMs: 60_000, headersTimeoutMs: 10_000 };

test("each error Node's HTTP parser raises maps to a catalogue code; socket errors get no answer", () => {
  const code = (c: string | undefined) => clientErrorProblem(c, limits)?.code ?? null;
  assert.equal(code('ERR_HTTP_REQUEST_TIMEOUT'), 'REQUEST_TIMEOUT');
  assert.equal(code('HPE_HEADER_OVERFLOW'), 'HEADERS_TOO_LARGE');
  assert.equal(code('HPE_INVALID_METHOD'), 'BAD_REQUEST');
  assert.equal(code('HPE_INVALID_CHUNK_SIZE'), 'BAD_REQUEST');
  assert.equal(code('HPE_SOMETHING_NEW'), 'BAD_REQUEST');
  assert.equal(code('EPIPE'), null);
  assert.equal(code(undefined), null);
  assert.match(clientErrorProblem('ERR_HTTP_REQUEST_TIMEOUT', limits)!.detail, /10000 ms.*60000 ms/);
});

test('a raw problem response is a whole HTTP/1.1 answer that closes the connection', () => {
  const raw = rawProblemResponse(clientErrorProblem('HPE_HEADER_OVERFLOW', limits)!);
  const [head, body] = raw.split('\r\n\r\n');
  assert.match(head!, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
  assert.match(head!, /\r\nContent-Type: application\/problem\+json\r\n/);
  assert.match(head!, /\r\nConnection: close$/);
  assert.match(head!, new RegExp(`Content-Length: ${Buffer.byteLength(body!)}`));
  assert.equal(JSON.parse(body!).code, 'HEADERS_TOO_LARGE');
});
