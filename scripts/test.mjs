#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with Node's test runner (TypeScript through tsx).
// Usage: node scripts/test.mjs [filter-substring ...]
// The timeout applies to each file as a whole as well as to each test: a file of several real-engine
// tests can pass 120 s on a loaded machine, and the npm package's test (a build and two native
// compiles) 300 s, so the ceiling is 480 s. A file whose tests are done but whose
// process lingers fails 15 s later naming what holds it (test/support/linger-guard.mjs), and the run
// ends with a summary of what failed or was cancelled (scripts/test-summary-reporter.mjs).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const roots = ['src', 'test'];
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.test.ts')) files.push(path);
  }
};
for (const r of roots) walk(r);
const filters = process.argv.slice(2);
const selected = filters.length ? files.filter((f) => filters.some((s) => f.includes(s))) : files;
if (!process.env.GANTRY_TEST_DATABASE_URL) {
  console.log(
    'note: GANTRY_TEST_DATABASE_URL is not set; the PostgreSQL suites are skipped (set it to postgres://… to run them).',
  );
}
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--import',
    './test/support/linger-guard.mjs',
    '--test',
    '--test-concurrency=2',
    '--test-timeout=480000',
    '--test-reporter=tap',
    '--test-reporter-destination=stdout',
    '--test-reporter=./scripts/test-summary-reporter.mjs',
    '--test-reporter-destination=stdout',
    ...selected.sort(),
  ],
  { stdio: 'inherit', env: { ...process.env, GANTRY_LOG_LEVEL: process.env.GANTRY_LOG_LEVEL ?? 'silent' } },
);
process.exit(result.status ?? 1);
