/**
 * A rule of the test files themselves: every top-level `await` comes before the first test is
 * declared. Node's runner starts a file's tests as they are declared; while the module awaits, the
 * root may run out of tests, run its `after` hooks (closing what later tests use) and end, and the
 * tests declared after the await then run after it — past test/support/linger-guard.mjs's check,
 * which would end the file under them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');

function testFiles(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) return testFiles(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The line of the first top-level await after a test is declared, or null (prettier-formatted code: statements at column 0). */
export function lateAwait(source: string): { test: number; await: number } | null {
  const lines = source.split('\n');
  let first: number | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^(test|describe|it|suite)\(/.test(line)) {
      first ??= i + 1;
      continue;
    }
    if (first !== null && /^[^\s/*].*\bawait\b/.test(line)) return { test: first, await: i + 1 };
  }
  return null;
}

test('the check finds a top-level await after a test, and lets one before every test pass', () => {
  assert.deepEqual(lateAwait("test('a', () => {});\nconst x = await y();\n"), { test: 1, await: 2 });
  assert.equal(lateAwait("const x = await y();\ntest('a', async () => {\n  await x;\n});\n"), null);
  assert.equal(lateAwait("test('says await in its name', () => {});\n"), null);
});

test('no test file awaits at its top level after declaring a test', () => {
  const late = [...testFiles('src'), ...testFiles('test')].flatMap((file) => {
    const found = lateAwait(readFileSync(join(root, file), 'utf8'));
    return found ? [`${file}: a test at line ${found.test}, an await at line ${found.await}`] : [];
  });
  assert.deepEqual(late, []);
});
