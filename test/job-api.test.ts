// The client job API (spec 4.4, 8.1; wire-protocol §2) over in-process HTTP.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { FakeClock } from '../src/domain/clock.js';
import { until } from './support/eventually.js';

let t: TestApp;
const clock = new FakeClock(Date.UTC(2026, 0, 1));
let acct: { accountId: string; key: string; readKey: string };
let other: { accountId: string; key: string; readKey: string };

async function newEndpoint(accountId: string, name = 'ep'): Promise<string> {
  const template = await t.services.templates.create(accountId, {
    name: `${name}-tpl`,
    imageName: 'worker:dev',
    isServerless: true,
  });
  const endpoint = await t.services.endpoints.create(accountId, { name, templateId: template.id, gpuIds: 'ADA_24' });
  return endpoint.id;
}

/** Takes the next job of the endpoint as `worker` and posts `body` as its result. */
async function work(endpointId: string, body: unknown, worker = 'w1'): Promise<string> {
  const [job] = await t.services.jobs.worker.take(endpointId, worker, { waitMs: 5000 });
  assert.ok(job, 'a job was queued');
  await t.services.jobs.worker.complete(worker, job.id, body);
  return job.id;
}

before(async () => {
  // A tiny REST quota proves the job API is not counted against it.
  t = await createTestApp({ clock, file: { rateLimits: { minute: 5, hour: 1000, day: 1000 } } });
  acct = await t.newAccount('jobs-owner');
  other = await t.newAccount('jobs-other');
});
after(() => t.close());

describe('run and status', () => {
  let ep: string;
  before(async () => {
    ep = await newEndpoint(acct.accountId, 'run-status');
  });

  test('POST /run answers 200 with the job id and IN_QUEUE', async () => {
    const res = await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: { prompt: 'hi' } });
    assert.equal(res.statusCode, 200, res.body);
    const body = json(res);
    assert.deepEqual(Object.keys(body).sort(), ['id', 'status']);
    assert.equal(body.status, 'IN_QUEUE');
  });

  test('status, status-sync and stream answer by GET and by POST (the Go SDK), a read key sufficing for both', async () => {
    const { id } = json(await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: { n: 1 } }));
    for (const path of [`status/${id}`, `status-sync/${id}?wait=1000`, `stream/${id}?wait=1000`])
      for (const method of ['GET', 'POST'] as const) {
        const res = await t.request(acct.readKey, method, `/v2/${ep}/${path}`);
        assert.equal(res.statusCode, 200, `${method} ${path}: ${res.body}`);
        assert.equal(json(res).id, id);
        assert.equal(json(res).status, 'IN_QUEUE');
      }
  });

  test('the raw key without "Bearer" is accepted', async () => {
    const res = await t.request(null, 'POST', `/v2/${ep}/run`, { input: {} }, { authorization: acct.key });
    assert.equal(res.statusCode, 200, res.body);
  });

  test('a read-scope key cannot submit, cancel or purge (403)', async () => {
    for (const path of ['run', 'runsync', 'purge-queue', 'cancel/x']) {
      const res = await t.request(acct.readKey, 'POST', `/v2/${ep}/${path}`, { input: {} });
      assert.equal(res.statusCode, 403, path);
      assert.match(String(res.headers['content-type']), /application\/problem\+json/);
    }
  });

  test('a body sent as form-urlencoded or without a content type is still read as JSON', async () => {
    for (const headers of [{ 'content-type': 'application/x-www-form-urlencoded' }, { 'content-type': 'text/plain' }]) {
      const res = await t.request(acct.key, 'POST', `/v2/${ep}/run`, JSON.stringify({ input: { a: 1 } }), headers);
      assert.equal(res.statusCode, 200, res.body);
    }
  });

  test('a finished job carries output, delayTime, executionTime and workerId, and never s3Config', async () => {
    const { id } = json(
      await t.request(acct.key, 'POST', `/v2/${ep}/run`, {
        input: { n: 2 },
        s3Config: { accessId: 'a', accessSecret: 'secret', bucketName: 'b', endpointUrl: 'http://s3' },
      }),
    );
    await t.services.jobs.client.purgeQueue(ep).catch(() => undefined);
    // the purge removed it; queue another and complete it
    const again = json(
      await t.request(acct.key, 'POST', `/v2/${ep}/run`, {
        input: { n: 3 },
        s3Config: { accessId: 'a', accessSecret: 'secret', bucketName: 'b', endpointUrl: 'http://s3' },
      }),
    );
    await work(ep, { output: { answer: 42 } }, 'w-finished');
    const res = await t.request(acct.key, 'GET', `/v2/${ep}/status/${again.id}`);
    const view = json(res);
    assert.equal(view.status, 'COMPLETED');
    assert.deepEqual(view.output, { answer: 42 });
    assert.equal(typeof view.delayTime, 'number');
    assert.equal(typeof view.executionTime, 'number');
    assert.equal(view.workerId, 'w-finished');
    assert.ok(!res.body.includes('secret'), 's3Config is not echoed');
    assert.equal((await t.request(acct.key, 'GET', `/v2/${ep}/status/${id}`)).statusCode, 404, 'a purged job is gone');
  });
});

