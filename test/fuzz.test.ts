// Property-based robustness: generated invalid bodies, headers and ids sent to every route in the
// OpenAPI document, on every store dialect. No answer may be a 5xx, every error must be
// problem+json, and the server must keep answering afterwards. The generators include what only
// PostgreSQL refuses (NUL characters in text, `%00` in ids, integers past 32 bits), so a value the
// HTTP layer lets through to the store shows up here as a 500.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createTestApp, dialects, type TestApp } from './support/harness.js';

const runs = Number(process.env.FUZZ_RUNS ?? 60);

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
  ),
);
/** Numbers at and past the edges of 32- and 64-bit integer columns. */
const hugeNumber = fc.oneof(
  fc.constantFrom(2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53, -(2 ** 31) - 1, 1e300, -1e300, Number.MAX_SAFE_INTEGER + 2),
  fc.integer({ min: 2 ** 31, max: Number.MAX_SAFE_INTEGER }),
);
const jsonValue = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.oneof(hugeNumber, weirdString) },
);
const objectWithWeirdKeys = fc.dictionary(
  fc.oneof(
    weirdString,
    fc.constantFrom(
      '__proto__',
      'constructor',
      'name',
      'gpu',
      'cpu',
      'mounts',
      'input',
      'action',
      'size',
      'ports',
      'env',
    ),
  ),
  jsonValue,
  { maxKeys: 8 },
);
/** Bodies of the right shape for the REST creates, with NUL, huge or out-of-range values in one field. */
const hostileValue = fc.oneof(
  hugeNumber,
  fc.constantFrom('x\u0000y', '\u0000', 'ok'),
  fc.dictionary(fc.constantFrom('A', 'B\u0000', 'C'), fc.constantFrom('v', 'v\u0000')),
);
const nearlyValid = fc
  .tuple(
    fc.constantFrom<Record<string, unknown>>(
      { name: 'n', image: 'ubuntu:22.04', gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 } },
      { name: 'n', imageName: 'ubuntu:22.04', containerDiskInGb: 10 },
      { name: 'n', size: 10, dataCenterId: 'US-TX-3' },
      { name: 'n', username: 'u', password: 'p' },
      { name: 'n', templateId: 'abc', gpuIds: 'ADA_24' },
    ),
    fc.constantFrom(
      'name',
      'image',
      'imageName',
      'containerDiskInGb',
      'volumeInGb',
      'disk',
      'size',
      'env',
      'ports',
      'args',
      'username',
      'password',
      'workersMax',
      'workersMin',
      'idleTimeout',
      'gpuCount',
      'executionTimeoutMs',
      'scalerValue',
      'dataCenterId',
      'volumeMountPath',
    ),
    hostileValue,
  )
  .map(([base, field, value]) => JSON.stringify({ ...base, [field]: value }));
const body = fc.oneof(
  jsonValue.map((v) => JSON.stringify(v)),
  objectWithWeirdKeys.map((v) => JSON.stringify(v)),
  nearlyValid,
  nearlyValid,
  weirdString, // not JSON at all
  fc.constantFrom(
    '{',
    '[1,2',
    '{"a":1}}',
    '\u0000\u0001',
    '{"__proto__":{"x":1}}',
    `{"name":"${'x'.repeat(100_000)}"}`,
    '{"name":"a\\u0000"}',
    '{"name":"n","size":99999999999}',
  ),
);
const id = fc.oneof(
  fc.stringMatching(/^[a-z0-9]{1,20}$/),
  weirdString.filter((s) => s.length > 0),
);
const contentType = fc.constantFrom(
  'application/json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/json; charset=utf-8',
  'multipart/form-data',
  '',
  'garbage/\u00ff',
);
const authorization = fc.oneof(
  fc.constant('valid'),
  fc.constant('none'),
  weirdString.map((s) => `Bearer ${s}`),
  weirdString,
);

function assertProblem(
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  label: string,
): void {
  assert.ok(res.statusCode < 500, `${label} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
  if (res.statusCode >= 400) {
    assert.match(
      String(res.headers['content-type']),
      /application\/problem\+json/,
      `${label} error is not problem+json`,
    );
    const problem = JSON.parse(res.body) as { status: number; title: string; detail: string };
    assert.equal(problem.status, res.statusCode, label);
    assert.ok(problem.title && problem.detail, `${label} problem lacks title/detail`);
  }
}

for (const dialect of dialects()) {
  describe(`on ${dialect.name}`, { skip: dialect.skip }, () => {
    let t: TestApp;
    let routes: Array<{ method: string; path: string }>;
    let key: string;

    before(async () => {
      t = await createTestApp({
        dialect: dialect.name,
        file: { rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 } },
      });
      key = (await t.newAccount('fuzzer')).key;
      const doc = t.app.swagger() as { paths: Record<string, Record<string, unknown>> };
      routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })),
      );
    });
    after(() => t?.close());

    test('no generated body, header or id makes any route answer 5xx or a non-problem error', async () => {
      assert.ok(routes.length > 0);
      for (const route of routes) {
        await fc.assert(
          fc.asyncProperty(
            body,
            id,
            contentType,
            authorization,
            fc.boolean(),
            async (payload, rawId, type, auth, withBody) => {
              const url = route.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(rawId)).replace('{', '');
              const headers: Record<string, string> = {};
              if (auth === 'valid') headers.authorization = `Bearer ${key}`;
              else if (auth !== 'none') headers.authorization = auth.replace(/[^\t\x20-\x7e]/g, '');
              if (type) headers['content-type'] = type;
              const res = await t.app.inject({
                method: route.method as 'GET',
                url,
                headers,
                ...(withBody && route.method !== 'GET' && route.method !== 'HEAD' ? { payload } : {}),
              });
              assertProblem(res, `${route.method} ${url} ${withBody ? payload.slice(0, 200) : ''}`);
            },
          ),
          { numRuns: runs, includeErrorInReport: true },
        );
      }
    });

    test('generated query strings never produce a 5xx', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...routes.filter((r) => r.method === 'GET')),
          fc.dictionary(weirdString, fc.oneof(weirdString, hugeNumber.map(String)), { maxKeys: 4 }),
          async (route, query) => {
            const url = route.path.replace(/\{[^}]+\}/g, 'abc') + '?' + new URLSearchParams(query).toString();
            const res = await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
            assertProblem(res, `GET ${url}`);
          },
        ),
        { numRuns: runs * 5, includeErrorInReport: true },
      );
    });

    test('the server still answers after the fuzzing', async () => {
      const res = await t.request(key, 'GET', '/healthz');
      assert.equal(res.statusCode, 200);
    });
  });
}
