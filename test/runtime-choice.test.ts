import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGantry } from './support/spawn-gantry.js';

const dir = mkdtempSync(join(tmpdir(), 'gantry-runtime-choice-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('gantry serve with runtime docker and no engine at the socket refuses to start, naming the socket, and opens no database', () => {
  const socket = join(dir, 'docker.sock');
  const r = runGantry(['serve', '--port', '0', '--data-dir', join(dir, 'data')], {
    GANTRY_RUNTIME: 'docker',
    DOCKER_HOST: `unix://${socket}`,
    GANTRY_LOG_LEVEL: 'silent',
  });
  assert.notEqual(r.status, 0);
  assert.match(
    r.stderr,
    new RegExp(
      `^gantry: refusing to start with runtime docker: cannot reach the Docker Engine at unix://${socket}: connect ENOENT`,
    ),
  );
  assert.doesNotMatch(r.stdout, /listening/);
  assert.equal(existsSync(join(dir, 'data', 'gantry.db')), false);
});

test('gantry serve --help names GANTRY_RUNTIME and DOCKER_HOST', () => {
  const r = runGantry(['serve', '--help']);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /GANTRY_RUNTIME \(process: .*docker: containers on the\s+Docker Engine at DOCKER_HOST/s);
});
