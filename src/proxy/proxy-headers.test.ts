import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { answerHeaders, carriesGantryKey, requestHeaders, setHeader } from './proxy-headers.js';

const message = (raw: string[]): IncomingMessage => {
  const headers: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) headers[raw[i]!.toLowerCase()] = raw[i + 1]!;
  return { rawHeaders: raw, headers } as unknown as IncomingMessage;
};

test('a Gantry key is recognised bare or as a bearer token; an application’s own token is not', () => {
  assert.ok(carriesGantryKey('Bearer gty_abc'));
  assert.ok(carriesGantryKey('gty_abc'));
  assert.ok(carriesGantryKey('  bearer   gty_abc'));
  assert.ok(!carriesGantryKey('Bearer app-token'));
  assert.ok(!carriesGantryKey('Basic dXNlcjpwYXNz'));
  assert.ok(!carriesGantryKey(undefined));
});

test('a request goes on without hop-by-hop headers, those its Connection names, forged X-Forwarded ones or a Gantry key', () => {
  const out = requestHeaders(
    message([
      'Host',
      'p.example',
      'Connection',
      'keep-alive, X-Secret',
      'X-Secret',
      's',
      'Keep-Alive',
      'timeout=5',
      'Authorization',
      'Bearer gty_key',
      'X-Forwarded-For',
      '6.6.6.6',
      'Forwarded',
      'for=6.6.6.6',
      'Transfer-Encoding',
      'chunked',
      'Cookie',
      'a=1',
      'Cookie',
      'b=2',
      'Upgrade',
      'h2c',
    ]),
    { proto: 'https', clientAddress: '10.0.0.9', prefix: '/lbl', upgrade: false },
  );
  assert.deepEqual(out, {
    Host: 'p.example',
    Cookie: ['a=1', 'b=2'],
    'X-Forwarded-For': '10.0.0.9',
    'X-Forwarded-Host': 'p.example',
    'X-Forwarded-Proto': 'https',
    'X-Forwarded-Prefix': '/lbl',
  });
});

test('an upgrade keeps its Connection: upgrade and Upgrade', () => {
  const out = requestHeaders(message(['Host', 'h', 'Connection', 'Upgrade', 'Upgrade', 'websocket']), {
    proto: 'http',
    clientAddress: '::1',
    prefix: '',
    upgrade: true,
  });
  assert.equal(out.Connection, 'upgrade');
  assert.equal(out.Upgrade, 'websocket');
  assert.equal(out['X-Forwarded-Prefix'], undefined);
});

test('an answer under a prefix keeps a local Location and a cookie path under it; an absolute one is left alone', () => {
  const out = answerHeaders(
    [
      'Location',
      '/login',
      'Set-Cookie',
      'a=1; Path=/; HttpOnly',
      'Set-Cookie',
      'b=2; path=/',
      'Connection',
      'close',
      'Content-Type',
      'text/html',
    ],
    'close',
    '/lbl',
  );
  assert.deepEqual(out, {
    Location: '/lbl/login',
    'Set-Cookie': ['a=1; Path=/lbl/; HttpOnly', 'b=2; path=/lbl/'],
    'Content-Type': 'text/html',
  });
  assert.equal(answerHeaders(['Location', '//evil.example/'], undefined, '/lbl').Location, '//evil.example/');
  assert.equal(answerHeaders(['Location', '/x'], undefined, '').Location, '/x');
});

test("a header the proxy sets replaces the upstream's own under any spelling, so a worker cannot name another worker", () => {
  const out = answerHeaders(
    ['x-runpod-worker-id', 'someone-else', 'X-RUNPOD-WORKER-ID', 'x', 'Content-Type', 'text/plain'],
    undefined,
    '',
  );
  setHeader(out, 'X-Runpod-Worker-Id', 'w1');
  assert.deepEqual(out, { 'Content-Type': 'text/plain', 'X-Runpod-Worker-Id': 'w1' });
});
