import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import pino from 'pino';
import { loggerOptions } from './app.js';
import { RequestLogController } from './request-log-controller.js';
import { lazyChildLogger } from './request-logger.js';

async function appLogging(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const app = Fastify({
    loggerInstance: pino(loggerOptions(level), sink),
    childLoggerFactory: lazyChildLogger,
    logController: new RequestLogController(),
  });
  app.post('/v2/:id/runsync', async () => ({ status: 'COMPLETED' }));
  app.get('/boom', async () => {
    throw new Error('broken');
  });
  await app.ready();
  return { app, lines };
}

test('at info a request writes one line, "request completed", carrying its method, URL, id, client address, status and response time', async () => {
  const { app, lines } = await appLogging('info');
  try {
    const res = await app.inject({ method: 'POST', url: '/v2/e1/runsync?api_key=secret', payload: { input: {} } });
    assert.equal(res.statusCode, 200);
    assert.equal(lines.length, 1);
    const [line] = lines as [Record<string, unknown>];
    assert.equal(line.msg, 'request completed');
    assert.deepEqual(line.req, {
      method: 'POST',
      url: '/v2/e1/runsync?api_key=[redacted]',
      id: line.reqId,
      client: '127.0.0.1',
    });
    assert.deepEqual(line.res, { statusCode: 200 });
    assert.equal(typeof line.responseTime, 'number');
  } finally {
    await app.close();
  }
});

test('at debug the "incoming request" line comes back before the completed one', async () => {
  const { app, lines } = await appLogging('debug');
  try {
    await app.inject({ method: 'POST', url: '/v2/e1/runsync', payload: { input: {} } });
    assert.deepEqual(
      lines.filter((l) => l.reqId !== undefined).map((l) => l.msg),
      ['incoming request', 'request completed'],
    );
  } finally {
    await app.close();
  }
});

test('a failing request is still logged, with its error', async () => {
  const { app, lines } = await appLogging('info');
  try {
    const res = await app.inject({ method: 'GET', url: '/boom' });
    assert.equal(res.statusCode, 500);
    const mine = lines.filter((l) => l.reqId !== undefined);
    assert.ok(
      mine.some((l) => (l.err as { message?: string } | undefined)?.message === 'broken'),
      JSON.stringify(mine),
    );
    assert.ok(mine.every((l) => l.msg !== 'incoming request'));
  } finally {
    await app.close();
  }
});
