/**
 * `--help` on every command and subcommand of the CLI exits 0 and prints its usage on stdout; the
 * commands are found by walking the help itself, so a command added without help fails here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { gantryBin } from './support/spawn-gantry.js';

/** Runs the CLI with no server, key or profile in reach. */
const cli = (args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> =>
  new Promise((done, fail) => {
    const child = spawn(process.execPath, [gantryBin, ...args], {
      env: {
        ...process.env,
        GANTRY_URL: '',
        GANTRY_API_KEY: '',
        GANTRY_PROFILE: '',
        GANTRY_CLI_CONFIG: '/nonexistent',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', fail);
    child.once('close', (status) => done({ status, stdout, stderr }));
  });
const ok = (r: { status: number | null; stderr: string }, what: string) =>
  assert.equal(r.status, 0, `${what}: exit ${r.status}\n${r.stderr}`);

test('--help on every command and subcommand exits 0 and shows its usage', async () => {
  const top = await cli(['--help']);
  assert.equal(top.status, 0);
  const groups = [...top.stdout.matchAll(/^gantry (\w+) …/gm)].map((m) => m[1]!);
  assert.deepEqual(groups, ['pods', 'endpoints', 'jobs', 'templates', 'volumes', 'profiles']);
  const pages: string[][] = [
    ['login', '--help'],
    ['logout', '--help'],
  ];
  for (const group of groups) {
    const help = await cli([group, '--help']);
    ok(help, `${group} --help`);
    const subs = [...help.stdout.matchAll(new RegExp(`^  gantry ${group} (\\w+)`, 'gm'))].map((m) => m[1]!);
    assert.ok(subs.length >= 3, `${group} lists its commands:\n${help.stdout}`);
    for (const sub of subs) pages.push([group, sub, '--help']);
  }
  for (const old of ['serve', 'accounts', 'keys', 'hosts', 'worker', 'agent']) pages.push([old, '--help']);
  const expected = [
    ...['list', 'get', 'create', 'stop', 'start', 'restart', 'rm', 'logs', 'ssh'].map((c) => `pods ${c}`),
    ...['list', 'get', 'create', 'delete'].map((c) => `endpoints ${c}`),
    ...['run', 'status', 'cancel'].map((c) => `jobs ${c}`),
    ...['list', 'get', 'create', 'rm'].map((c) => `templates ${c}`),
    ...['list', 'get', 'create', 'rm'].map((c) => `volumes ${c}`),
    ...['list', 'use', 'rm'].map((c) => `profiles ${c}`),
  ];
  assert.deepEqual(
    pages.filter((p) => p.length === 3).map((p) => `${p[0]} ${p[1]}`),
    expected,
  );
  const results = await Promise.all(pages.map((p) => cli(p)));
  results.forEach((r, i) => {
    const page = pages[i]!;
    assert.equal(r.status, 0, `gantry ${page.join(' ')}: ${r.stderr}`);
    if (page.length === 3 || page[0] === 'login' || page[0] === 'logout')
      assert.match(r.stdout, new RegExp(`^usage: gantry ${page.slice(0, -1).join(' ')}`));
    else assert.match(r.stdout, /gantry /);
  });
});
