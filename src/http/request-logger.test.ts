import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import pino from 'pino';
import { lazyChildLogger, RequestLogger } from './request-logger.js';
import { loggerOptions } from './app.js';

function memoryLogger(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino(loggerOptions(level), sink);
  let children = 0;
  const child = logger.child.bind(logger);
  logger.child = ((...args: Parameters<typeof child>) => {
    children++;
    return child(...args);
  }) as typeof logger.child;
  return { logger, lines, children: () => children };
}

test('a request that writes no line at an enabled level never makes a child logger', () => {
  const { logger, lines, children } = memoryLogger('warn');
  const log = lazyChildLogger(logger, { reqId: 'r-1' }, {});
  log.info('below the level');
  log.debug({ detail: 1 }, 'below the level');
  assert.equal(children(), 0);
  assert.equal(lines.length, 0);
  assert.equal(log.level, 'warn');
});

test('a line at an enabled level is written once, bound to the request id', () => {
  const { logger, lines, children } = memoryLogger('warn');
  const log = lazyChildLogger(logger, { reqId: 'r-2' }, {});
  log.warn({ workerId: 'w1' }, 'first');
  log.error('second');
  assert.equal(children(), 1, 'one child, reused');
  assert.deepEqual(
    lines.map((l) => [l.reqId, l.msg, l.workerId]),
    [
      ['r-2', 'first', 'w1'],
      ['r-2', 'second', undefined],
    ],
  );
});

test("a request's child logger keeps the parent's redaction", () => {
  const { logger, lines } = memoryLogger('info');
  lazyChildLogger(logger, { reqId: 'r-3' }, {}).info({ registry: { password: 'secret-key' } }, 'with a password');
  assert.equal(lines.length, 1);
  assert.doesNotMatch(JSON.stringify(lines[0]), /secret-key/);
});

test('raising the level of one request does not change the server logger', () => {
  const { logger } = memoryLogger('info');
  const log = lazyChildLogger(logger, { reqId: 'r-4' }, {}) as unknown as RequestLogger;
  log.level = 'error';
  assert.equal(log.level, 'error');
  assert.equal(logger.level, 'info');
  assert.equal(log.isLevelEnabled('warn'), false);
});

test('through Fastify, request lines carry the request id the client sent, and handlers log through the same binding', async () => {
  const { logger, lines } = memoryLogger('info');
  const app = Fastify({ loggerInstance: logger, childLoggerFactory: lazyChildLogger, requestIdHeader: 'x-request-id' });
  app.get('/x', async (request) => {
    request.log.warn('from the handler');
    return { ok: true };
  });
  try {
    const res = await app.inject({ method: 'GET', url: '/x', headers: { 'x-request-id': 'client-id-7' } });
    assert.equal(res.statusCode, 200);
    const mine = lines.filter((l) => l.reqId === 'client-id-7').map((l) => l.msg);
    assert.deepEqual(mine, ['incoming request', 'from the handler', 'request completed']);
  } finally {
    await app.close();
  }
});

test('a route logging at warn writes no per-request info line and makes no child for one', () => {
  const { logger, lines, children } = memoryLogger('info');
  const log = lazyChildLogger(logger, { reqId: 'r-9' }, { level: 'warn' });
  assert.equal((log as unknown as RequestLogger).isLevelEnabled('info'), false);
  log.info('incoming request');
  assert.equal(children(), 0);
  assert.equal(lines.length, 0);
  assert.equal(log.level, 'warn');
  log.warn('worker reported itself unhealthy');
  assert.equal(lines.length, 1);
});
