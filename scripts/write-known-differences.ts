// Rewrites test/fixtures/openapi/known-differences.json from what Gantry serves now, for after a
// change that closes differences: review its diff — it should only remove lines (a line added is
// a new difference from the public documents, which test/openapi-conformance.test.ts refuses).
// Usage: node --import tsx scripts/write-known-differences.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, json } from '../test/support/harness.js';
import { compareSummaries, summarizeOpenApi, type OpenApiSummary } from '../test/support/openapi-summary.js';

const dir = join(import.meta.dirname, '..', 'test', 'fixtures', 'openapi');
const fixture = (name: string) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as OpenApiSummary;
const t = await createTestApp();
try {
  const served = async (path: string): Promise<OpenApiSummary> => {
    const res = await t.request(null, 'GET', path);
    if (res.statusCode === 404) return {};
    const doc = json<Record<string, unknown> & { servers?: Array<{ url: string }> }>(res);
    const server = doc.servers?.[0]?.url;
    return summarizeOpenApi(doc, server ? new URL(server, 'http://gantry').pathname.replace(/\/$/, '') : '');
  };
  const isRestV2 = (key: string) => /^[A-Z]+ \/v2\//.test(key) && !/^[A-Z]+ \/v2\/\{\}\//.test(key);
  const out = {
    v2: compareSummaries(fixture('public-v2.json'), await served('/v2/openapi.json'), isRestV2),
    v1: compareSummaries(fixture('public-v1.json'), await served('/v1/openapi.json'), (key) => / \/v1\//.test(key)),
  };
  writeFileSync(join(dir, 'known-differences.json'), `${JSON.stringify(out, null, 2)}\n`);
  console.log(`v2: ${Object.keys(out.v2).length} operations differ; v1: ${Object.keys(out.v1).length}`);
} finally {
  await t.close();
}
