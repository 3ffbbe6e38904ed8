// The worker protocol (wire-protocol §1) over in-process HTTP, as the runpod-python SDK speaks it:
// raw key, JSON bodies declared as form-urlencoded, long-polls, idempotent posts.
import { test, before, after, beforeEach, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { FakeClock } from '../src/domain/clock.js';
import { stopKey } from '../src/jobs/job-signals.js';
import { until } from './support/eventually.js';

let t: TestApp;
let clock: FakeClock;
let acct: { accountId: string; key: string; readKey: string };
let ep: string;

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** A worker call: raw key, no Bearer. */
const worker = (method: 'GET' | 'POST', path: string, body?: unknown, key = acct.key) =>
  t.request(null, method, `/v2/${ep}/${path}`, body === undefined ? undefined : JSON.stringify(body), {
    authorization: key,
    ...(body === undefined ? {} : FORM),
  });

const submit = async (input: Record<string, unknown> = {}, policy?: Record<string, unknown>): Promise<string> => {
  const res = await t.request(acct.key, 'POST', `/v2/${ep}/run`, { input, ...(policy ? { policy } : {}) });
  assert.equal(res.statusCode, 200, res.body);
  return json(res).id;
};
const status = async (id: string) => json(await t.request(acct.key, 'GET', `/v2/${ep}/status/${id}`));
const health = async () => json(await t.request(acct.key, 'GET', `/v2/${ep}/health`));

before(async () => {
  clock = new FakeClock(Date.UTC(2026, 0, 1));
  t = await createTestApp({
    clock,
    file: { jobs: { takeWaitMs: 100, stopWaitMs: 100, heartbeatTimeoutMs: 30_000, retryBudget: 1 } },
  });
  acct = await t.newAccount('worker-owner');
});
after(() => t.close());
beforeEach(async () => {
  const template = await t.services.templates.create(acct.accountId, {
    name: `tpl-${Math.random()}`,
    imageName: 'worker:dev',
    isServerless: true,
  });
  ep = (await t.services.endpoints.create(acct.accountId, { name: 'ep', templateId: template.id, gpuIds: 'ADA_24' }))
    .id;
});

describe('take', () => {
  test('job-take hands out the oldest queued job as JSON with its input and extra keys', async () => {
    const first = await submit({ n: 1 });
    await submit({ n: 2 });
    const res = await worker('GET', 'job-take/w1?gpu=RTX&job_in_progress=0');
    assert.equal(res.statusCode, 200);
    const job = json(res);
    assert.equal(job.id, first);
    assert.deepEqual(job.input, { n: 1 });
    assert.equal(typeof job.policy.executionTimeout, 'number');
    assert.equal((await status(first)).status, 'IN_PROGRESS');
  });

  test('job-take answers 204 when nothing is queued within the wait', async () => {
    const res = await worker('GET', 'job-take/w1?job_in_progress=0');
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, '');
  });

  test('a take waiting on an empty queue gets a job submitted meanwhile', async () => {
    const slow = await createTestApp({ clock, file: { jobs: { takeWaitMs: 10_000 } } });
    try {
      const owner = await slow.newAccount('long-poller');
      const template = await slow.services.templates.create(owner.accountId, {
        name: 'tpl',
        imageName: 'w',
        isServerless: true,
      });
      const id = (
        await slow.services.endpoints.create(owner.accountId, { name: 'ep', templateId: template.id, gpuIds: 'ADA_24' })
      ).id;
      const pending = slow.request(null, 'GET', `/v2/${id}/job-take/w1`, undefined, { authorization: owner.key });
      await until('the take to wait', () => slow.services.jobs.signals.waiting('work', id) === 1);
      const submitted = json(await slow.request(owner.key, 'POST', `/v2/${id}/run`, { input: { late: true } })).id;
      const res = await pending;
      assert.equal(res.statusCode, 200);
      assert.equal(json(res).id, submitted);
    } finally {
      await slow.close();
    }
  });

  test('job-take-batch answers a JSON array of up to batch_size jobs', async () => {
    const ids = [await submit(), await submit(), await submit()];
    const res = await worker('GET', 'job-take-batch/w1?gpu=x&job_in_progress=0&batch_size=2');
    assert.equal(res.statusCode, 200);
    const jobs = json(res);
    assert.ok(Array.isArray(jobs));
    assert.deepEqual(
      jobs.map((j: { id: string }) => j.id),
      ids.slice(0, 2),
    );
    assert.equal((await worker('GET', 'job-take-batch/w1?batch_size=5')).statusCode, 200);
    assert.equal((await worker('GET', 'job-take-batch/w1?batch_size=5')).statusCode, 204);
  });

  test("a key of another account, or a read key, cannot take the endpoint's jobs", async () => {
    await submit();
    const stranger = await t.newAccount();
    assert.equal((await worker('GET', 'job-take/w1', undefined, stranger.key)).statusCode, 404);
    assert.equal((await worker('GET', 'job-take/w1', undefined, acct.readKey)).statusCode, 403);
    assert.equal((await worker('GET', 'job-take/w1', undefined, 'nonsense')).statusCode, 401);
  });

  test('a HEAD request never takes a job', async () => {
    const id = await submit();
    const res = await t.request(null, 'HEAD', `/v2/${ep}/job-take/w1`, undefined, { authorization: acct.key });
    assert.equal(res.statusCode, 404);
    assert.equal((await status(id)).status, 'IN_QUEUE');
  });

  test('an unreplaced $ID placeholder as worker id is a 400 that says so', async () => {
    const res = await worker('GET', 'job-take/$ID');
    assert.equal(res.statusCode, 400);
    assert.match(json(res).detail, /placeholder/);
  });
});

