// Property-based robustness for the routes the OpenAPI document hides or that test/fuzz.test.ts
// cannot reach: the worker protocol (job-take, job-take-batch, job-stop, job-done, job-stream,
// ping), the client job API (run, runsync, status, status-sync, stream, cancel, retry,
// purge-queue, health, requests, openai/v1/…) and POST /graphql. Generated bodies go out under random
// content types, with generated ids, query strings and keys. No answer may be a 5xx, every REST
// error must be problem+json, GraphQL answers 200 with `errors` unless auth or transport failed,
// and the server must still work afterwards. It runs on every store dialect, with NUL characters,
// `%00` ids and integers past 32 bits among the generated values (PostgreSQL refuses those).
// Long-polls are kept short (takeWaitMs 50 ms, the smallest allowed `?wait=`) and a background
// worker finishes the queue so runsync returns soon.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';

let t: TestApp;
let key: string;
let accountId: string;
let readKey: string;
let otherKey: string;
/** The job API's endpoint: a background worker finishes its jobs. */
let ep: string;
/** The worker protocol's endpoint: only the fuzzed calls take its jobs. */
let epW: string;
/** Job ids that exist (of both endpoints), so generated ids sometimes hit real jobs. */
const realJobs: string[] = [];
let autoWorker: { stop(): Promise<void> };

const runs = Number(process.env.FUZZ_RUNS ?? 60);

/** Takes and completes the jobs of `endpointId` until stopped, echoing each job's input. */
function startAutoWorker(endpointId: string): { stop(): Promise<void> } {
  const abort = new AbortController();
  const loop = (async () => {
    while (!abort.signal.aborted) {
      const taken = await t.services.jobs.worker
        .take(endpointId, 'auto-worker', { batchSize: 16, waitMs: 50, signal: abort.signal })
        .catch(() => []);
      for (const job of taken)
        await t.services.jobs.worker
          .complete('auto-worker', job.id, { output: job.input ?? null })
          .catch(() => undefined);
    }
  })();
  return {
    async stop() {
      abort.abort();
      await loop;
    },
  };
}

// ── generators ──────────────────────────────────────────────────────────────────────────────

const weirdString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '..',
    '../../etc/passwd',
    '%00',
    '\u0000',
    'a\u0000b',
    'a'.repeat(5000),
    '1e309',
    'null',
    '__proto__',
    'constructor',
    "' OR 1=1 --",
    '<script>',
    '$ID',
    '$RUNPOD_POD_ID',
  ),
);
/** Numbers at and past the edges of 32- and 64-bit integer columns. */
const hugeNumber = fc.oneof(
  fc.constantFrom(2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53, -(2 ** 31) - 1, 1e300, -1e300),
  fc.integer({ min: 2 ** 31, max: Number.MAX_SAFE_INTEGER }),
);
const jsonValue = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.oneof(hugeNumber, weirdString) },
);
const jobKeys = fc.constantFrom(
  'input',
  'webhook',
  'policy',
  's3Config',
  'output',
  'error',
  'status',
  'stopPod',
  'stream',
  'executionTimeout',
  'ttl',
  'lowPriority',
  '__proto__',
  'constructor',
);
const objectWithJobKeys = fc.dictionary(fc.oneof(weirdString, jobKeys), jsonValue, { maxKeys: 6 });
const policy = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record(
      {
        executionTimeout: fc.integer({ min: 5_000, max: 600_000 }),
        ttl: fc.integer({ min: 10_000, max: 86_400_000 }),
        lowPriority: fc.boolean(),
      },
      { requiredKeys: [] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record(
      {
        executionTimeout: fc.oneof(fc.integer(), fc.double(), hugeNumber, weirdString, fc.constant(null)),
        ttl: fc.oneof(fc.integer(), hugeNumber, weirdString),
        lowPriority: fc.oneof(fc.boolean(), weirdString),
      },
      { requiredKeys: [] },
    ),
  },
);
/** A job request: mostly valid shapes with odd values (so jobs get queued), sometimes nonsense. */
const jobRequest = fc.record(
  {
    input: fc.oneof(
      { weight: 4, arbitrary: fc.dictionary(weirdString, jsonValue, { maxKeys: 4 }) },
      { weight: 1, arbitrary: jsonValue },
    ),
    webhook: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom('http://127.0.0.1:9/hook', 'https://example.invalid/x?a=1') },
      {
        weight: 1,
        arbitrary: fc.oneof(
          fc.constantFrom('ftp://x', 'not a url', '', 'http://example.invalid/\u0000', 'https://a\u0000b/'),
          jsonValue,
        ),
      },
    ),
    policy: fc.oneof({ weight: 4, arbitrary: policy }, { weight: 1, arbitrary: jsonValue }),
    s3Config: fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record(
          { accessId: weirdString, accessSecret: weirdString, bucketName: weirdString, endpointUrl: weirdString },
          { requiredKeys: [] },
        ),
      },
      { weight: 1, arbitrary: jsonValue },
    ),
  },
  { requiredKeys: [] },
);
/** A worker's result post: outputs, errors (plain or runpod-python's JSON-in-a-string), stopPod. */
const resultBody = fc.record(
  {
    output: jsonValue,
    error: fc.oneof(
      weirdString,
      jsonValue,
      fc.constant(JSON.stringify({ error_type: 'E', error_message: 'm', error_traceback: 't' })),
    ),
    status: fc.oneof(fc.constantFrom('IN_PROGRESS', 'COMPLETED', 'FAILED'), weirdString),
    stopPod: fc.oneof(fc.boolean(), jsonValue),
  },
  { requiredKeys: [] },
);
const body = (structured: fc.Arbitrary<unknown>) =>
  fc.oneof(
    structured.map((v) => JSON.stringify(v)),
    structured.map((v) => JSON.stringify(v)),
    jsonValue.map((v) => JSON.stringify(v)),
    objectWithJobKeys.map((v) => JSON.stringify(v)),
    weirdString, // not JSON at all
    fc.constantFrom(
      '',
      '   ',
      '{',
      '[1,2',
      '{"a":1}}',
      '\u0000\u0001',
      '{"__proto__":{"x":1}}',
      'input=1&webhook=2',
      `{"input":{"x":"${'x'.repeat(200_000)}"}}`,
    ),
  );
