import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorCatalogue } from './errors.js';

const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'errors.md'), 'utf8');
const rows = new Map(
  [...doc.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \| ([^|]+) \| ([^|]*) \|$/gm)].map((m) => [
    m[1]!,
    { status: Number(m[2]), title: m[3]!.trim(), when: m[4]!.trim() },
  ]),
);

test('every error in the catalogue is documented in docs/errors.md with its status and title', () => {
  for (const [code, def] of Object.entries(errorCatalogue)) {
    const row = rows.get(code);
    assert.ok(row, `${code} is missing from docs/errors.md`);
    assert.equal(row.status, def.status, `${code}: status differs`);
    assert.equal(row.title, def.title, `${code}: title differs`);
    assert.ok(row.when.length > 0 && row.when !== 'TODO', `${code}: say when it happens`);
  }
});

test('docs/errors.md documents no error the catalogue lacks', () => {
  for (const code of rows.keys()) assert.ok(code in errorCatalogue, `${code} is documented but not defined`);
});