describe('results', () => {
  test('a result posted as form-urlencoded JSON completes the job', async () => {
    const id = await submit({ q: 'x' });
    await worker('GET', 'job-take/w1');
    const res = await worker('POST', `job-done/w1/${id}?gpu=x&isStream=false`, { output: { a: [1, 2] } });
    assert.equal(res.statusCode, 200, res.body);
    const view = await status(id);
    assert.equal(view.status, 'COMPLETED');
    assert.deepEqual(view.output, { a: [1, 2] });
  });

  test('the job id may come as ?id=', async () => {
    const id = await submit();
    await worker('GET', 'job-take/w1');
    assert.equal((await worker('POST', `job-done/w1?gpu=x&id=${id}&isStream=false`, { output: 7 })).statusCode, 200);
    assert.equal((await status(id)).output, 7);
  });

  test('a repeated ?id= is a 400 naming the job id, not a 500, and the job stays running', async () => {
    const id = await submit();
    await worker('GET', 'job-take/w1');
    const res = await worker('POST', `job-done/w1?id=${id}&id=${id}`, { output: 7 });
    assert.equal(res.statusCode, 400);
    assert.equal(json(res).code, 'INVALID_PARAMETER');
    assert.match(json(res).detail, /job id/);
    assert.equal((await status(id)).status, 'IN_PROGRESS');
  });

  test('an error post fails the job, and error wins over output', async () => {
    const id = await submit();
    await worker('GET', 'job-take/w1');
    const traceback = JSON.stringify({ error_type: 'ValueError', error_message: 'bad', error_traceback: '...' });
    await worker('POST', `job-done/w1/${id}?isStream=false`, { output: 'ignored', error: traceback });
    const view = await status(id);
    assert.equal(view.status, 'FAILED');
    assert.equal(view.error, traceback);
    assert.equal(view.output, undefined);
  });

  test('a repeated result post answers 200 and changes nothing', async () => {
    const id = await submit();
    await worker('GET', 'job-take/w1');
    assert.equal((await worker('POST', `job-done/w1/${id}`, { output: 'first' })).statusCode, 200);
    const again = await worker('POST', `job-done/w1/${id}`, { output: 'second' });
    assert.equal(again.statusCode, 200);
    assert.equal(json(again).accepted, false);
    assert.equal((await status(id)).output, 'first');
  });

  test('progress shows as output while running; a late progress post after the result is ignored', async () => {
    const id = await submit();
    await worker('GET', 'job-take/w1');
    await worker('POST', `job-done/w1/${id}?isStream=false`, { status: 'IN_PROGRESS', output: { pct: 50 } });
    let view = await status(id);
    assert.equal(view.status, 'IN_PROGRESS');
    assert.deepEqual(view.output, { pct: 50 });
    await worker('POST', `job-done/w1/${id}?isStream=false`, { output: 'final' });
    const late = await worker('POST', `job-done/w1/${id}?isStream=false`, {
      status: 'IN_PROGRESS',
      output: { pct: 90 },
    });
    assert.equal(late.statusCode, 200);
    view = await status(id);
    assert.equal(view.status, 'COMPLETED');
    assert.equal(view.output, 'final');
  });

  test('stream chunks are buffered for the client; the final post ends the job', async () => {
    const id = await submit();
    await worker('GET', 'job-take/w1');
    for (const chunk of ['a', 'b'])
      assert.equal((await worker('POST', `job-stream/w1/${id}?isStream=false`, { output: chunk })).statusCode, 200);
    await worker('POST', `job-done/w1/${id}?isStream=true`, { output: [] });
    const res = json(await t.request(acct.key, 'GET', `/v2/${ep}/stream/${id}`));
    assert.equal(res.status, 'COMPLETED');
    assert.deepEqual(res.stream, [{ output: 'a' }, { output: 'b' }]);
  });

  test('a result for a job that was never issued is a 404', async () => {
    assert.equal((await worker('POST', 'job-done/w1/nosuchjob', { output: 1 })).statusCode, 404);
  });
});

