import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { configReference, withReference } from './config-reference.js';
import { envBindings } from './config-decode.js';
import { ConfigFileSchema } from './config-schema.js';

const docs = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');

test('docs/configuration.md holds the reference written from the schema (npm run docs:config rewrites it)', () => {
  assert.equal(
    docs,
    withReference(docs, configReference()),
    'docs/configuration.md is out of date with src/config-schema.ts: run npm run docs:config',
  );
});

test('the reference names every key of the schema and every environment variable that sets one', () => {
  const reference = configReference();
  for (const key of [
    'server.maxConnectionsPerClient',
    'jobs.workerRateLimits.attachedWorkers',
    'runtime.docker.registries.private',
    'serverless.autoscaler.startTimeoutMs',
    'ssh.keepaliveCountMax',
    'fleet.joinTokenTtlMs',
  ])
    assert.ok(reference.includes(`| \`${key}\` |`), key);
  for (const { node } of envBindings(ConfigFileSchema))
    assert.ok(reference.includes(`\`${(node as { env: string }).env}\``), String((node as { env: string }).env));
});

test('every environment variable the README lists for a config key is one the schema reads', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const bound = new Set(envBindings(ConfigFileSchema).map(({ node }) => (node as { env: string }).env));
  const listed = [...readme.matchAll(/^\| (?:`--[a-z-]+` \/ )?`([A-Z_]+)` \|/gm)].map((m) => m[1]!);
  const envOnly = new Set(['GANTRY_CONFIG', 'GANTRY_BOOTSTRAP_KEY']);
  assert.ok(listed.length > 10, 'the README table was found');
  for (const name of listed)
    assert.ok(bound.has(name) || envOnly.has(name), `${name} is in the README but not in src/config-schema.ts`);
});
