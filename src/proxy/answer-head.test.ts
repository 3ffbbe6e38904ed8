import { test } from 'node:test';
import assert from 'node:assert/strict';
import { headEnd, parseAnswerHead } from './answer-head.js';

const head = (...lines: string[]): string => `${lines.join('\r\n')}\r\n\r\n`;
const refusal = (text: string, method = 'GET'): string => {
  const parsed = parseAnswerHead(text, method);
  assert.ok('refused' in parsed, `refused: ${JSON.stringify(text)}`);
  return parsed.refused;
};

test('a head ends at its first empty line, and not before one came', () => {
  assert.equal(headEnd(Buffer.from('HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody')), 25);
  assert.equal(headEnd(Buffer.from('HTTP/1.1 200 OK\r\nA: b\r\n')), -1);
});

test('an answer head gives its status, reason, headers as sent and its framing by Content-Length', () => {
  const parsed = parseAnswerHead(
    head('HTTP/1.1 201 Created', 'Content-Length: 12', 'X-A:  spaced  ', 'Set-Cookie: a=1', 'Set-Cookie: b=2'),
    'GET',
  );
  assert.ok(!('refused' in parsed));
  assert.equal(parsed.status, 201);
  assert.equal(parsed.reason, 'Created');
  assert.deepEqual(parsed.rawHeaders, [
    'Content-Length',
    '12',
    'X-A',
    'spaced',
    'Set-Cookie',
    'a=1',
    'Set-Cookie',
    'b=2',
  ]);
  assert.deepEqual(parsed.framing, { kind: 'length', length: 12 });
  assert.equal(parsed.close, false);
});

test('a chunked answer is framed by its chunks, one with neither framing by the connection’s end, and HEAD, 204 and 304 have no body', () => {
  const framing = (text: string, method = 'GET') => {
    const parsed = parseAnswerHead(text, method);
    assert.ok(!('refused' in parsed));
    return parsed;
  };
  assert.deepEqual(framing(head('HTTP/1.1 200 OK', 'Transfer-Encoding: Chunked')).framing, { kind: 'chunked' });
  const closing = framing(head('HTTP/1.1 200 OK'));
  assert.deepEqual(closing.framing, { kind: 'close' });
  assert.equal(closing.close, true, 'a body ended by the connection leaves no connection to reuse');
  assert.deepEqual(framing(head('HTTP/1.1 200 OK', 'Content-Length: 5'), 'HEAD').framing, { kind: 'none' });
  assert.deepEqual(framing(head('HTTP/1.1 204 No Content')).framing, { kind: 'none' });
  assert.deepEqual(framing(head('HTTP/1.1 304 Not Modified', 'Content-Length: 9')).framing, { kind: 'none' });
  assert.equal(framing(head('HTTP/1.1 200 OK', 'Content-Length: 0', 'Connection: close')).close, true);
  assert.equal(framing(head('HTTP/1.0 200 OK', 'Content-Length: 0')).close, true, 'HTTP/1.0 closes by default');
  assert.equal(framing(head('HTTP/1.0 200 OK', 'Content-Length: 0', 'Connection: keep-alive')).close, false);
});

test('conflicting framings are refused: Content-Length with Transfer-Encoding, two different lengths, a length that is not digits', () => {
  assert.match(refusal(head('HTTP/1.1 200 OK', 'Content-Length: 3', 'Transfer-Encoding: chunked')), /both/);
  assert.match(refusal(head('HTTP/1.1 200 OK', 'Content-Length: 3', 'Content-Length: 4')), /two different/);
  assert.match(refusal(head('HTTP/1.1 200 OK', 'Content-Length: -1')), /not a number/);
  assert.match(refusal(head('HTTP/1.1 200 OK', 'Content-Length: 1e3')), /not a number/);
  assert.match(refusal(head('HTTP/1.1 200 OK', 'Transfer-Encoding: gzip, chunked')), /not chunked/);
  assert.match(
    refusal(head('HTTP/1.1 200 OK', 'Transfer-Encoding: chunked', 'Transfer-Encoding: chunked')),
    /not chunked/,
  );
  const same = parseAnswerHead(head('HTTP/1.1 200 OK', 'Content-Length: 3', 'Content-Length: 3'), 'GET');
  assert.ok(!('refused' in same) && same.framing.kind === 'length', 'the same length twice is one length');
});

test('a hostile status line or header line is refused with why', () => {
  assert.match(refusal(head('HTTP/1.1 099 Odd')), /status 099/);
  assert.match(refusal(head('HTTP/1.1 600 Beyond')), /status 600/);
  assert.match(refusal(head('HTTP/2 200 OK')), /status line/);
  assert.match(refusal(head('ICY 200 OK')), /status line/);
  assert.match(refusal(head('HTTP/1.1 20 OK')), /status line/);
  assert.match(refusal(head('HTTP/1.1 200 OK', 'bad header: x')), /not "name: value"/);
  assert.match(refusal(head('HTTP/1.1 200 OK', 'no-colon')), /not "name: value"/);
  assert.match(refusal(head('HTTP/1.1 200 OK', ': empty name')), /not "name: value"/);
  assert.match(refusal(head('HTTP/1.1 200 OK', 'X-A: a', ' folded')), /not "name: value"/);
  assert.match(refusal(head('HTTP/1.1 200 OK', 'X-A: \u0001')), /control character/);
  assert.match(refusal(head('HTTP/1.1 200 OK', 'X-A: a\nX-Smuggled: b')), /CRLF/);
  assert.match(refusal('HTTP/1.1 200 OK\r\nX-A: a\r\n'), /empty line/);
  assert.match(
    refusal(head('HTTP/1.1 200 OK', ...Array.from({ length: 201 }, (_, i) => `X-${i}: v`))),
    /more than 200/,
  );
});

test("a pod's Keep-Alive timeout is read in milliseconds, and one unsaid or malformed is null", () => {
  const keep = (...lines: string[]): number | null => {
    const parsed = parseAnswerHead(head('HTTP/1.1 200 OK', 'Content-Length: 0', ...lines), 'GET');
    assert.ok(!('refused' in parsed));
    return parsed.keepAliveMs;
  };
  assert.equal(keep('Keep-Alive: timeout=5'), 5_000);
  assert.equal(keep('Keep-Alive: max=100, Timeout = 2'), 2_000);
  assert.equal(keep(), null);
  assert.equal(keep('Keep-Alive: timeout=soon'), null);
  assert.equal(keep('Keep-Alive: mytimeout=5'), null);
});