describe('stop channel', () => {
  test("cancelling a running job puts it on its worker's job-stop channel once; a later result is ignored", async () => {
    const id = await submit();
    await worker('GET', 'job-take/w-stop?gpu=x');
    assert.equal((await worker('GET', 'job-stop/w-stop?gpu=x')).statusCode, 204, 'nothing to stop yet');
    assert.deepEqual(json(await t.request(acct.key, 'POST', `/v2/${ep}/cancel/${id}`, {})), {
      id,
      status: 'CANCELLED',
    });
    const res = await worker('GET', 'job-stop/w-stop?gpu=x');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json(res), { jobsToStop: [id] });
    assert.equal((await worker('GET', 'job-stop/w-stop')).statusCode, 204, 'each stop is told once');
    assert.equal((await worker('POST', `job-done/w-stop/${id}`, { output: 'too late' })).statusCode, 200);
    assert.equal((await status(id)).status, 'CANCELLED');
  });

  test('a job past its execution timeout is TIMED_OUT by the timekeeper and put on the stop channel', async () => {
    const id = await submit({}, { executionTimeout: 5000 });
    await worker('GET', 'job-take/w-slow');
    clock.advance(5001);
    await t.services.timekeeper.tick();
    assert.equal((await status(id)).status, 'TIMED_OUT');
    assert.deepEqual(json(await worker('GET', 'job-stop/w-slow')), { jobsToStop: [id] });
  });
});

