// Writes the summaries of the platform's public OpenAPI documents that the conformance test
// compares Gantry's with (test/fixtures/openapi/public-v2.json, public-v1.json).
// Usage: node --import tsx scripts/write-openapi-fixtures.ts <api-reference-v2/openapi.json> <api-reference/openapi.json>
// (both from the platform's public docs repository).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { summarizeOpenApi } from '../test/support/openapi-summary.js';

const [v2Path, v1Path] = process.argv.slice(2);
if (!v2Path || !v1Path) {
  console.error('usage: write-openapi-fixtures.ts <api-reference-v2/openapi.json> <api-reference/openapi.json>');
  process.exit(2);
}
const dir = join(import.meta.dirname, '..', 'test', 'fixtures', 'openapi');
const write = (name: string, path: string, prefix: string) => {
  const doc = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  const summary = summarizeOpenApi(doc, prefix);
  // the v1 document describes its own OpenAPI and docs pages; those are not API operations
  for (const key of Object.keys(summary)) if (/\/(openapi\.json|docs)$/.test(key)) delete summary[key];
  writeFileSync(join(dir, name), `${JSON.stringify(summary, null, 2)}\n`);
  console.log(`${name}: ${Object.keys(summary).length} operations`);
};
write('public-v2.json', v2Path, '');
write('public-v1.json', v1Path, '/v1');