describe('request validation', () => {
  let ep: string;
  before(async () => {
    ep = await newEndpoint(acct.accountId, 'validation');
  });

  test('a job without input is refused with 400 naming input', async () => {
    for (const body of [{}, { webhook: 'http://x' }, undefined]) {
      const res = await t.request(acct.key, 'POST', `/v2/${ep}/run`, body);
      assert.equal(res.statusCode, 400, res.body);
      assert.match(json(res).detail, /input/);
    }
  });

  test('an input that is not a JSON object is refused with 400', async () => {
    const res = await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: 'text' });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(json(res).errors, ['input must be a JSON object']);
  });

  test('a policy out of bounds is refused with 400 naming the field', async () => {
    const res = await t.request(acct.key, 'POST', `/v2/${ep}/run`, {
      input: {},
      policy: { executionTimeout: 1000, ttl: 8 * 86_400_000 },
    });
    assert.equal(res.statusCode, 400);
    const { errors } = json(res);
    assert.ok(errors.some((e: string) => e.startsWith('policy.executionTimeout')));
    assert.ok(errors.some((e: string) => e.startsWith('policy.ttl')));
  });

  test('malformed JSON is a 400 problem', async () => {
    const res = await t.request(acct.key, 'POST', `/v2/${ep}/run`, '{"input": ', {
      'content-type': 'application/json',
    });
    assert.equal(res.statusCode, 400);
    assert.equal(json(res).code, 'MALFORMED_JSON');
  });

  test('/run takes bodies up to 10 MB and /runsync up to 20 MB; larger ones are 413', async () => {
    const body = (mb: number) => JSON.stringify({ input: { blob: 'x'.repeat(mb * 1024 * 1024) } });
    const tooBig = await t.request(acct.key, 'POST', `/v2/${ep}/run`, body(11), { 'content-type': 'application/json' });
    assert.equal(tooBig.statusCode, 413);
    assert.match(String(tooBig.headers['content-type']), /application\/problem\+json/);
    assert.equal(
      (await t.request(acct.key, 'POST', `/v2/${ep}/run`, body(9), { 'content-type': 'application/json' })).statusCode,
      200,
    );
    const sync = await t.request(acct.key, 'POST', `/v2/${ep}/runsync?wait=1000`, body(15), {
      'content-type': 'application/json',
    });
    assert.equal(sync.statusCode, 200, sync.body.slice(0, 200));
    assert.equal(
      (await t.request(acct.key, 'POST', `/v2/${ep}/runsync`, body(21), { 'content-type': 'application/json' }))
        .statusCode,
      413,
    );
    await t.services.jobs.client.purgeQueue(ep);
  });

  test("an unknown endpoint, another account's endpoint and an unknown job answer 404", async () => {
    const theirs = await newEndpoint(other.accountId, 'theirs');
    assert.equal((await t.request(acct.key, 'POST', `/v2/nosuchendpoint/run`, { input: {} })).statusCode, 404);
    assert.equal((await t.request(acct.key, 'POST', `/v2/${theirs}/run`, { input: {} })).statusCode, 404);
    assert.equal((await t.request(acct.key, 'GET', `/v2/${theirs}/health`)).statusCode, 404);
    assert.equal((await t.request(acct.key, 'GET', `/v2/${ep}/status/nosuchjob`)).statusCode, 404);
    const { id } = json(await t.request(other.key, 'POST', `/v2/${theirs}/run`, { input: {} }));
    const res = await t.request(acct.key, 'GET', `/v2/${ep}/status/${id}`);
    assert.equal(res.statusCode, 404, "a job of another account is not visible through one's own endpoint");
  });

  test('a wait that is not a number is a 400', async () => {
    const res = await t.request(acct.key, 'GET', `/v2/${ep}/status-sync/x?wait=soon`);
    assert.equal(res.statusCode, 400);
  });
});