const contentType = fc.constantFrom(
  'application/json',
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=utf-8',
  'text/plain',
  'application/json; charset=utf-8',
  'multipart/form-data',
  'application/octet-stream',
  '',
  'garbage/\u00ff',
  ';;;',
);
const realJob = fc.constantFrom(...Array.from({ length: 10 }, (_, i) => i)).map((i) => realJobs[i]!);
const jobId = fc.oneof(
  realJob,
  fc.stringMatching(/^[a-z0-9]{1,20}$/),
  weirdString.filter((s) => s.length > 0),
);
const workerId = fc.oneof(
  fc.constantFrom('w1', 'worker-2', 'a.b_c-d', 'x'.repeat(128), 'x'.repeat(129)),
  fc.stringMatching(/^[A-Za-z0-9._-]{1,30}$/),
  weirdString.filter((s) => s.length > 0),
);
const queryKeys = fc.constantFrom(
  'gpu',
  'job_in_progress',
  'batch_size',
  'job_id',
  'status',
  'isStream',
  'id',
  'runpod_version',
  'check',
  'reason',
  'api_key',
  'limit',
  'cursor',
);
const queryValue = fc.oneof(
  weirdString,
  fc.integer().map(String),
  fc.constantFrom(
    '0',
    '1',
    'true',
    'false',
    'unhealthy',
    '-1',
    '1000',
    '1001',
    '1e9',
    'NaN',
    'Infinity',
    'IN_QUEUE',
    'COMPLETED',
    'MTcwMDAwMDAwMDAwMC5hYmM',
    'MTcwMDAwMDAwMDAwMC4',
  ),
);
const query = fc.dictionary(fc.oneof(queryKeys, weirdString), queryValue, { maxKeys: 5 });
/** `?wait=` that never holds a request long: the minimum, or values refused at once. */
const shortWait = (min: number) =>
  fc.constantFrom(String(min), String(min), '-1', 'abc', '', '1e309', '300001', '0.5', String(min - 1));
