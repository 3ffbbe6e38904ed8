import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../../test/support/eventually.js';
import { FakeTimers } from '../../test/support/fake-timers.js';
import { serve } from './serve.js';

/** A stand-in platform answering the worker's calls from `route`. */
async function platform(route: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => route(req, res, body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    env: {
      RUNPOD_WEBHOOK_GET_JOB: `${base}/v2/ep/job-take/$ID?gpu=x`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/v2/ep/job-done/$RUNPOD_POD_ID/$ID?gpu=x`,
      RUNPOD_AI_API_KEY: 'key',
      RUNPOD_POD_ID: 'w1',
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

test('a take reply cut off mid-body does not stop the worker; it takes again and posts the result', async () => {
  let takes = 0;
  let posted: { url: string; body: string; auth: string | undefined } | null = null;
  let resolvePosted!: () => void;
  const gotPost = new Promise<void>((r) => (resolvePosted = r));
  const p = await platform((req, res, body) => {
    if (req.url!.includes('/job-take/')) {
      takes += 1;
      if (takes === 1) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        // the connection is cut once the head and part of the body are on their way (TCP keeps them in order)
        res.write('{"id": "j', () => res.destroy());
      } else if (takes === 2) {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ id: 'job-1', input: { n: 2 } }));
      }
      // later takes are long-polls with no job: they wait until the worker stops (and aborts them)
    } else if (req.url!.includes('/job-done/')) {
      posted = { url: req.url!, body, auth: req.headers.authorization };
      res.writeHead(200).end('{}');
      resolvePosted();
    } else res.writeHead(204).end();
  });
  const worker = serve((job) => ({ doubled: (job.input as { n: number }).n * 2 }), {
    env: p.env,
    handleSignals: false,
    shutdownGraceMs: 100,
  });
  try {
    await gotPost;
    assert.equal(posted!.url, '/v2/ep/job-done/w1/job-1?gpu=x&isStream=false');
    assert.deepEqual(JSON.parse(posted!.body), { output: { doubled: 4 } });
    assert.equal(posted!.auth, 'key', 'the raw key, no Bearer');
  } finally {
    await worker.stop();
    await p.close();
  }
});

test('a 400 from job-take (a request the platform will refuse again) makes the worker wait before polling again, not spin', async () => {
  let takes = 0;
  const p = await platform((req, res) => {
    if (req.url!.includes('/job-take/')) {
      takes += 1;
      res
        .writeHead(400, { 'content-type': 'application/problem+json' })
        .end('{"status":400,"detail":"Invalid worker id"}');
    } else res.writeHead(204).end();
  });
  const timers = new FakeTimers();
  const worker = serve(() => ({}), { env: p.env, handleSignals: false, shutdownGraceMs: 100, timers });
  try {
    // a spinning loop takes again at once; a waiting one pauses on its timer
    await until('the worker pauses or takes again', () => timers.dues.length > 0 || takes > 1);
    assert.equal(takes, 1, 'the worker took again without waiting');
    assert.deepEqual(timers.dues, [timers.clock.now() + 1_000], 'it waits a second');
    await timers.advance(999);
    assert.equal(takes, 1, 'no take before the second is over');
    await timers.advance(1);
    await until('the worker takes again once the second is over', () => takes === 2);
  } finally {
    await worker.stop();
    await p.close();
  }
});