describe('heartbeats', () => {
  test('a ping records the worker; health counts it idle, or running while it holds a job', async () => {
    assert.equal((await worker('GET', 'ping/w-ping?job_id=&runpod_version=1.7.0')).statusCode, 200);
    assert.deepEqual((await health()).workers, {
      idle: 1,
      running: 0,
      initializing: 0,
      ready: 1,
      throttled: 0,
      unhealthy: 0,
      suspended: 0,
    });
    const id = await submit();
    await worker('GET', 'job-take/w-ping');
    await worker('GET', `ping/w-ping?job_id=${id}&runpod_version=1.7.0`);
    assert.deepEqual((await health()).workers, {
      idle: 0,
      running: 1,
      initializing: 0,
      ready: 1,
      throttled: 0,
      unhealthy: 0,
      suspended: 0,
    });
  });

  test('a ping with a repeated job_id is answered like one without job ids, not with a 500', async () => {
    const res = await worker('GET', 'ping/w-repeat?job_id=a&job_id=b');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json(res), { status: 'ok' });
    const workers = (await health()).workers;
    assert.equal(workers.idle, 1);
    assert.equal(workers.running, 0);
  });

  test('a worker silent past the heartbeat timeout is lost: its job goes back to the queue, then fails after the retry budget', async () => {
    const id = await submit({ keep: 'me' });
    await worker('GET', 'job-take/w-dies');
    clock.advance(20_000);
    await t.services.timekeeper.tick();
    assert.equal((await status(id)).status, 'IN_PROGRESS', 'not yet lost at 20 s');
    clock.advance(11_000);
    const pass = await t.services.timekeeper.tick();
    assert.deepEqual(
      pass.lostWorkers.find((w) => w.id === 'w-dies'),
      { id: 'w-dies', requeued: [id], failed: [] },
    );
    const view = await status(id);
    assert.equal(view.status, 'IN_QUEUE');
    assert.equal(view.retries, 1);
    assert.equal((await health()).workers.ready, 0);
    // a late result from the lost worker changes nothing
    assert.equal((await worker('POST', `job-done/w-dies/${id}`, { output: 'zombie' })).statusCode, 200);
    assert.equal((await status(id)).status, 'IN_QUEUE');
    // the budget (1 in this test) is spent on the second loss
    const again = json(await worker('GET', 'job-take/w-dies-too'));
    assert.deepEqual(again.input, { keep: 'me' });
    clock.advance(31_000);
    await t.services.timekeeper.tick();
    assert.equal((await status(id)).status, 'FAILED');
  });

  test('regular pings keep a worker alive across the heartbeat timeout', async () => {
    const id = await submit();
    await worker('GET', 'job-take/w-pings');
    for (let i = 0; i < 4; i++) {
      clock.advance(10_000);
      await worker('GET', `ping/w-pings?job_id=${id}`);
      await t.services.timekeeper.tick();
    }
    assert.equal((await status(id)).status, 'IN_PROGRESS');
  });

  test('a worker holding a long-poll open is alive even without pings', async () => {
    const slow = await createTestApp({ clock, file: { jobs: { stopWaitMs: 5000 } } });
    try {
      const owner = await slow.newAccount('poller');
      const template = await slow.services.templates.create(owner.accountId, {
        name: 'tpl',
        imageName: 'w',
        isServerless: true,
      });
      const id = (
        await slow.services.endpoints.create(owner.accountId, { name: 'ep', templateId: template.id, gpuIds: 'ADA_24' })
      ).id;
      await slow.request(owner.key, 'POST', `/v2/${id}/run`, { input: {} });
      await slow.request(null, 'GET', `/v2/${id}/job-take/w-poll`, undefined, { authorization: owner.key });
      const stop = slow.request(null, 'GET', `/v2/${id}/job-stop/w-poll`, undefined, { authorization: owner.key });
      await until(
        'the stop request to wait',
        () => slow.services.jobs.signals.waiting('stop', stopKey(id, 'w-poll')) === 1,
      );
      clock.advance(60_000);
      const pass = await slow.services.timekeeper.tick();
      assert.deepEqual(pass.lostWorkers, []);
      await stop;
    } finally {
      await slow.close();
    }
  });

  test('an unhealthy report marks the worker unhealthy and requeues its job at once', async () => {
    const id = await submit();
    await worker('GET', 'job-take/w-sick');
    const res = await worker('GET', 'ping/w-sick?status=unhealthy&check=gpu&reason=no+cuda');
    assert.equal(res.statusCode, 200);
    assert.equal((await status(id)).status, 'IN_QUEUE');
    assert.equal((await health()).workers.unhealthy, 1);
  });
});