/** How the caller authenticates: its own key (Bearer or raw), a read key, someone else's, none, junk. */
const auth = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('bearer', 'raw') },
  { weight: 1, arbitrary: fc.constantFrom('read', 'other', 'none') },
  { weight: 1, arbitrary: weirdString.map((s) => `junk:${s}`) },
);
const headersFor = (how: string, type: string): Record<string, string> => {
  const headers: Record<string, string> = {};
  if (how === 'bearer') headers.authorization = `Bearer ${key}`;
  else if (how === 'raw') headers.authorization = key;
  else if (how === 'read') headers.authorization = `Bearer ${readKey}`;
  else if (how === 'other') headers.authorization = otherKey;
  else if (how.startsWith('junk:')) headers.authorization = how.slice(5).replace(/[^\t\x20-\x7e]/g, '');
  if (type) headers['content-type'] = type;
  return headers;
};
const qs = (params: Record<string, string>): string => {
  const s = new URLSearchParams(params).toString();
  return s ? `?${s}` : '';
};
const seg = encodeURIComponent;

/** The only 5xx the job API may answer: an OpenAI-compatible request whose job failed or did not finish in time. */
const allowedServerErrors = (label: string): string[] =>
  /\/openai\/v1\//.test(label) ? ['JOB_FAILED', 'JOB_NOT_FINISHED'] : [];

function assertProblem(
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  label: string,
): void {
  let code: string | undefined;
  try {
    code = res.statusCode >= 500 ? (JSON.parse(res.body) as { code?: string }).code : undefined;
  } catch {
    // not JSON: the assertions below say so
  }
  assert.ok(
    res.statusCode < 500 || allowedServerErrors(label).includes(code ?? ''),
    `${label} answered ${res.statusCode}: ${res.body.slice(0, 300)}`,
  );
  if (res.statusCode >= 400) {
    assert.match(
      String(res.headers['content-type']),
      /application\/problem\+json/,
      `${label} error is not problem+json: ${res.body.slice(0, 200)}`,
    );
    const problem = JSON.parse(res.body) as { status: number; title: string; detail: string };
    assert.equal(problem.status, res.statusCode, label);
    assert.ok(problem.title && problem.detail, `${label} problem lacks title/detail`);
  }
}

async function send(
  method: 'GET' | 'POST',
  url: string,
  headers: Record<string, string>,
  payload: string | undefined,
  label = `${method} ${url} ${payload?.slice(0, 200) ?? ''}`,
) {
  const res = await t.app.inject({
    method,
    url,
    headers,
    ...(payload !== undefined && method === 'POST' ? { payload } : {}),
  });
  assertProblem(res, label.slice(0, 300));
  return res;
}

