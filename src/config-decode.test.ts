import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config, type ConfigSources } from './config.js';
import { pathLabel } from './config-decode.js';

function load(text: string, env: Record<string, string> = {}, flags: ConfigSources['flags'] = {}): Config {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-config-'));
  try {
    const path = join(dir, 'gantry.yaml');
    writeFileSync(path, text);
    return loadConfig({ env: { GANTRY_DATA_DIR: dir, ...env }, flags: { config: path, ...flags } });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a refused value is named by its exact path, list items by their index', () => {
  const refused: Array<[string, RegExp]> = [
    [
      'runtime: { docker: { portRange: [20000, 70000] } }',
      /Invalid configuration: runtime\.docker\.portRange\[1\] must be an integer from 1 to 65535$/,
    ],
    [
      'runtime: { docker: { portRange: [20000] } }',
      /runtime\.docker\.portRange must be \[first, last\]: two ports from 1 to 65535/,
    ],
    [
      'runtime: { docker: { registries: { allow: [docker.io, 5] } } }',
      /runtime\.docker\.registries\.allow\[1\] must be a string$/,
    ],
    [
      'serverless: { webhooks: { maxAttempts: lots } }',
      /serverless\.webhooks\.maxAttempts must be a non-negative number$/,
    ],
    [
      'jobs: { workerRateLimits: { perWorker: -1 } }',
      /jobs\.workerRateLimits\.perWorker must be a non-negative number$/,
    ],
    ['jobs: 5', /jobs must be a mapping \{ takeWaitMs, stopWaitMs, .*workerRateLimits \}$/],
    ['server: { host: 8 }', /server\.host must be a string$/],
    ['fleet: { joinTokenTtlMs: 999 }', /fleet\.joinTokenTtlMs must be at least 1000 ms$/],
  ];
  for (const [text, message] of refused) assert.throws(() => load(text), message, text);
});

test('a value from an environment variable is refused naming both the key and the variable', () => {
  assert.throws(
    () => load('{}', { GANTRY_SSH_PORT: 'twenty-two' }),
    /ssh\.port must be a number from 0 to 65535 \(from GANTRY_SSH_PORT\)$/,
  );
  assert.throws(
    () => load('{}', { GANTRY_JOB_PORT: '-5' }),
    /server\.jobPort must be a non-negative number \(from GANTRY_JOB_PORT\)$/,
  );
  assert.throws(
    () => load('{}', { GANTRY_SSH_ENABLED: 'nope' }),
    /ssh\.enabled must be true or false \(from GANTRY_SSH_ENABLED\)$/,
  );
});

test('numbers and booleans written as strings are read as such; an empty variable counts as unset', () => {
  const config = load('jobs: { takeWaitMs: "5000", rateLimits: "false" }\nssh: { enabled: "0" }\n', {
    GANTRY_JOB_PORT: '9090',
    GANTRY_LOG_LEVEL: '',
  });
  assert.deepEqual(
    [config.jobs.takeWaitMs, config.jobs.rateLimits, config.ssh.enabled, config.server.jobPort, config.server.logLevel],
    [5000, false, false, 9090, 'info'],
  );
});

test('a flag wins over its environment variable, which wins over the file', () => {
  assert.equal(load('server: { port: 1111 }').server.port, 1111);
  assert.equal(load('server: { port: 1111 }', { PORT: '2222' }).server.port, 2222);
  assert.equal(load('server: { port: 1111 }', { PORT: '2222' }, { port: 3333 }).server.port, 3333);
  assert.throws(() => load('{}', { PORT: 'http' }), /server\.port must be a non-negative number \(from PORT\)/);
  assert.equal(load('{}', { PORT: 'http' }, { port: 3333 }).server.port, 3333, 'a flag replaces a malformed variable');
});

test('counts are floored and loop periods raised to their floor, as before the schema', () => {
  const config = load(
    'jobs: { retryBudget: 2.7, pingIntervalMs: 5, commitConcurrency: 0 }\nserverless: { webhooks: { concurrency: 0 } }\nssh: { port: 2022.9 }\n',
  );
  assert.deepEqual(
    [
      config.jobs.retryBudget,
      config.jobs.pingIntervalMs,
      config.jobs.commitConcurrency,
      config.serverless.webhooks.concurrency,
      config.ssh.port,
    ],
    [2, 100, 1, 1, 2022],
  );
});

test('an unknown key deep in a section is reported with its full path and the keys known there', () => {
  const config = load('runtime: { docker: { registries: { alow: [x] } } }');
  assert.deepEqual(config.warnings, [
    'unknown config key "runtime.docker.registries.alow" is ignored (known here: allow, only, private)',
  ]);
});

test('a path label quotes keys that are not names and indexes list items', () => {
  assert.equal(pathLabel(['images', 'w:1', 'health', 'port']), 'images["w:1"].health.port');
  assert.equal(pathLabel(['runtime', 'docker', 'portRange', '1']), 'runtime.docker.portRange[1]');
});
