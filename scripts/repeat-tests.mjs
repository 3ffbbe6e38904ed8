#!/usr/bin/env node
// Runs test files again and again to find the ones that fail only sometimes (under load, say:
// start `stress-ng --cpu 4` beside it). Each run is its own `node --import tsx --test <file>`;
// the runs go round the files (file 1, 2, …, 1, 2, …) so a burst of load falls on several files,
// not on one file's repeats. At the end it prints one row per file: runs, failures, the tests that
// failed and the mean duration; a failed run's output is kept under --logs.
//
// Usage: node scripts/repeat-tests.mjs [--repeat 20] [--parallel 1] [--logs DIR] FILE...
// Exit status: 1 when any run failed.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
let repeat = 20;
let parallel = 1;
let logs = 'repeat-logs';
const files = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--repeat') repeat = Number(args[++i]);
  else if (a === '--parallel') parallel = Number(args[++i]);
  else if (a === '--logs') logs = args[++i];
  else files.push(a);
}
if (!files.length || !(repeat > 0) || !(parallel > 0)) {
  console.error('usage: node scripts/repeat-tests.mjs [--repeat N] [--parallel P] [--logs DIR] FILE...');
  process.exit(2);
}
mkdirSync(logs, { recursive: true });

/** @type {Map<string, { runs: number, failed: number, ms: number, tests: Map<string, number> }>} */
const results = new Map(files.map((f) => [f, { runs: 0, failed: 0, ms: 0, tests: new Map() }]));
const queue = [];
for (let r = 1; r <= repeat; r++) for (const f of files) queue.push({ file: f, round: r });

const runOnce = ({ file, round }) =>
  new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--test', '--test-reporter=tap', '--test-timeout=300000', file],
      {
        env: { ...process.env, GANTRY_LOG_LEVEL: process.env.GANTRY_LOG_LEVEL ?? 'silent' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => {
      const ms = Date.now() - started;
      const row = results.get(file);
      row.runs++;
      row.ms += ms;
      const ok = code === 0;
      if (!ok) {
        row.failed++;
        // a TAP "not ok" for a test (subtests are indented; the file's own line has no name we want)
        const names = [...out.matchAll(/^\s*not ok \d+ - (.*)$/gm)].map((m) => m[1].trim());
        for (const n of names.length ? names : [`exit ${code}`]) row.tests.set(n, (row.tests.get(n) ?? 0) + 1);
        const log = join(logs, `${file.replaceAll('/', '_')}.${round}.log`);
        writeFileSync(log, out);
      }
      const stamp = new Date().toISOString().slice(11, 19);
      console.log(`${stamp} ${ok ? 'pass' : 'FAIL'} ${file} #${round} ${(ms / 1000).toFixed(1)} s`);
      resolve();
    });
  });

const worker = async () => {
  for (let job = queue.shift(); job; job = queue.shift()) await runOnce(job);
};
await Promise.all(Array.from({ length: parallel }, worker));

console.log('\n| file | runs | failed | failing tests (times) | mean s |\n| --- | --- | --- | --- | --- |');
for (const [file, r] of results) {
  const tests = [...r.tests].map(([n, c]) => `${n} (${c})`).join('; ') || '–';
  console.log(`| ${file} | ${r.runs} | ${r.failed} | ${tests} | ${(r.ms / r.runs / 1000).toFixed(1)} |`);
}
process.exit([...results.values()].some((r) => r.failed) ? 1 : 0);
