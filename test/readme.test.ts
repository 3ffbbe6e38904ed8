/**
 * The README's examples are what newcomers copy: its config file must load as written, and the
 * settings it shows must be the ones Gantry applies.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';

const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');

test("the README's config file loads as written and its settings take effect", () => {
  const section = readme.slice(readme.indexOf('### Config file'));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(yaml, 'the section has a yaml block');
  const dir = mkdtempSync(join(tmpdir(), 'gantry-readme-'));
  try {
    const path = join(dir, 'gantry.yaml');
    writeFileSync(path, yaml);
    const config = loadConfig({ env: { GANTRY_DATA_DIR: dir }, flags: { config: path } });
    assert.deepEqual(config.warnings, [], 'every key the README shows is one Gantry knows');
    assert.deepEqual(config.images['my-worker:dev']?.command, ['python3', '-u', 'handler.py']);
    assert.equal(config.images['my-worker:dev']?.cwd, join(dir, 'worker'), 'cwd is relative to the file');
    assert.deepEqual(
      config.fleet.map((h) => [h.id, h.gpuTypeId, h.gpuCount]),
      [['box-1', 'NVIDIA GeForce RTX 4090', 2]],
      'the declared fleet replaces the demo fleet',
    );
    assert.equal(config.jobs.takeWaitMs, 80_000);
    assert.equal(config.jobs.heartbeatTimeoutMs, 30_000);
    assert.equal(config.jobs.retryBudget, 3);
    assert.equal(config.serverless.autoscaler.nudgeGapMs, 100);
    assert.equal(config.serverless.webhooks.maxAttempts, 3);
    assert.equal(config.serverless.webhooks.privateAddresses, 'auto');
    assert.deepEqual([config.quotas.pods, config.quotas.gpus, config.quotas.queuedJobs], [50, 16, 100_000]);
    assert.deepEqual(config.images['my-worker:dev']?.tenantEnv, ['MODEL_*', 'LOG_LEVEL']);
    assert.deepEqual([config.ssh.enabled, config.ssh.port, config.ssh.idleTimeoutMs], [true, 2222, 1_800_000]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the README's docker runtime block loads as written and shows the defaults", () => {
  const section = readme.slice(readme.indexOf('With `runtime: docker`'));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(yaml, 'the paragraph is followed by a yaml block');
  const dir = mkdtempSync(join(tmpdir(), 'gantry-readme-'));
  try {
    const path = join(dir, 'gantry.yaml');
    writeFileSync(path, yaml);
    const shown = loadConfig({ env: { GANTRY_DATA_DIR: dir }, flags: { config: path } });
    assert.deepEqual(shown.warnings, []);
    assert.equal(shown.runtime.kind, 'docker');
    const defaults = loadConfig({ env: { GANTRY_DATA_DIR: dir, GANTRY_RUNTIME: 'docker' } });
    assert.deepEqual(shown.runtime, defaults.runtime, 'the values shown are the defaults');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every file the README links to is in the repository, docs/architecture.md among them', () => {
  const targets = [...readme.matchAll(/\]\(([^)\s#]+)(?:#[^)\s]*)?\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^[a-z]+:/.test(t));
  assert.ok(targets.includes('docs/architecture.md'), 'the README points to the architecture');
  const missing = targets.filter((t) => !existsSync(join(import.meta.dirname, '..', t)));
  assert.deepEqual(missing, [], 'links to files that are not in the repository (only what is committed reaches users)');
});
