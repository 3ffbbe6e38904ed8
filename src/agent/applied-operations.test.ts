import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { AppliedOperations } from './applied-operations.js';

const dir = mkdtempSync(join(tmpdir(), 'gantry-applied-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const logger = pino({ level: 'silent' });

test('the applied operations survive reopening, keep only the last ones, and are written 0600 with no temporary file left', async () => {
  const path = join(dir, 'bounded.json');
  const applied = await AppliedOperations.open(path, { logger, limit: 3 });
  await Promise.all([
    applied.record('op-1', { ok: true }),
    applied.record('op-2', { ok: false, error: 'pull failed: manifest unknown' }),
    applied.record('op-3', { ok: true }),
    applied.record('op-4', { ok: true }),
  ]);
  const reopened = await AppliedOperations.open(path, { logger, limit: 3 });
  assert.equal(reopened.get('op-1'), undefined, 'the oldest is forgotten past the limit');
  assert.deepEqual(reopened.get('op-2'), { ok: false, error: 'pull failed: manifest unknown' });
  assert.deepEqual(reopened.get('op-4'), { ok: true });
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.startsWith('bounded')),
    ['bounded.json'],
  );
});

test('an applied operations file that cannot be read starts empty rather than stopping the agent', async () => {
  const path = join(dir, 'garbled.json');
  writeFileSync(path, '{"version":1,"operations":[["op-1"');
  const applied = await AppliedOperations.open(path, { logger });
  assert.equal(applied.size, 0);
  await applied.record('op-9', { ok: true });
  assert.deepEqual((await AppliedOperations.open(path, { logger })).get('op-9'), { ok: true });
});
