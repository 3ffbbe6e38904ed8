import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from './config.js';

function withFile(text: string, check: (config: Config) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-config-'));
  try {
    const path = join(dir, 'gantry.yaml');
    writeFileSync(path, text);
    check(loadConfig({ env: { GANTRY_DATA_DIR: dir }, flags: { config: path } }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a misspelt config key is reported with the keys known in its section, and the rest still applies', () => {
  withFile('jobs:\n  retryBudgte: 9\n  takeWaitMs: 5000\nserverless:\n  autoscaler:\n    idleTimout: 3\nimages:\n  any-name:dev: { command: ["true"] }\n', (config) => {
    assert.equal(config.warnings.length, 2, config.warnings.join('\n'));
    assert.match(config.warnings[0]!, /unknown config key "jobs\.retryBudgte" is ignored \(known here: .*retryBudget/);
    assert.match(config.warnings[1]!, /"serverless\.autoscaler\.idleTimout"/);
    assert.equal(config.jobs.takeWaitMs, 5000);
    assert.equal(config.jobs.retryBudget, 3, 'the misspelt key did not apply');
  });
});

test('group commit settings default to the store (null concurrency) and can be set', () => {
  withFile('{}', (config) => {
    assert.equal(config.jobs.commitConcurrency, null);
    assert.equal(config.jobs.maxBatchSize, 1000);
    assert.deepEqual(config.warnings, []);
  });
  withFile('jobs: { commitConcurrency: 8, maxBatchSize: 200 }', (config) => {
    assert.equal(config.jobs.commitConcurrency, 8);
    assert.equal(config.jobs.maxBatchSize, 200);
  });
});

test('the public job URL follows the job listener when there is one, else the main public URL', () => {
  withFile('{}', (config) => {
    assert.equal(config.server.jobPort, null);
    assert.equal(config.server.publicJobUrl, config.server.publicUrl);
  });
  withFile('server: { jobPort: 9090 }', (config) => {
    assert.equal(config.server.publicJobUrl, 'http://127.0.0.1:9090');
  });
  withFile('server: { jobPort: 9090, publicJobUrl: "https://api.example.test/" }', (config) => {
    assert.equal(config.server.publicJobUrl, 'https://api.example.test', 'without the trailing slash');
  });
});

test('a worker long-poll longer than the SDKs wait (90 s) is refused at start, naming the setting', () => {
  withFile('jobs: { takeWaitMs: 85000, stopWaitMs: 1000 }', (config) => assert.deepEqual([config.jobs.takeWaitMs, config.jobs.stopWaitMs], [85_000, 1000]));
  assert.throws(() => withFile('jobs: { takeWaitMs: 95000 }', () => {}), /jobs\.takeWaitMs must be at most 85000 ms/);
  assert.throws(() => withFile('jobs: { stopWaitMs: 120000 }', () => {}), /jobs\.stopWaitMs must be at most 85000 ms/);
});

test("an image mapping's tenantEnv and tenantArgs are read, and a malformed tenantEnv is refused naming the image", () => {
  withFile('images:\n  w:1: { command: ["./run.sh"], tenantEnv: ["MODEL_*", "LOG_LEVEL"], tenantArgs: false }\n', (config) => {
    assert.deepEqual(config.images['w:1']?.tenantEnv, ['MODEL_*', 'LOG_LEVEL']);
    assert.equal(config.images['w:1']?.tenantArgs, false);
  });
  assert.throws(() => withFile('images:\n  w:1: { command: ["./run.sh"], tenantEnv: ["MODEL-*"] }\n', () => {}), /images\["w:1"\]\.tenantEnv must be a list of variable names or NAME_PREFIX\* patterns/);
});

test('an image mapped to a bare interpreter that takes tenant args is warned about; a script, or tenantArgs false, is not', () => {
  withFile('images:\n  py:1: { command: ["/usr/bin/python3", "-u"] }\n  node:1: { command: ["node"] }\n  ok:1: { command: ["python3", "-u", "handler.py"] }\n  closed:1: { command: ["python3"], tenantArgs: false }\n', (config) => {
    const warned = config.warnings.filter((w) => w.includes('bare interpreter'));
    assert.equal(warned.length, 2, warned.join('\n'));
    assert.match(warned[0]!, /^images\["py:1"\] maps to the bare interpreter "\/usr\/bin\/python3 -u": a tenant's args would be its arguments/);
    assert.match(warned[1]!, /^images\["node:1"\]/);
  });
});

test("the process runtime's orphan grace defaults to 30 s and is read from the file, or from the environment first", () => {
  withFile('{}', (config) => assert.equal(config.runtime.process.orphanGraceMs, 30_000));
  withFile('runtime:\n  process:\n    orphanGraceMs: 5000\n', (config) => {
    assert.deepEqual(config.warnings, []);
    assert.equal(config.runtime.process.orphanGraceMs, 5_000);
  });
  const config = loadConfig({ env: { GANTRY_DATA_DIR: tmpdir(), GANTRY_PROCESS_ORPHAN_GRACE_MS: '1500' } });
  assert.equal(config.runtime.process.orphanGraceMs, 1_500);
  assert.throws(() => loadConfig({ env: { GANTRY_DATA_DIR: tmpdir(), GANTRY_PROCESS_ORPHAN_GRACE_MS: 'soon' } }), /runtime\.process\.orphanGraceMs must be a non-negative number/);
});
