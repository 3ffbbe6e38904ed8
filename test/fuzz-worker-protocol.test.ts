// A hostile tenant driving the worker protocol with its own write key: floods of pings with fresh
// worker ids, one worker calling far faster than any real one, calls naming another account's
// endpoint, and made-up workers meant to raise the dynamic job API limits.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { FakeClock } from '../src/domain/clock.js';
import { buildApp } from '../src/http/app.js';
import { loggerOptions } from '../src/http/app.js';

async function setup(
  file: Record<string, unknown> = {},
): Promise<{ t: TestApp; clock: FakeClock; key: string; accountId: string; ep: string }> {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const t = await createTestApp({ clock, file: { jobs: { takeWaitMs: 20, stopWaitMs: 20, ...file } } });
  const { key, accountId } = await t.newAccount('flooder');
  const template = await t.services.templates.create(accountId, {
    name: 'tpl',
    imageName: 'worker:dev',
    isServerless: true,
  });
  const ep = (await t.services.endpoints.create(accountId, { name: 'ep', templateId: template.id, gpuIds: 'ADA_24' }))
    .id;
  return { t, clock, key, accountId, ep };
}

const ping = (t: TestApp, key: string, ep: string, workerId: string, query = '') =>
  t.request(null, 'GET', `/v2/${ep}/ping/${workerId}${query}`, undefined, { authorization: key });