describe('runsync, status-sync and stream', () => {
  let ep: string;
  before(async () => {
    ep = await newEndpoint(acct.accountId, 'sync');
  });

  test('runsync answers the finished job when a worker completes it within wait', async () => {
    const pending = t.request(acct.key, 'POST', `/v2/${ep}/runsync?wait=10000`, { input: { x: 1 } });
    await work(ep, { output: 'done' });
    const res = await pending;
    assert.equal(res.statusCode, 200);
    assert.equal(json(res).status, 'COMPLETED');
    assert.equal(json(res).output, 'done');
  });

  test('runsync answers only id and status when the job is not done within wait', async () => {
    const started = performance.now();
    const res = await t.request(acct.key, 'POST', `/v2/${ep}/runsync?wait=1`, { input: {} });
    assert.ok(performance.now() - started >= 900, 'wait is raised to its 1000 ms minimum');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(Object.keys(json(res)).sort(), ['id', 'status']);
    assert.equal(json(res).status, 'IN_QUEUE');
    await t.services.jobs.client.purgeQueue(ep);
  });

  test('status-sync waits for the terminal state', async () => {
    const { id } = json(await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: {} }));
    const pending = t.request(acct.key, 'GET', `/v2/${ep}/status-sync/${id}?wait=10000`);
    await work(ep, { error: 'boom' });
    const view = json(await pending);
    assert.equal(view.status, 'FAILED');
    assert.equal(view.error, 'boom');
  });

  test('stream always carries a stream list, and drains chunks once', async () => {
    const { id } = json(await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: {} }));
    let res = await t.request(acct.key, 'GET', `/v2/${ep}/stream/${id}?wait=0`);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json(res), { id, status: 'IN_QUEUE', stream: [] });
    const [job] = await t.services.jobs.worker.take(ep, 'w-stream');
    await t.services.jobs.worker.appendStream('w-stream', job!.id, { output: 'a' });
    await t.services.jobs.worker.appendStream('w-stream', job!.id, { output: { b: 2 } });
    res = await t.request(acct.readKey, 'GET', `/v2/${ep}/stream/${id}`);
    assert.deepEqual(json(res).stream, [{ output: 'a' }, { output: { b: 2 } }]);
    assert.equal(json(res).status, 'IN_PROGRESS');
    await t.services.jobs.worker.complete('w-stream', job!.id, { output: [] });
    res = await t.request(acct.key, 'POST', `/v2/${ep}/stream/${id}`);
    assert.deepEqual(json(res), { id, status: 'COMPLETED', stream: [] });
  });
});

