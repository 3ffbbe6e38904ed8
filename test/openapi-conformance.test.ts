// Gantry's REST documents against the platform's public ones, operation by operation: the
// operations, their query parameters, request fields and required lists, and the fields of their
// JSON answers. The public documents are read from summaries written from them
// (test/fixtures/openapi/public-v2.json, public-v1.json; `scripts/write-openapi-fixtures.ts`
// rewrites them from the public docs repository's api-reference-v2/openapi.json and
// api-reference/openapi.json). Every difference still open is listed in
// test/fixtures/openapi/known-differences.json: a new one fails this test, and so does one that
// was fixed but is still listed, so the list only shrinks.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { compareSummaries, summarizeOpenApi, type OpenApiSummary } from './support/openapi-summary.js';

const fixtures = join(import.meta.dirname, 'fixtures', 'openapi');
const read = <T>(name: string): T => JSON.parse(readFileSync(join(fixtures, name), 'utf8')) as T;
const known = read<Record<'v2' | 'v1', Record<string, string[]>>>('known-differences.json');

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

const served = async (path: string): Promise<OpenApiSummary> => {
  const res = await t.request(null, 'GET', path);
  if (res.statusCode === 404) return {};
  assert.equal(res.statusCode, 200, `${path}: ${res.body}`);
  // paths are relative to the document's server URL (`…/v1` for REST v1)
  const doc = json(res);
  const server = (doc.servers as Array<{ url: string }> | undefined)?.[0]?.url;
  return summarizeOpenApi(doc, server ? new URL(server, 'http://gantry').pathname.replace(/\/$/, '') : '');
};

/** The queue-based job API and GraphQL are described elsewhere (the spec), not in REST v2. */
const isRestV2 = (key: string) => /^[A-Z]+ \/v2\//.test(key) && !/^[A-Z]+ \/v2\/\{\}\//.test(key);

const expectKnown = (actual: Record<string, string[]>, listed: Record<string, string[]>, doc: string) => {
  const sort = (r: Record<string, string[]>) =>
    Object.fromEntries(
      Object.entries(r)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, [...v].sort()]),
    );
  assert.deepEqual(
    sort(actual),
    sort(listed),
    `${doc} differs from the public document other than as known-differences.json lists; the differences now:\n${JSON.stringify(sort(actual), null, 2)}`,
  );
};

test('every REST v2 operation of the public document is served with its parameters, fields and required lists, except the differences listed as known', async () => {
  const theirs = read<OpenApiSummary>('public-v2.json');
  const ours = await served('/v2/openapi.json');
  expectKnown(compareSummaries(theirs, ours, isRestV2), known.v2, '/v2/openapi.json');
});

test('every REST v1 operation of the public document is served under /v1 with its parameters, fields and required lists, except the differences listed as known', async () => {
  const theirs = read<OpenApiSummary>('public-v1.json');
  const ours = await served('/v1/openapi.json');
  expectKnown(
    compareSummaries(theirs, ours, (key) => / \/v1\//.test(key)),
    known.v1,
    '/v1/openapi.json',
  );
});

test('the summaries compare what they claim: a field dropped from an answer, a required field added, an extra query parameter and a missing operation are each reported', () => {
  const theirs: OpenApiSummary = {
    'GET /v2/things/{}': {
      query: { include: false },
      pathParams: 1,
      body: null,
      responses: { '200': { type: 'object', properties: ['id', 'name'], required: ['id'] } },
    },
    'POST /v2/things': {
      query: {},
      pathParams: 0,
      body: { type: 'object', properties: ['name'], required: ['name'] },
      responses: {},
    },
    'DELETE /v2/things/{}': { query: {}, pathParams: 1, body: null, responses: {} },
  };
  const ours: OpenApiSummary = {
    'GET /v2/things/{}': {
      query: { include: false, limit: false },
      pathParams: 1,
      body: null,
      responses: { '200': { type: 'object', properties: ['id'], required: ['id'] } },
    },
    'POST /v2/things': {
      query: {},
      pathParams: 0,
      body: { type: 'object', properties: ['name', 'size'], required: ['name', 'size'] },
      responses: {},
    },
  };
  assert.deepEqual(compareSummaries(theirs, ours), {
    'GET /v2/things/{}': ['query parameters extra: limit', '200 fields missing: name'],
    'POST /v2/things': ['request fields extra: size', 'request requires [name, size], not [name]'],
    'DELETE /v2/things/{}': ['missing operation'],
  });
});
