import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGantry, spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';

const dataDir = mkdtempSync(join(tmpdir(), 'gantry-cli-'));
let server: SpawnedGantry | undefined;
after(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const get = (url: string, key?: string) => fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });

test('the first start creates the admin account, prints its key once, and the key works', async () => {
  server = await spawnGantry(['--data-dir', dataDir], { GANTRY_BOOTSTRAP_KEY: '' });
  const m = /export GANTRY_API_KEY=(\S+)/.exec(server.output());
  assert.ok(m, `no key printed:\n${server.output()}`);
  const key = m[1]!;
  assert.equal((await get(`${server.url}/healthz`)).status, 200);
  assert.equal((await get(`${server.url}/v2/account/ssh-keys`, key)).status, 200);
  assert.equal((await get(`${server.url}/v2/account/ssh-keys`)).status, 401);
});

/** The operator's opt-in to several accounts on the process runtime (runtime/account-isolation.ts). */
const MULTI_ACCOUNT = { GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'true' };

test('the CLI refuses a second account while the runtime is the process runtime, naming the setting that allows it', () => {
  assert.ok(server);
  const refused = runGantry(['accounts', 'create', 'team-x', '--data-dir', dataDir], {
    GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: '',
  });
  assert.notEqual(refused.status, 0);
  assert.match(refused.stderr, /^gantry: refusing to create a second account: the process runtime/);
  assert.match(refused.stderr, /runtime\.process\.allowMultipleAccounts: true/);
  assert.match(refused.stderr, /GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT=true/);
  // Nothing was created: the account list after the next test's create holds two, not three.
});

test('accounts and keys are managed by the CLI while the server runs, and a revoked key stops working', async () => {
  assert.ok(server);
  const created = runGantry(['accounts', 'create', 'team-a', '--data-dir', dataDir], MULTI_ACCOUNT);
  assert.equal(created.status, 0, created.stderr);
  const readKey = runGantry(['keys', 'create', '--account', 'team-a', '--scope', 'read', '--data-dir', dataDir]);
  assert.equal(readKey.status, 0, readKey.stderr);
  const key = readKey.stdout.trim();
  assert.match(key, /^gty_/);
  assert.equal((await get(`${server.url}/v2/account/ssh-keys`, key)).status, 200);
  const put = await fetch(`${server.url}/v2/account/ssh-keys`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: '[]',
  });
  assert.equal(put.status, 403);

  const list = runGantry(['keys', 'list', '--account', 'team-a', '--data-dir', dataDir]);
  assert.equal(list.status, 0, list.stderr);
  const id = list.stdout.trim().split('\t')[0]!;
  assert.ok(!list.stdout.includes(key), 'keys list must not print the key itself');
  assert.equal(runGantry(['keys', 'revoke', id, '--data-dir', dataDir]).status, 0);
  // the server's key cache lets a revocation made by another process take effect within seconds
  const deadline = Date.now() + 10_000;
  let status = 200;
  while (Date.now() < deadline && status !== 401) {
    status = (await get(`${server.url}/v2/account/ssh-keys`, key)).status;
    if (status !== 401) await new Promise((r) => setTimeout(r, 250));
  }
  assert.equal(status, 401);
});

test('a second start does not create another admin or print a key', async () => {
  assert.ok(server);
  await server.stop();
  // Two accounts now: the start refusal without this opt-in is tested in-process (tenant-matrix-host).
  server = await spawnGantry(['--data-dir', dataDir], MULTI_ACCOUNT);
  assert.doesNotMatch(server.output(), /GANTRY_API_KEY/);
  const accounts = runGantry(['accounts', 'list', '--data-dir', dataDir]);
  assert.equal(accounts.stdout.trim().split('\n').length, 2);
});

test('GANTRY_BOOTSTRAP_KEY becomes the admin key on a first start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-cli-boot-'));
  const s = await spawnGantry(['--data-dir', dir], { GANTRY_BOOTSTRAP_KEY: 'my-bootstrap-key-123' });
  try {
    assert.equal((await get(`${s.url}/v2/account/ssh-keys`, 'my-bootstrap-key-123')).status, 200);
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('unknown commands and bad flags exit non-zero with a message', () => {
  const r = runGantry(['frobnicate']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /unknown command/);
  const k = runGantry(['keys', 'create', '--scope', 'admin', '--account', 'x', '--data-dir', dataDir]);
  assert.notEqual(k.status, 0);
});
