// What a tenant on the process runtime could reach on the host: other accounts (a deployment on it
// serves one account unless the operator opts in) and the data dir (no other local user reads it).
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { startServer, type RunningServer } from '../src/main.js';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A data dir path Gantry creates itself on its first start (the config file sits beside it). */
function newDataDir(file: Record<string, unknown> = {}): string {
  const parent = mkdtempSync(join(tmpdir(), 'gantry-host-'));
  dirs.push(parent);
  writeFileSync(join(parent, 'config.json'), JSON.stringify({ server: { port: 0 }, ...file }));
  return join(parent, 'data');
}

/** Starts a server on `dir`; `logs` collects what it logs at warn and above. */
async function start(dir: string, env: Record<string, string> = {}, logs: Array<{ msg: string; count?: number }> = []): Promise<RunningServer> {
  const config = loadConfig({ env: { GANTRY_DATA_DIR: dir, GANTRY_CONFIG: join(dir, '..', 'config.json'), ...env } });
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line) as { msg: string });
      done();
    },
  });
  return startServer(config, { logger: pino({ level: 'warn' }, sink), print: () => {} });
}

const modeOf = (path: string): string => (statSync(path).mode & 0o777).toString(8);

describe('the process runtime serves one account unless the operator opts in', () => {
  test('a server with two accounts refuses to start, naming the setting; with the opt-in it starts', async () => {
    const dir = newDataDir();
    const first = await start(dir);
    await first.services.accounts.createAccount('second');
    await first.close();
    await assert.rejects(start(dir), (err: Error) => {
      assert.match(err.message, /^refusing to start: this deployment has 2 accounts, and the process runtime runs every instance as a process of the server's own user/);
      assert.match(err.message, /runtime\.process\.allowMultipleAccounts: true/);
      assert.match(err.message, /GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT=true/);
      return true;
    });
    const optedIn = await start(dir, { GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'true' });
    assert.equal(await optedIn.services.accounts.store.countAccounts(), 2);
    await optedIn.close();
  });
});

describe('no other local user can read the data dir', () => {
  const image = { 'host/idle:1': { command: [process.execPath, '-e', 'setInterval(() => {}, 1 << 30)'] } };

  test('after a start the data dir is 0700 and the database, its WAL files, the secret key and instance files are 0600', async () => {
    const dir = newDataDir({ images: image });
    const server = await start(dir);
    try {
      const { pods, accounts } = server.services;
      const admin = await accounts.accountByName('admin');
      const pod = await pods.create(admin.id, { name: 'idle', image: 'host/idle:1', gpu: { id: 'NVIDIA GeForce RTX 4090' }, mounts: { persistent: { size: 10, path: '/workspace' } } });
      const instanceDir = join(dir, 'instances', pod.id);
      for (let i = 0; i < 2000 && !readdirSync(dir).includes('instances'); i++) await new Promise((r) => setTimeout(r, 10));
      for (let i = 0; i < 2000 && !(safeList(instanceDir).includes('pid') && safeList(instanceDir).includes('output.log')); i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(modeOf(dir), '700');
      for (const file of ['gantry.db', 'gantry.db-wal', 'gantry.db-shm', 'secret.key']) assert.equal(modeOf(join(dir, file)), '600', file);
      assert.equal(modeOf(join(dir, 'instances')), '700');
      assert.equal(modeOf(instanceDir), '700');
      assert.equal(modeOf(join(instanceDir, 'output.log')), '600');
      assert.equal(modeOf(join(instanceDir, 'pid')), '600');
      assert.equal(modeOf(join(dir, 'pods', pod.id, 'persistent')), '700');
    } finally {
      await server.close();
    }
  });

  test('a data dir an older version left 0755/0644 is tightened at start, with one warning saying how much', async () => {
    const dir = newDataDir();
    const first = await start(dir);
    await first.close();
    const instanceDir = join(dir, 'instances', 'old-instance');
    const volumeDir = join(dir, 'volumes', 'vol1');
    for (const folder of [instanceDir, volumeDir]) mkdirLoose(folder);
    writeFileSync(join(instanceDir, 'output.log'), 'old output\n', { mode: 0o644 });
    writeFileSync(join(volumeDir, 'tenant-file'), 'tenant data\n', { mode: 0o644 });
    for (const path of [dir, join(dir, 'instances'), instanceDir, join(dir, 'volumes'), volumeDir]) chmodSync(path, 0o755);
    writeFileSync(join(dir, 'notes.txt'), 'an operator file\n');
    for (const file of ['gantry.db', 'secret.key', 'notes.txt', join('instances', 'old-instance', 'output.log')]) chmodSync(join(dir, file), 0o644);

    const logs: Array<{ msg: string; count?: number }> = [];
    const second = await start(dir, {}, logs);
    await second.close();
    assert.equal(modeOf(dir), '700');
    for (const file of ['gantry.db', 'secret.key', 'notes.txt']) assert.equal(modeOf(join(dir, file)), '600', file);
    for (const folder of ['instances', join('instances', 'old-instance'), 'volumes', join('volumes', 'vol1')]) assert.equal(modeOf(join(dir, folder)), '700', folder);
    assert.equal(modeOf(join(instanceDir, 'output.log')), '600');
    // A volume's contents are the tenant's: the closed data dir hides them, Gantry leaves them be.
    assert.equal(modeOf(join(volumeDir, 'tenant-file')), '644');
    const warnings = logs.filter((l) => /took group and other permissions off/.test(l.msg));
    assert.equal(warnings.length, 1, JSON.stringify(logs));
    assert.equal(warnings[0]!.count, 9);
  });
});

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** A folder as an older version made it: 0755 whatever the umask. */
function mkdirLoose(path: string): void {
  mkdirSync(path, { recursive: true });
  chmodSync(path, 0o755);
}