describe('cancel, retry, purge-queue and health', () => {
  let ep: string;
  before(async () => {
    ep = await newEndpoint(acct.accountId, 'ops');
  });

  test('cancel with no body or {} answers 200 CANCELLED', async () => {
    for (const body of [undefined, {}]) {
      const { id } = json(await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: {} }));
      const res = await t.request(acct.key, 'POST', `/v2/${ep}/cancel/${id}`, body);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(json(res), { id, status: 'CANCELLED' });
    }
    const empty = await t.request(acct.key, 'POST', `/v2/${ep}/cancel/nosuchjob`, '', {
      'content-type': 'application/json',
    });
    assert.equal(empty.statusCode, 404, 'an empty JSON body is no body');
  });

  test('retry requeues a failed job with the same id, and refuses a queued one with 409', async () => {
    const { id } = json(await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: { again: true } }));
    await work(ep, { error: 'first try failed' });
    const res = await t.request(acct.key, 'POST', `/v2/${ep}/retry/${id}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(json(res), { id, status: 'IN_QUEUE' });
    const conflict = await t.request(acct.key, 'POST', `/v2/${ep}/retry/${id}`);
    assert.equal(conflict.statusCode, 409);
    const [job] = await t.services.jobs.worker.take(ep, 'w2');
    assert.deepEqual(job?.input, { again: true });
    await t.services.jobs.worker.complete('w2', id, { output: 1 });
  });

  test('purge-queue removes the queued jobs and answers how many', async () => {
    for (let i = 0; i < 3; i++) await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: { i } });
    const res = await t.request(acct.key, 'POST', `/v2/${ep}/purge-queue`);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json(res), { removed: 3, status: 'completed' });
  });

  test('health counts jobs by state and workers by what they do', async () => {
    await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: {} });
    await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: {} });
    await t.request(null, 'GET', `/v2/${ep}/job-take/w-health`, undefined, { authorization: acct.key });
    await t.request(null, 'GET', `/v2/${ep}/ping/w-idle`, undefined, { authorization: acct.key });
    const res = await t.request(acct.readKey, 'GET', `/v2/${ep}/health`);
    assert.equal(res.statusCode, 200);
    const health = json(res);
    assert.deepEqual(
      Object.keys(health.jobs)
        .filter((k) => ['completed', 'failed', 'inProgress', 'inQueue', 'retried'].includes(k))
        .sort(),
      ['completed', 'failed', 'inProgress', 'inQueue', 'retried'],
    );
    assert.equal(health.jobs.inQueue, 1);
    assert.equal(health.jobs.inProgress, 1);
    assert.equal(health.jobs.retried, 1, 'the retried job of the previous test');
    assert.deepEqual(health.workers, {
      idle: 1,
      running: 1,
      initializing: 0,
      ready: 2,
      throttled: 0,
      unhealthy: 0,
      suspended: 0,
    });
  });
});

describe('openai passthrough', () => {
  test('POST /openai/v1/… becomes a job with openai_route and openai_input and answers the output', async () => {
    const ep = await newEndpoint(acct.accountId, 'openai');
    const pending = t.request(acct.key, 'POST', `/v2/${ep}/openai/v1/chat/completions`, {
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const [job] = await t.services.jobs.worker.take(ep, 'w-openai', { waitMs: 5000 });
    assert.deepEqual(job?.input, {
      openai_route: '/v1/chat/completions',
      openai_input: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
    });
    await t.services.jobs.worker.complete('w-openai', job.id, { output: [{ id: 'chatcmpl-1', choices: [] }] });
    const res = await pending;
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json(res), { id: 'chatcmpl-1', choices: [] });
  });

  test("GET /openai/v1/models (the openai client's models.list()) reaches a worker as a job with openai_route /v1/models and answers its list", async () => {
    const ep = await newEndpoint(acct.accountId, 'openai-models');
    // openai-python (000f030a, src/openai/_base_client.py default_headers): a GET with no body,
    // JSON Accept and Content-Type, its user agent and platform headers
    const pending = t.app.inject({
      method: 'GET',
      url: `/v2/${ep}/openai/v1/models`,
      headers: {
        authorization: `Bearer ${acct.key}`,
        accept: 'application/json',
        'content-type': 'application/json',
        'user-agent': 'OpenAI/Python 2.14.0',
        'x-stainless-lang': 'python',
        'x-stainless-retry-count': '0',
      },
    });
    const [job] = await t.services.jobs.worker.take(ep, 'w-models', { waitMs: 5000 });
    assert.deepEqual(job?.input, { openai_route: '/v1/models', openai_input: {} });
    const list = {
      object: 'list',
      data: [{ id: 'mistralai/Mistral-7B-Instruct-v0.2', object: 'model', owned_by: 'vllm' }],
    };
    await t.services.jobs.worker.complete('w-models', job.id, { output: [list] });
    const res = await pending;
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(json(res), list);
    // models.retrieve(id) is a GET below it
    const one = t.request(acct.key, 'GET', `/v2/${ep}/openai/v1/models/mistralai%2FMistral-7B-Instruct-v0.2`);
    const [next] = await t.services.jobs.worker.take(ep, 'w-models', { waitMs: 5000 });
    assert.equal(
      (next?.input as { openai_route: string }).openai_route,
      '/v1/models/mistralai/Mistral-7B-Instruct-v0.2',
    );
    await t.services.jobs.worker.complete('w-models', next!.id, { output: [list.data[0]] });
    assert.deepEqual(json(await one), list.data[0]);
  });

  test('a streaming OpenAI request answers server-sent events ending in [DONE]', async () => {
    const ep = await newEndpoint(acct.accountId, 'openai-sse');
    const pending = t.request(acct.key, 'POST', `/v2/${ep}/openai/v1/completions`, {
      model: 'm',
      prompt: 'x',
      stream: true,
    });
    const [job] = await t.services.jobs.worker.take(ep, 'w-sse', { waitMs: 5000 });
    await t.services.jobs.worker.appendStream('w-sse', job!.id, { output: { choices: [{ text: 'a' }] } });
    await t.services.jobs.worker.appendStream('w-sse', job!.id, { output: 'data: {"choices":[{"text":"b"}]}\n\n' });
    await t.services.jobs.worker.complete('w-sse', job!.id, { output: [] });
    const res = await pending;
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /text\/event-stream/);
    assert.equal(res.body, 'data: {"choices":[{"text":"a"}]}\n\ndata: {"choices":[{"text":"b"}]}\n\ndata: [DONE]\n\n');
  });

  test('a failed OpenAI job is a problem naming the error', async () => {
    const ep = await newEndpoint(acct.accountId, 'openai-fail');
    const pending = t.request(acct.key, 'POST', `/v2/${ep}/openai/v1/embeddings`, { input: 'x' });
    await work(ep, { error: 'model not loaded' }, 'w-of');
    const res = await pending;
    assert.equal(res.statusCode, 500);
    assert.match(json(res).detail, /model not loaded/);
  });
});

describe('rate limits (spec 8.1)', () => {
  test('the REST per-key limiter does not count job API calls', async () => {
    const ep = await newEndpoint(acct.accountId, 'no-rest-limit');
    const { id } = json(await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: {} }));
    for (let i = 0; i < 12; i++)
      assert.equal((await t.request(acct.key, 'GET', `/v2/${ep}/status/${id}`)).statusCode, 200);
  });

  test('a third purge-queue within 10 seconds is refused with 429, Retry-After and a detail naming the operation', async () => {
    const ep = await newEndpoint(acct.accountId, 'purge-limit');
    assert.equal((await t.request(acct.key, 'POST', `/v2/${ep}/purge-queue`)).statusCode, 200);
    assert.equal((await t.request(acct.key, 'POST', `/v2/${ep}/purge-queue`)).statusCode, 200);
    const res = await t.request(acct.key, 'POST', `/v2/${ep}/purge-queue`);
    assert.equal(res.statusCode, 429);
    assert.match(String(res.headers['content-type']), /application\/problem\+json/);
    assert.match(String(res.headers['retry-after']), /^\d+$/);
    assert.match(json(res).detail, /\/purge-queue.*2 requests per 10 seconds/);
    // limits are per endpoint and per operation
    const ep2 = await newEndpoint(acct.accountId, 'purge-limit-2');
    assert.equal((await t.request(acct.key, 'POST', `/v2/${ep2}/purge-queue`)).statusCode, 200);
    assert.equal((await t.request(acct.key, 'GET', `/v2/${ep}/health`)).statusCode, 200);
    // the window turns with the clock
    clock.advance(10_000);
    assert.equal((await t.request(acct.key, 'POST', `/v2/${ep}/purge-queue`)).statusCode, 200);
  });

  test("the limits count a user's keys together: a second key does not get a fresh quota", async () => {
    const ep = await newEndpoint(acct.accountId, 'purge-limit-keys');
    const { key: other } = await t.services.accounts.createKey(acct.accountId, { scope: 'write', name: 'second key' });
    assert.equal((await t.request(acct.key, 'POST', `/v2/${ep}/purge-queue`)).statusCode, 200);
    assert.equal((await t.request(other, 'POST', `/v2/${ep}/purge-queue`)).statusCode, 200);
    assert.equal((await t.request(other, 'POST', `/v2/${ep}/purge-queue`)).statusCode, 429);
    assert.equal((await t.request(acct.key, 'POST', `/v2/${ep}/purge-queue`)).statusCode, 429);
  });

  test('answered requests free their concurrency slot', async () => {
    const ep = await newEndpoint(acct.accountId, 'cancel-concurrency');
    // cancel allows 20 in flight and 100 per 10 s: 30 sequential calls never hold more than one slot
    for (let i = 0; i < 30; i++)
      assert.equal((await t.request(acct.key, 'POST', `/v2/${ep}/cancel/missing-${i}`)).statusCode, 404);
  });

  test('requests over the concurrency cap are refused while the others are in flight', async () => {
    const ep = await newEndpoint(acct.accountId, 'status-sync-concurrency');
    const { id } = json(await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input: {} }));
    // status allows 400 in flight: hold 400 status-sync long-polls open
    const held = Array.from({ length: 400 }, () =>
      t.request(acct.key, 'GET', `/v2/${ep}/status-sync/${id}?wait=20000`),
    );
    // each is in flight from its start, and waiting once it got past the checks
    await until('the 400 long-polls to wait', () => t.services.jobs.signals.waiting('job', id) === 400);
    const refused = await t.request(acct.key, 'GET', `/v2/${ep}/status/${id}`);
    assert.equal(refused.statusCode, 429, refused.body);
    assert.match(json(refused).detail, /in flight/);
    await t.services.jobs.client.cancel(acct.accountId, ep, id);
    for (const r of await Promise.all(held)) assert.equal(r.statusCode, 200);
    assert.equal((await t.request(acct.key, 'GET', `/v2/${ep}/status/${id}`)).statusCode, 200, 'slots are free again');
  });
});
