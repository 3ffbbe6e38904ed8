import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
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
        res.write('{"id": "j');
        setTimeout(() => res.destroy(), 10);
      } else if (takes === 2) {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ id: 'job-1', input: { n: 2 } }));
      } else setTimeout(() => res.writeHead(204).end(), 50);
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
  const worker = serve(() => ({}), { env: p.env, handleSignals: false, shutdownGraceMs: 100 });
  try {
    // a spinning loop makes hundreds of takes in this time; a waiting one makes one
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(takes >= 1 && takes <= 2, `${takes} takes in 500 ms`);
  } finally {
    await worker.stop();
    await p.close();
  }
});
