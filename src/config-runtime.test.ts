import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from './config.js';

function load(text: string, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-config-'));
  try {
    const path = join(dir, 'gantry.yaml');
    writeFileSync(path, text);
    return loadConfig({ env: { GANTRY_DATA_DIR: dir, ...env }, flags: { config: path } });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the utilisation sampler runs every 5 s unless runtime.statsIntervalMs or GANTRY_RUNTIME_STATS_INTERVAL_MS says otherwise, never below 100 ms', () => {
  assert.equal(load('{}').runtime.statsIntervalMs, 5_000);
  const set = load('runtime: { statsIntervalMs: 2000 }');
  assert.equal(set.runtime.statsIntervalMs, 2_000);
  assert.deepEqual(set.warnings, []);
  assert.equal(
    load('runtime: { statsIntervalMs: 2000 }', { GANTRY_RUNTIME_STATS_INTERVAL_MS: '750' }).runtime.statsIntervalMs,
    750,
  );
  assert.throws(() => load('runtime: { statsIntervalMs: 10 }'), /runtime\.statsIntervalMs must be at least 100/);
  assert.throws(
    () => load('runtime: { statsIntervalMs: often }'),
    /runtime\.statsIntervalMs must be a non-negative number/,
  );
});
