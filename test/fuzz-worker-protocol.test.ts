// A hostile tenant driving the worker protocol with its own write key: floods of pings with fresh
// worker ids, one worker calling far faster than any real one, calls naming another account's
// endpoint, and made-up workers meant to raise the dynamic job API limits.
import { describe, test, before, after } from 'node:test';
import fc from 'fast-check';
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

describe("workers' reports of the jobs they hold", () => {
  const runs = Number(process.env.FUZZ_RUNS ?? 60);
  const SETTLE = 30_000;
  let t: TestApp;
  let clock: FakeClock;
  let key: string;
  let accountId: string;
  let ep: string;
  before(async () => {
    ({ t, clock, key, accountId } = await setup({
      heartbeatTimeoutMs: SETTLE,
      retryBudget: 1_000,
      // one worker id per run, all calling fast: neither the attached-workers cap nor the limits apply
      workerRateLimits: { attachedWorkers: 0, perWorker: 0, perEndpoint: 0 },
    }));
  });
  after(() => t.close());

  const worker = (path: string, body?: unknown) =>
    t.request(
      null,
      body === undefined ? 'GET' : 'POST',
      `/v2/${ep}/${path}`,
      body === undefined ? undefined : JSON.stringify(body),
      {
        authorization: key,
        ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
      },
    );
  const heldInStore = async (workerId: string): Promise<string[]> =>
    (
      await t.services.db.kysely
        .selectFrom('jobs')
        .select('id')
        .where('endpoint_id', '=', ep)
        .where('worker_id', '=', workerId)
        .where('status', '=', 'IN_PROGRESS')
        .execute()
    )
      .map((r) => r.id)
      .sort();

  /** One step of a worker speaking as the Python SDK does (concurrency 3), in any order. */
  const step = fc.oneof(
    { weight: 3, arbitrary: fc.constant({ kind: 'submit' as const }) },
    // `midway`: the heartbeat snapshots its list while the batch is being recorded, one job at a time
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('take' as const),
        batch: fc.integer({ min: 1, max: 3 }),
        midway: fc.boolean(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('give-up' as const), pick: fc.nat() }) },
    { weight: 2, arbitrary: fc.constant({ kind: 'snapshot' as const }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('deliver' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
    // A take answered while a running job's handler blocks the worker's event loop for `ms`: its
    // jobs are recorded only then, while the heartbeat (another process) pings on, fresh.
    {
      weight: 2,
      arbitrary: fc.record({ kind: fc.constant('blocked' as const), ms: fc.integer({ min: 0, max: 3 * SETTLE }) }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 2 * SETTLE }) }),
    },
  );

  test("a worker with the SDK's habits never loses a job it holds to its own reports, however its takes, stale pings, results and restarts interleave; what it dropped goes back once it is idle", async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        // Each run on an endpoint of its own, starting with jobs queued (batches have several to hand out).
        const template = await t.services.templates.create(accountId, {
          name: `tpl-${round}`,
          imageName: 'worker:dev',
          isServerless: true,
        });
        ep = (await t.services.endpoints.create(accountId, { name: 'ep', templateId: template.id, gpuIds: 'ADA_24' }))
          .id;
        const w = `sdk-${round++}`;
        steps = [{ kind: 'submit' }, { kind: 'submit' }, { kind: 'submit' }, { kind: 'submit' }, ...steps];
        /** The worker's memory: the jobs it holds, in the order it took them. */
        let held: string[] = [];
        /** Heartbeat snapshots built and not yet arrived (a ping arrives within the heartbeat timeout, or never). */
        let inFlight: Array<{ ids: string[]; builtAt: number }> = [];
        const sdkPing = async (ids: readonly string[]) => {
          const q = ids.length ? `job_id=${ids.join('%2C')}&` : '';
          assert.equal((await worker(`ping/${w}?${q}runpod_version=1.12.0`)).statusCode, 200);
        };
        const takeJobs = async (wanted: number): Promise<string[]> => {
          const busy = held.length > 0 ? 1 : 0;
          const res = await worker(
            wanted > 1
              ? `job-take-batch/${w}?batch_size=${wanted}&job_in_progress=${busy}`
              : `job-take/${w}?job_in_progress=${busy}`,
          );
          if (res.statusCode === 204) return [];
          assert.equal(res.statusCode, 200, res.body);
          const body = json<{ id: string } | Array<{ id: string }>>(res);
          return (Array.isArray(body) ? body : [body]).map((j) => j.id);
        };
        for (const s of steps) {
          switch (s.kind) {
            case 'blocked': {
              if (held.length === 0 || held.length >= 3) break; // blocked by a job it runs, with room for more
              const arriving = await takeJobs(3 - held.length);
              for (let waited = 0; waited < s.ms; waited += SETTLE / 3) {
                clock.advance(Math.min(SETTLE / 3, s.ms - waited));
                await sdkPing(held);
                const stored = await heldInStore(w);
                for (const id of arriving)
                  assert.ok(stored.includes(id), `${id}, on its way to the worker, is still its`);
              }
              held.push(...arriving);
              break;
            }
            case 'submit':
              await t.request(key, 'POST', `/v2/${ep}/run`, { input: { w } });
              break;
            case 'take': {
              const wanted = Math.min(s.batch, 3 - held.length);
              if (wanted <= 0) break;
              for (const id of await takeJobs(wanted)) {
                held.push(id);
                if (s.midway) inFlight.push({ ids: [...held], builtAt: clock.now() });
              }
              break;
            }
            case 'finish': {
              if (held.length === 0) break;
              const [id] = held.splice(s.pick % held.length, 1);
              const res = json(await worker(`job-done/${w}/${id}?isStream=false`, { output: 'ok' }));
              assert.equal(res.accepted, true, `the result of a job the worker held: ${JSON.stringify(res)}`);
              break;
            }
            case 'give-up': // its result post failed three times: the job is dropped, never posted
              if (held.length > 0) held.splice(s.pick % held.length, 1);
              break;
            case 'snapshot':
              inFlight.push({ ids: [...held], builtAt: clock.now() });
              break;
            case 'deliver': {
              if (inFlight.length === 0) break;
              const [ping] = inFlight.splice(s.pick % inFlight.length, 1);
              if (clock.now() - ping!.builtAt > SETTLE) break; // later than the heartbeat timeout: a lost ping
              await sdkPing(ping!.ids);
              break;
            }
            case 'restart': // killed -9: memory and heartbeat process gone, same id
              held = [];
              inFlight = [];
              break;
            case 'tick':
              clock.advance(s.ms);
              break;
          }
          const stored = await heldInStore(w);
          for (const id of held) assert.ok(stored.includes(id), `${id}, held by the worker, is still its in the store`);
        }
        // Idle at last: it finishes what it holds, and asks for work holding nothing until none
        // comes. Each such take gives back what it dropped (and may hand one of them out again).
        for (const id of held) await worker(`job-done/${w}/${id}?isStream=false`, { output: 'ok' });
        await t.services.jobs.client.purgeQueue(ep);
        for (let i = 0; i <= steps.length; i++) {
          const res = await worker(`job-take/${w}?job_in_progress=0`);
          if (res.statusCode === 204) break;
          await worker(`job-done/${w}/${json(res).id}?isStream=false`, { output: 'ok' });
        }
        assert.deepEqual(await heldInStore(w), [], 'nothing it dropped is left held by it');
      }),
      { numRuns: runs, includeErrorInReport: true },
    );
  });

  test("fuzzed takes and pings with another account's worker id, its job ids and any job_in_progress, through the caller's endpoint or naming the victim's, never give back the victim's job", async () => {
    const template = await t.services.templates.create(accountId, {
      name: 'victim',
      imageName: 'w',
      isServerless: true,
    });
    const victimEp = (
      await t.services.endpoints.create(accountId, { name: 'victim', templateId: template.id, gpuIds: 'ADA_24' })
    ).id;
    const jobId = json(await t.request(key, 'POST', `/v2/${victimEp}/run`, { input: {} })).id as string;
    const taken = await t.request(null, 'GET', `/v2/${victimEp}/job-take/victim?job_in_progress=0`, undefined, {
      authorization: key,
    });
    assert.equal(json(taken).id, jobId);
    const attacker = await t.newAccount('attacker');
    const attackerTpl = await t.services.templates.create(attacker.accountId, {
      name: 'a',
      imageName: 'w',
      isServerless: true,
    });
    const attackerEp = (
      await t.services.endpoints.create(attacker.accountId, { name: 'a', templateId: attackerTpl.id, gpuIds: 'ADA_24' })
    ).id;
    const value = fc.oneof(fc.constantFrom('0', '1', 'false', 'true', '', '%00', jobId), fc.string({ maxLength: 8 }));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(attackerEp, victimEp),
        fc.constantFrom('job-take', 'job-take-batch', 'ping'),
        fc.array(fc.tuple(fc.constantFrom('job_in_progress', 'job_id', 'runpod_version', 'batch_size'), value), {
          maxLength: 4,
        }),
        fc.integer({ min: 0, max: 2 * SETTLE }),
        async (endpoint, route, params, ms) => {
          clock.advance(ms);
          const q = params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
          const res = await t.request(null, 'GET', `/v2/${endpoint}/${route}/victim?${q}`, undefined, {
            authorization: attacker.key,
          });
          assert.ok([200, 204, 400, 404].includes(res.statusCode), `${res.statusCode} ${res.body}`);
          if (endpoint === victimEp) assert.equal(res.statusCode, 404);
          // the victim's own worker keeps pinging its job
          await t.request(null, 'GET', `/v2/${victimEp}/ping/victim?job_id=${jobId}&runpod_version=1.12.0`, undefined, {
            authorization: key,
          });
          const view = json(await t.request(key, 'GET', `/v2/${victimEp}/status/${jobId}`));
          assert.deepEqual([view.status, view.workerId, view.retries], ['IN_PROGRESS', 'victim', 0]);
        },
      ),
      { numRuns: runs, includeErrorInReport: true },
    );
  });
});