for (const dialect of dialects()) {
  describe(`on ${dialect.name}`, { skip: dialect.skip }, () => {
    before(async () => {
      realJobs.length = 0;
      t = await createTestApp({
        dialect: dialect.name,
        file: {
          rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
          jobs: { takeWaitMs: 50, stopWaitMs: 50, rateLimits: false, heartbeatTimeoutMs: 60_000 },
        },
      });
      const acct = await t.newAccount('serverless-fuzzer');
      key = acct.key;
      accountId = acct.accountId;
      readKey = acct.readKey;
      otherKey = (await t.newAccount('someone-else')).key;
      const template = await t.services.templates.create(acct.accountId, {
        name: 'fuzz-tpl',
        imageName: 'worker:dev',
        isServerless: true,
      });
      ep = (
        await t.services.endpoints.create(acct.accountId, {
          name: 'fuzz-jobs',
          templateId: template.id,
          gpuIds: 'ADA_24',
        })
      ).id;
      epW = (
        await t.services.endpoints.create(acct.accountId, {
          name: 'fuzz-workers',
          templateId: template.id,
          gpuIds: 'ADA_24',
        })
      ).id;
      for (let i = 0; i < 5; i++) {
        realJobs.push((await t.services.jobs.client.submit(ep, acct.accountId, { input: { i } })).id);
        realJobs.push((await t.services.jobs.client.submit(epW, acct.accountId, { input: { i } })).id);
      }
      autoWorker = startAutoWorker(ep);
    });
    after(async () => {
      await autoWorker?.stop();
      await t?.close();
    });

    // ── the worker protocol ─────────────────────────────────────────────────────────────────────

    describe('worker protocol', () => {
      const routes: Array<{
        name: string;
        method: 'GET' | 'POST';
        path: (w: string, j: string) => string;
        body: fc.Arbitrary<string>;
      }> = [
        { name: 'job-take', method: 'GET', path: (w) => `job-take/${seg(w)}`, body: fc.constant('') },
        { name: 'job-take-batch', method: 'GET', path: (w) => `job-take-batch/${seg(w)}`, body: fc.constant('') },
        { name: 'job-stop', method: 'GET', path: (w) => `job-stop/${seg(w)}`, body: fc.constant('') },
        { name: 'job-done', method: 'POST', path: (w, j) => `job-done/${seg(w)}/${seg(j)}`, body: body(resultBody) },
        { name: 'job-done (id in query)', method: 'POST', path: (w) => `job-done/${seg(w)}`, body: body(resultBody) },
        {
          name: 'job-stream',
          method: 'POST',
          path: (w, j) => `job-stream/${seg(w)}/${seg(j)}`,
          body: body(resultBody),
        },
        {
          name: 'job-stream (id in query)',
          method: 'POST',
          path: (w) => `job-stream/${seg(w)}`,
          body: body(resultBody),
        },
        { name: 'ping', method: 'GET', path: (w) => `ping/${seg(w)}`, body: fc.constant('') },
      ];
      for (const route of routes) {
        test(`${route.name}: no generated worker id, job id, query, body or content type gets a 5xx or a non-problem error`, async () => {
          await fc.assert(
            fc.asyncProperty(
              workerId,
              jobId,
              query,
              route.body,
              contentType,
              auth,
              fc.boolean(),
              async (w, j, q, payload, type, how, foreign) => {
                const endpoint = foreign ? seg(`nope-${j}`) : epW;
                const url = `/v2/${endpoint}/${route.path(w, j)}${qs(q)}`;
                await send(route.method, url, headersFor(how, type), payload);
              },
            ),
            { numRuns: runs, includeErrorInReport: true },
          );
        });
      }

      test('a worker that takes a fuzzed job and posts a generated result gets a 200 JSON answer or a problem', async () => {
        await fc.assert(
          fc.asyncProperty(body(resultBody), contentType, fc.boolean(), async (payload, type, stream) => {
            await t.services.jobs.client.submit(epW, accountId, { input: { fuzz: true } });
            const take = await send(
              'GET',
              `/v2/${epW}/job-take/fuzz-taker?job_in_progress=0`,
              headersFor('raw', ''),
              undefined,
            );
            if (take.statusCode === 204) return;
            assert.equal(take.statusCode, 200, take.body);
            const job = json<{ id: string }>(take);
            const res = await send(
              'POST',
              `/v2/${epW}/${stream ? 'job-stream' : 'job-done'}/fuzz-taker/${job.id}?isStream=${stream}`,
              headersFor('raw', type),
              payload,
            );
            if (res.statusCode === 200) assert.equal(json(res).id, job.id);
            // Whatever was posted, the job can be read back.
            const status = await send('GET', `/v2/${epW}/status/${job.id}`, headersFor('bearer', ''), undefined);
            assert.equal(status.statusCode, 200);
          }),
          { numRuns: runs, includeErrorInReport: true },
        );
      });
    });

    // ── the client job API ──────────────────────────────────────────────────────────────────────

    describe('job API', () => {
      const routes: Array<{
        name: string;
        method: 'GET' | 'POST';
        path: (j: string) => string;
        body?: fc.Arbitrary<string>;
        wait?: number;
      }> = [
        { name: 'run', method: 'POST', path: () => 'run', body: body(jobRequest) },
        { name: 'runsync', method: 'POST', path: () => 'runsync', body: body(jobRequest), wait: 1000 },
        { name: 'status (GET)', method: 'GET', path: (j) => `status/${seg(j)}` },
        { name: 'status (POST)', method: 'POST', path: (j) => `status/${seg(j)}`, body: body(jsonValue) },
        { name: 'status-sync', method: 'GET', path: (j) => `status-sync/${seg(j)}`, wait: 1000 },
        {
          name: 'status-sync (POST)',
          method: 'POST',
          path: (j) => `status-sync/${seg(j)}`,
          body: body(jsonValue),
          wait: 1000,
        },
        { name: 'stream', method: 'GET', path: (j) => `stream/${seg(j)}`, wait: 0 },
        { name: 'stream (POST)', method: 'POST', path: (j) => `stream/${seg(j)}`, body: body(jsonValue), wait: 0 },
        { name: 'cancel', method: 'POST', path: (j) => `cancel/${seg(j)}`, body: body(jsonValue) },
        { name: 'retry', method: 'POST', path: (j) => `retry/${seg(j)}`, body: body(jsonValue) },
        { name: 'purge-queue', method: 'POST', path: () => 'purge-queue', body: body(jsonValue) },
        { name: 'health', method: 'GET', path: () => 'health' },
        { name: 'requests', method: 'GET', path: () => 'requests' },
        {
          name: 'openai/v1/chat/completions',
          method: 'POST',
          path: () => 'openai/v1/chat/completions',
          body: body(
            fc.record(
              { model: weirdString, messages: jsonValue, stream: fc.oneof(fc.boolean(), jsonValue) },
              { requiredKeys: [] },
            ),
          ),
          wait: 1000,
        },
        {
          name: 'openai/v1/<generated path>',
          method: 'POST',
          path: (j) => `openai/v1/${seg(j)}/${seg(j)}`,
          body: body(jsonValue),
          wait: 1000,
        },
      ];
      for (const route of routes) {
        test(`${route.name}: no generated body, id, policy, query or content type gets a 5xx or a non-problem error`, async () => {
          await fc.assert(
            fc.asyncProperty(
              jobId,
              query,
              route.body ?? fc.constant(''),
              contentType,
              auth,
              fc.boolean(),
              shortWait(route.wait ?? 0),
              async (j, q, payload, type, how, foreign, wait) => {
                const endpoint = foreign ? seg(`nope-${j}`) : ep;
                // Long-polling routes always carry a short ?wait= (their defaults are 10-90 s).
                const params = route.wait === undefined ? q : { ...q, wait };
                const url = `/v2/${endpoint}/${route.path(j)}${qs(params)}`;
                await send(route.method, url, headersFor(how, type), route.method === 'POST' ? payload : undefined);
              },
            ),
            { numRuns: runs, includeErrorInReport: true },
          );
        });
      }
    });

    describe('deeply nested JSON', () => {
      const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
      const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
      const bodies: Array<[string, string]> = [
        ['an input nested 100 000 lists deep', `{"input":{"x":${deep(100_000)}}}`],
        ['an input nested 50 000 objects deep', `{"input":${deepObject(50_000)}}`],
        ['a body that is only nesting', deep(100_000)],
      ];
      const posts: Array<[string, () => string, Record<string, string>]> = [
        ['run', () => `/v2/${ep}/run`, { authorization: '' }],
        ['runsync', () => `/v2/${ep}/runsync?wait=1000`, { authorization: '' }],
        ['openai/v1/chat/completions', () => `/v2/${ep}/openai/v1/chat/completions?wait=1000`, { authorization: '' }],
        ['job-done', () => `/v2/${epW}/job-done/deep-worker/${realJobs[1]}`, { authorization: '' }],
        ['job-stream', () => `/v2/${epW}/job-stream/deep-worker/${realJobs[3]}`, { authorization: '' }],
      ];
      for (const [route, url] of posts)
        for (const [what, payload] of bodies)
          test(`${route} with ${what} answers without a 5xx`, async () => {
            await send('POST', url(), headersFor('raw', 'application/json'), payload);
          });
      test('a job-done for a taken job with an output nested 100 000 lists deep answers without a 5xx', async () => {
        await t.services.jobs.client.submit(epW, accountId, { input: { deep: true } });
        const take = await send('GET', `/v2/${epW}/job-take/deep-taker`, headersFor('raw', ''), undefined);
        if (take.statusCode !== 200) return;
        const job = json<{ id: string }>(take);
        await send(
          'POST',
          `/v2/${epW}/job-done/deep-taker/${job.id}`,
          headersFor('raw', 'application/json'),
          `{"output":${deep(100_000)}}`,
        );
        await send(
          'POST',
          `/v2/${epW}/job-stream/deep-taker/${job.id}`,
          headersFor('raw', 'application/json'),
          `{"output":${deep(100_000)}}`,
        );
        await send('GET', `/v2/${epW}/status/${job.id}`, headersFor('bearer', ''), undefined);
      });
      test('an input nested 500 levels deep is still accepted and comes back intact', async () => {
        const input = { x: JSON.parse(deep(500)) as unknown };
        const res = await send(
          'POST',
          `/v2/${ep}/runsync?wait=10000`,
          headersFor('raw', 'application/json'),
          JSON.stringify({ input }),
        );
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual([json(res).status, json(res).output], ['COMPLETED', input]);
      });
      test('GraphQL variables nested 100 000 lists deep answer 200 with errors, not a 5xx', async () => {
        const res = await t.app.inject({
          method: 'POST',
          url: '/graphql',
          headers: headersFor('bearer', 'application/json'),
          payload: `{"query":"mutation M($input: SaveTemplateInput) { saveTemplate(input: $input) { id } }","variables":{"input":{"env":${deep(100_000)}}}}`,
        });
        assert.ok(res.statusCode < 500, `answered ${res.statusCode}: ${res.body.slice(0, 200)}`);
      });
    });

    // ── GraphQL ─────────────────────────────────────────────────────────────────────────────────

    describe('GraphQL', () => {
      const fields = fc.constantFrom(
        'myself',
        'id',
        'email',
        'pubKey',
        'endpoints',
        'pods',
        'networkVolumes',
        'gpuTypes',
        'serverlessGpuPools',
        'endpoint',
        'pod',
        'name',
        'template',
        'workersMax',
        '__typename',
        '__schema',
        'types',
        'nope',
      );
      /** Queries built from the schema's words: sometimes valid, mostly not quite. */
      const selection: fc.Arbitrary<string> = fc.letrec<{ sel: string }>((tie) => ({
        sel: fc.oneof(
          { depthSize: 'small', withCrossShrink: true },
          fields,
          fc
            .tuple(fields, fc.array(tie('sel'), { minLength: 1, maxLength: 4 }))
            .map(([f, inner]) => `${f} { ${inner.join(' ')} }`),
          fc
            .tuple(fields, weirdString, fc.array(tie('sel'), { minLength: 1, maxLength: 3 }))
            .map(([f, arg, inner]) => `${f}(id: ${JSON.stringify(arg)}) { ${inner.join(' ')} }`),
        ),
      })).sel;
      const document = fc.oneof(
        selection.map((s) => `{ ${s} }`),
        fc
          .tuple(
            fc.constantFrom('query', 'mutation', 'subscription'),
            fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,10}$/),
            selection,
          )
          .map(([op, name, s]) => `${op} ${name} { ${s} }`),
        fc
          .tuple(
            fc.constantFrom(
              'saveEndpoint',
              'saveTemplate',
              'deleteEndpoint',
              'podTerminate',
              'updateUserSettings',
              'saveRegistryAuth',
            ),
            jsonValue,
          )
          .map(
            ([m, v]) =>
              `mutation M($input: ${m === 'deleteEndpoint' ? 'String!' : 'JSON'}) { ${m}(input: $input) { id } } # ${JSON.stringify(v).slice(0, 50)}`,
          ),
        weirdString,
        fc.constantFrom(
          '{',
          '}',
          '{ myself { id }',
          'query { ...F }',
          'fragment F on User { ...F } { myself { ...F } }',
          '{ myself { id } } { myself { id } }',
          '#',
          '{ __typename }',
          'query Q($x: Int = "a") { myself { id } }',
        ),
      );
      const graphqlBody = fc.oneof(
        fc
          .record(
            {
              query: fc.oneof(document, jsonValue),
              variables: fc.oneof(
                jsonValue,
                jsonValue.map((v) => JSON.stringify(v)),
                weirdString,
              ),
              operationName: fc.oneof(weirdString, jsonValue),
            },
            { requiredKeys: ['query'] },
          )
          .map((b) => JSON.stringify(b)),
        jsonValue.map((v) => JSON.stringify(v)),
        weirdString,
      );

      /** GraphQL answers 200 with `data`/`errors`; only auth (401/403), transport (400, 413, 415) and routing may answer otherwise, as problems. */
      function assertGraphqlAnswer(
        res: { statusCode: number; headers: Record<string, unknown>; body: string },
        label: string,
        expectErrors: boolean,
      ): void {
        assertProblem(res, label);
        if (res.statusCode >= 400) {
          assert.ok([400, 401, 403, 413, 415].includes(res.statusCode), `${label} answered ${res.statusCode}`);
          return;
        }
        assert.equal(res.statusCode, 200, label);
        const answer = JSON.parse(res.body) as {
          data?: unknown;
          errors?: Array<{ message: string; extensions: { code: string } }>;
        };
        assert.ok('data' in answer || 'errors' in answer, `${label}: ${res.body.slice(0, 200)}`);
        for (const e of answer.errors ?? []) {
          assert.equal(typeof e.message, 'string', label);
          assert.notEqual(e.extensions.code, 'INTERNAL', `${label}: ${e.message}`);
        }
        if (expectErrors)
          assert.ok((answer.errors ?? []).length > 0, `${label} should answer errors: ${res.body.slice(0, 200)}`);
      }

      test('generated queries, variables and operation names answer 200 with data or errors, never a 5xx', async () => {
        await fc.assert(
          fc.asyncProperty(graphqlBody, contentType, auth, async (payload, type, how) => {
            const res = await t.app.inject({
              method: 'POST',
              url: '/graphql',
              headers: headersFor(how, type),
              payload,
            });
            assertGraphqlAnswer(res, `POST /graphql ${payload.slice(0, 200)}`, false);
          }),
          { numRuns: runs * 5, includeErrorInReport: true },
        );
      });

      test('generated GET /graphql query strings answer 200 with data or errors, never a 5xx', async () => {
        await fc.assert(
          fc.asyncProperty(
            document,
            fc.oneof(
              jsonValue.map((v) => JSON.stringify(v)),
              weirdString,
            ),
            weirdString,
            async (q, variables, operationName) => {
              const url = `/graphql${qs({ query: q, variables, operationName })}`;
              const res = await t.app.inject({ method: 'GET', url, headers: headersFor('bearer', '') });
              assertGraphqlAnswer(res, `GET ${url.slice(0, 200)}`, false);
            },
          ),
          { numRuns: runs * 2, includeErrorInReport: true },
        );
      });

      const nasty: Array<[string, string, boolean]> = [
        ['deeply nested selections', `{ myself ${'{ endpoints '.repeat(2_000)}{ id }${' }'.repeat(2_000)} }`, true],
        ['deeply nested braces', `${'{'.repeat(50_000)}${'}'.repeat(50_000)}`, true],
        ['deeply nested list values', `{ endpoint(id: ${'['.repeat(50_000)}${']'.repeat(50_000)}) { id } }`, true],
        [
          'deeply nested object values',
          `mutation { saveTemplate(input: ${'{a: '.repeat(20_000)}1${'}'.repeat(20_000)}) { id } }`,
          true,
        ],
        [
          'five thousand aliases of one field',
          `{ ${Array.from({ length: 5_000 }, (_, i) => `a${i}: myself { id }`).join(' ')} }`,
          false,
        ],
        ['unknown fields and arguments', '{ myself { id nope(x: 1) } notAField __schema { nope } }', true],
        ['a fragment cycle', 'fragment A on User { ...B } fragment B on User { ...A } { myself { ...A } }', true],
        ['ten thousand directives', `{ myself ${'@skip(if: false) '.repeat(10_000)}{ id } }`, false],
        [
          'introspection of the whole schema',
          '{ __schema { types { name fields { name args { name type { name } } } } } }',
          false,
        ],
      ];
      for (const [name, query, expectErrors] of nasty) {
        test(`a valid-but-nasty query (${name}) answers 200 ${expectErrors ? 'with errors' : 'with data or errors'}, not a 5xx`, async () => {
          const res = await t.app.inject({
            method: 'POST',
            url: '/graphql',
            headers: headersFor('bearer', 'application/json'),
            payload: JSON.stringify({ query }),
          });
          assertGraphqlAnswer(res, `POST /graphql (${name})`, expectErrors);
        });
      }
    });

    test('the server still works after the fuzzing: health answers and a job submitted now completes', async () => {
      assert.equal((await t.request(key, 'GET', '/healthz')).statusCode, 200);
      const run = await t.request(key, 'POST', `/v2/${ep}/runsync?wait=10000`, { input: { after: 'fuzz' } });
      assert.equal(run.statusCode, 200, run.body);
      assert.deepEqual([json(run).status, json(run).output], ['COMPLETED', { after: 'fuzz' }]);
      const gql = await t.request(key, 'POST', '/graphql', { query: '{ myself { id } }' });
      assert.equal(gql.statusCode, 200);
      assert.ok(json(gql).data.myself.id);
    });
  });
}