describe('workers of different endpoints that chose the same id', () => {
  /** A second account with its own endpoint, whose worker also calls itself `twin`. */
  async function otherEndpoint() {
    const other = await t.newAccount(`other-${Math.random()}`);
    const template = await t.services.templates.create(other.accountId, {
      name: 'tpl',
      imageName: 'worker:dev',
      isServerless: true,
    });
    const otherEp = (
      await t.services.endpoints.create(other.accountId, { name: 'ep', templateId: template.id, gpuIds: 'ADA_24' })
    ).id;
    const call = (method: 'GET' | 'POST', path: string, body?: unknown) =>
      t.request(null, method, `/v2/${otherEp}/${path}`, body === undefined ? undefined : JSON.stringify(body), {
        authorization: other.key,
        ...(body === undefined ? {} : FORM),
      });
    return { call, otherEp, other };
  }

  test("one never receives the other's stop notices", async () => {
    const id = await submit();
    await worker('GET', 'job-take/twin');
    const { call } = await otherEndpoint();
    await t.request(acct.key, 'POST', `/v2/${ep}/cancel/${id}`, {});
    assert.equal((await call('GET', 'job-stop/twin')).statusCode, 204, "the other endpoint's twin is told nothing");
    assert.deepEqual(
      json(await worker('GET', 'job-stop/twin')),
      { jobsToStop: [id] },
      'the notice is still there for its own worker',
    );
  });

  test("one reporting itself unhealthy leaves the other's running job alone", async () => {
    const id = await submit();
    await worker('GET', 'job-take/twin');
    const { call } = await otherEndpoint();
    assert.equal((await call('GET', 'ping/twin?status=unhealthy')).statusCode, 200);
    assert.equal((await status(id)).status, 'IN_PROGRESS');
  });

  test("one posting to a job of the other's endpoint changes nothing and learns nothing: 404", async () => {
    const id = await submit();
    await worker('GET', 'job-take/twin');
    const { call } = await otherEndpoint();
    assert.equal((await call('POST', `job-stream/twin/${id}`, { output: 'foreign' })).statusCode, 404);
    assert.equal(
      (await call('POST', `job-done/twin/${id}`, { status: 'IN_PROGRESS', output: 'foreign progress' })).statusCode,
      404,
    );
    assert.equal((await call('POST', `job-done/twin/${id}`, { output: 'foreign result' })).statusCode, 404);
    const view = await status(id);
    assert.equal(view.status, 'IN_PROGRESS');
    assert.equal(view.output, undefined);
    assert.deepEqual(json(await t.request(acct.key, 'GET', `/v2/${ep}/stream/${id}`)).stream, []);
    assert.equal(
      json(await worker('POST', `job-done/twin/${id}`, { output: 'own result' })).accepted,
      true,
      'its own worker still finishes it',
    );
    assert.equal((await status(id)).output, 'own result');
  });
});

describe('gantry worker env', () => {
  test("prints export lines with a fresh worker id and a new key that can take the endpoint's jobs and do nothing else", async () => {
    const { runGantry } = await import('./support/spawn-gantry.js');
    const out = runGantry(['worker', 'env', ep, '--data-dir', t.config.dataDir, '--url', 'http://127.0.0.1:9999']);
    assert.equal(out.status, 0, out.stderr);
    const env = Object.fromEntries(
      out.stdout
        .trim()
        .split('\n')
        .map((line) => {
          const m = /^export ([A-Z_]+)='(.*)'$/.exec(line);
          assert.ok(m, `not an export line: ${line}`);
          return [m[1]!, m[2]!];
        }),
    );
    assert.equal(env.RUNPOD_WEBHOOK_GET_JOB, `http://127.0.0.1:9999/v2/${ep}/job-take/$ID?gpu=NVIDIA+GeForce+RTX+4090`);
    assert.equal(env.RUNPOD_WEBHOOK_PING, `http://127.0.0.1:9999/v2/${ep}/ping/$RUNPOD_POD_ID`);
    assert.match(env.RUNPOD_POD_ID!, /^local-[a-z0-9]+$/);
    assert.equal(env.RUNPOD_SKIP_GPU_CHECK, 'true');
    const id = await submit();
    const res = await t.request(null, 'GET', `/v2/${ep}/job-take/${env.RUNPOD_POD_ID}`, undefined, {
      authorization: env.RUNPOD_AI_API_KEY!,
    });
    assert.equal(res.statusCode, 200);
    assert.equal(json(res).id, id);
    const pods = await t.request(null, 'GET', '/v2/pods', undefined, { authorization: env.RUNPOD_AI_API_KEY! });
    assert.equal(pods.statusCode, 403, 'the key is in the worker scope, bound to the endpoint');
    assert.equal(
      (
        await t.request(null, 'POST', `/v2/${ep}/run`, JSON.stringify({ input: {} }), {
          authorization: env.RUNPOD_AI_API_KEY!,
          'content-type': 'application/json',
        })
      ).statusCode,
      403,
    );
    assert.notEqual(runGantry(['worker', 'env', 'nosuchendpoint', '--data-dir', t.config.dataDir]).status, 0);
  });
});
