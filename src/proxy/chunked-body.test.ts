import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChunkedBody } from './chunked-body.js';

/** Reads `wire` in pieces of `step` bytes: the data, the bytes the body took, whether it ended, or the refusal. */
function readAll(wire: string, step: number): { data: string; took: number; done: boolean } | { refused: string } {
  const bytes = Buffer.from(wire, 'latin1');
  const body = new ChunkedBody();
  let data = '';
  let took = 0;
  for (let at = 0; at < bytes.length && !body.done; at += step) {
    const end = Math.min(bytes.length, at + step);
    const read = body.read(bytes, at, end, (from, to) => (data += bytes.toString('latin1', from, to)));
    if (typeof read !== 'number') return read;
    took += read;
  }
  return { data, took, done: body.done };
}

test('chunked data is found whatever the pieces it arrives in, down to one byte, and the body ends after its last chunk and trailers', () => {
  const wire = '5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n';
  for (const step of [1, 2, 3, 7, wire.length]) {
    assert.deepEqual(readAll(wire, step), { data: 'hello 0123456789', took: wire.length, done: true }, `step ${step}`);
  }
});

test('bytes after the last chunk are not the body’s', () => {
  const wire = '2\r\nok\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n';
  assert.deepEqual(readAll(wire, wire.length), { data: 'ok', took: 12, done: true });
});

test('a body cut short before its last chunk has not ended', () => {
  const result = readAll('a\r\n01234', 100);
  assert.deepEqual(result, { data: '01234', took: 8, done: false });
});

test('broken chunk framing is refused: a size that is not hex, data not followed by CRLF, a bare LF, an endless size line', () => {
  assert.match((readAll('zz\r\n', 10) as { refused: string }).refused, /not a hexadecimal/);
  assert.match((readAll('\r\n', 10) as { refused: string }).refused, /not a hexadecimal/);
  assert.match((readAll('-1\r\n', 10) as { refused: string }).refused, /not a hexadecimal/);
  assert.match((readAll('2\r\nokX\r\n', 10) as { refused: string }).refused, /not followed by CRLF/);
  assert.match((readAll('2\nok\r\n', 10) as { refused: string }).refused, /not a hexadecimal|CRLF/);
  assert.match((readAll('2;ext\nok', 10) as { refused: string }).refused, /CRLF/);
  assert.match((readAll(`2;${'e'.repeat(5000)}\r\n`, 100) as { refused: string }).refused, /too long/);
  assert.match((readAll('1234567890abc\r\n', 100) as { refused: string }).refused, /too large/);
  assert.match((readAll(`0\r\n${'X: y\r\n'.repeat(4000)}\r\n`, 1000) as { refused: string }).refused, /trailers/);
});