describe('worker protocol floods', () => {
  const apps: TestApp[] = [];
  after(async () => {
    for (const t of apps) await t.close();
  });

  // 20,000 requests take a while on a busy machine: the bound is on the work, not on the time.
  test(
    '20,000 pings with fresh worker ids leave a bounded number of rows, answer 429 with Retry-After past the bound, and write no log line each',
    { timeout: 600_000 },
    async () => {
      const { t, key, ep } = await setup();
      apps.push(t);
      const lines: string[] = [];
      const sink = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      });
      const logged = await buildApp(t.services, { logger: pino(loggerOptions('info'), sink) });
      try {
        const codes = new Map<number, number>();
        let retryAfter: string | undefined;
        for (let i = 0; i < 20_000; i += 250) {
          const batch = await Promise.all(
            Array.from({ length: 250 }, (_, j) =>
              logged.inject({
                method: 'GET',
                url: `/v2/${ep}/ping/fresh-${i + j}?job_id=x`,
                headers: { authorization: key },
              }),
            ),
          );
          for (const res of batch) {
            codes.set(res.statusCode, (codes.get(res.statusCode) ?? 0) + 1);
            if (res.statusCode === 429) retryAfter ??= res.headers['retry-after'] as string;
          }
        }
        const cap = t.config.jobs.workerRateLimits.attachedWorkers;
        const rows = await t.services.db.kysely
          .selectFrom('workers')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('endpoint_id', '=', ep)
          .executeTakeFirstOrThrow();
        assert.ok(Number(rows.n) <= cap, `${rows.n} rows for at most ${cap} hand-attached workers`);
        assert.equal(codes.get(200), cap);
        assert.equal(codes.get(429), 20_000 - cap);
        assert.equal(retryAfter, String(t.config.jobs.heartbeatTimeoutMs / 1000));
        const perPing = lines.filter((l) => l.includes('/ping/'));
        assert.deepEqual(perPing.slice(0, 3), [], 'no request line per ping');
      } finally {
        await logged.close();
      }
    },
  );

  test('a worker calling faster than its limit gets 429 RATE_LIMITED with Retry-After, and its calls are admitted again in the next window', async () => {
    const { t, clock, key, ep } = await setup({ workerRateLimits: { perWorker: 50, perEndpoint: 1000 } });
    apps.push(t);
    for (let i = 0; i < 50; i++) assert.equal((await ping(t, key, ep, 'busy')).statusCode, 200);
    const refused = await t.request(null, 'GET', `/v2/${ep}/job-take/busy?job_in_progress=1`, undefined, {
      authorization: key,
    });
    assert.equal(refused.statusCode, 429);
    assert.match(String(refused.headers['content-type']), /application\/problem\+json/);
    assert.equal(json(refused).code, 'RATE_LIMITED');
    assert.match(json(refused).detail, /Worker busy of endpoint .* 50 worker-protocol calls within 10 seconds/);
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.equal((await ping(t, key, ep, 'other')).statusCode, 200, 'another worker of the endpoint is not held back');
    clock.advance(10_000);
    assert.equal((await ping(t, key, ep, 'busy')).statusCode, 200);
  });

  test('a worker over its limit still delivers the result of a job it holds; its progress posts, its takes and results for jobs it does not hold are refused 429', async () => {
    const { t, key, ep } = await setup({ workerRateLimits: { perWorker: 5, perEndpoint: 1000 } });
    apps.push(t);
    const worker = (method: 'GET' | 'POST', path: string, body?: unknown) =>
      t.request(null, method, `/v2/${ep}/${path}`, body, { authorization: key });
    const submit = async () => json(await t.request(key, 'POST', `/v2/${ep}/run`, { input: { n: 1 } })).id as string;
    const held = await submit();
    const other = await submit();
    const take = await worker('GET', 'job-take/w?job_in_progress=0');
    assert.equal(take.statusCode, 200);
    assert.equal(json(take).id, held);
    // the rest of the window's calls
    for (let i = 0; i < 4; i++) assert.equal((await worker('GET', 'ping/w')).statusCode, 200);
    assert.equal((await worker('GET', 'job-take/w?job_in_progress=1')).statusCode, 429, 'takes stay limited');
    const progress = await worker('POST', `job-done/w/${held}?isStream=false`, {
      status: 'IN_PROGRESS',
      output: '50%',
    });
    assert.equal(progress.statusCode, 429, 'progress updates stay limited');
    assert.equal(json(progress).code, 'RATE_LIMITED');
    assert.equal(
      (await worker('POST', `job-done/w/${other}?isStream=false`, { output: 'not mine' })).statusCode,
      429,
      'a result for a job the worker does not hold stays limited',
    );
    // another worker over its own limit cannot finish this worker's job either
    for (let i = 0; i < 5; i++) await worker('GET', 'ping/x');
    assert.equal((await worker('POST', `job-done/x/${held}?isStream=false`, { output: 'stolen' })).statusCode, 429);
    const result = await worker('POST', `job-done/w/${held}?isStream=false`, { output: { answer: 42 } });
    assert.equal(result.statusCode, 200, 'the result of the held job is never refused');
    assert.deepEqual(json(result), { id: held, status: 'COMPLETED', accepted: true });
    const status = json(await t.request(key, 'GET', `/v2/${ep}/status/${held}`));
    assert.equal(status.status, 'COMPLETED');
    assert.deepEqual(status.output, { answer: 42 });
    // once finished, a repeat of the same result is no longer a held job's: refused like any call
    assert.equal(
      (await worker('POST', `job-done/w/${held}?isStream=false`, { output: { answer: 42 } })).statusCode,
      429,
    );
    assert.equal(json(await t.request(key, 'GET', `/v2/${ep}/status/${other}`)).status, 'IN_QUEUE');
  });

  test("an endpoint's workers together are limited, and calls naming another account's endpoint spend only the caller's own budget", async () => {
    const { t, key, accountId, ep } = await setup({ workerRateLimits: { perWorker: 1000, perEndpoint: 100 } });
    apps.push(t);
    const attacker = await t.newAccount('attacker');
    for (let i = 0; i < 150; i++) await ping(t, attacker.key, ep, `w${i % 7}`);
    assert.equal(
      (await ping(t, key, ep, 'mine')).statusCode,
      200,
      "the attacker's calls through the victim's endpoint id never counted against the victim",
    );
    for (let i = 1; i < 100; i++) assert.equal((await ping(t, key, ep, `w${i % 5}`)).statusCode, 200);
    const refused = await ping(t, key, ep, 'fresh');
    assert.equal(refused.statusCode, 429);
    assert.match(json(refused).detail, /jobs\.workerRateLimits\.perEndpoint/);
    assert.ok(accountId);
  });

  test('pings from made-up workers do not raise the dynamic purge-queue limit', async () => {
    const { t, key, ep } = await setup();
    apps.push(t);
    for (let i = 0; i < 100; i++) assert.equal((await ping(t, key, ep, `fake-${i}`, '?job_id=j1')).statusCode, 200);
    await t.services.workers.refreshLiveCounts();
    const purges = [];
    for (let i = 0; i < 3; i++) purges.push((await t.request(key, 'POST', `/v2/${ep}/purge-queue`)).statusCode);
    assert.deepEqual(purges, [200, 200, 429], 'the base limit of 2 per 10 s holds');
  });
});
