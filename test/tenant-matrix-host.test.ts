// What a tenant could reach on the host: other accounts where the runtime cannot keep them apart
// (the process runtime; the Docker runtime while its workers use the host's network), as a
// deployment there serves one account unless the operator opts in, and the data dir (no other
// local user reads it).
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { defaultFleet } from '../src/domain/catalog.js';
import { startServer, type RunningServer } from '../src/main.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { runGantry } from './support/spawn-gantry.js';

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

/**
 * Starts a server on `dir`; `logs` collects what it logs at warn and above. `runtime` stands in for
 * the one the config names (the rule on accounts reads only its name and the config; the Docker
 * runtime's own behaviour is test/docker.e2e.test.ts's).
 */
async function start(
  dir: string,
  env: Record<string, string> = {},
  logs: Array<{ msg: string; count?: number }> = [],
  runtime?: FakeRuntime,
): Promise<RunningServer> {
  const config = loadConfig({ env: { GANTRY_DATA_DIR: dir, GANTRY_CONFIG: join(dir, '..', 'config.json'), ...env } });
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line) as { msg: string });
      done();
    },
  });
  return startServer(config, {
    logger: pino({ level: 'warn' }, sink),
    print: () => {},
    ...(runtime ? { runtime, hosts: defaultFleet() } : {}),
  });
}

const modeOf = (path: string): string => (statSync(path).mode & 0o777).toString(8);

describe('the process runtime serves one account unless the operator opts in', () => {
  test('a server with two accounts refuses to start, naming the setting; with the opt-in it starts', async () => {
    const dir = newDataDir();
    const first = await start(dir);
    await first.services.accounts.createAccount('second');
    await first.close();
    await assert.rejects(start(dir), (err: Error) => {
      assert.match(
        err.message,
        /^refusing to start: this deployment has 2 accounts, and the process runtime runs every instance as a process of the server's own user/,
      );
      assert.match(err.message, /runtime\.process\.allowMultipleAccounts: true/);
      assert.match(err.message, /GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT=true/);
      return true;
    });
    const optedIn = await start(dir, { GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'true' });
    assert.equal(await optedIn.services.accounts.store.countAccounts(), 2);
    await optedIn.close();
  });
});

describe('the docker runtime serves one account while its workers would use the host network, unless the operator opts in', () => {
  /** The operator's settings, blank: the environment a spawned CLI inherits must not decide these tests. */
  const blank = { GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT: '', GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: '' };
  const docker = { runtime: 'docker', serverless: { autoscaler: { intervalMs: 3_600_000 } } };
  const startDocker = (dir: string, env: Record<string, string> = {}, runtime = new FakeRuntime({ name: 'docker' })) =>
    start(dir, env, [], runtime);

  /** The network the worker an endpoint with one warm worker gets is started on. */
  async function workerNetworkOn(server: RunningServer, runtime: FakeRuntime): Promise<string | undefined> {
    const { accounts, templates, endpoints, autoscaler } = server.services;
    const admin = await accounts.accountByName('admin');
    const template = await templates.create(admin.id, {
      name: `w-${Date.now()}`,
      imageName: 'my-worker:dev',
      isServerless: true,
    });
    const endpoint = await endpoints.create(admin.id, {
      name: 'warm',
      templateId: template.id,
      gpuIds: 'ADA_24',
      workersMin: 1,
      workersMax: 1,
    });
    await autoscaler.tick();
    const [worker] = autoscaler.workerIds(endpoint.id);
    assert.ok(worker, 'a warm worker was launched');
    return runtime.specs.get(worker)?.networkMode;
  }

  test('with a loopback job URL, a server with two accounts refuses to start, saying why and what to do', async () => {
    const dir = newDataDir(docker);
    const runtime = new FakeRuntime({ name: 'docker' });
    const first = await startDocker(dir, {}, runtime);
    assert.equal(
      await workerNetworkOn(first, runtime),
      'host',
      'workers given a loopback job URL share the host network',
    );
    await first.services.accounts.createAccount('second');
    await first.close();
    // The process runtime's opt-in is not this one.
    // A server that starts anyway is closed, so a broken rule fails here rather than hanging the file.
    const refused = startDocker(dir, { GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'true' }).then(
      async (server) => void (await server.close()),
    );
    await assert.rejects(refused, (err: Error) => {
      assert.equal(err.name, 'MultiAccountRefused');
      assert.match(
        err.message,
        /^refusing to start: this deployment has 2 accounts, and the docker runtime puts serverless workers on the host's network while the job URL they are given \(127\.0\.0\.1:0\) is on loopback/,
      );
      for (const named of [
        /--host/,
        /GANTRY_PUBLIC_JOB_URL/,
        /server\.jobPort/,
        /runtime\.docker\.allowMultipleAccountsOnHostNetwork: true/,
        /GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT=true/,
      ])
        assert.match(err.message, named);
      return true;
    });
  });

  test('with a loopback job URL, gantry accounts create refuses a second account; with a non-loopback one, or the opt-in, it creates it', () => {
    const dir = newDataDir(docker);
    const config = join(dir, '..', 'config.json');
    const create = (name: string, env: Record<string, string> = {}) =>
      runGantry(['accounts', 'create', name, '--data-dir', dir, '--config', config], {
        ...blank,
        GANTRY_LOG_LEVEL: 'silent',
        ...env,
      });
    assert.equal(create('first').status, 0, 'the first account needs no opt-in');
    const refused = create('second');
    assert.notEqual(refused.status, 0);
    assert.match(
      refused.stderr,
      /^gantry: refusing to create a second account: the docker runtime puts serverless workers on the host's network/,
    );
    assert.match(refused.stderr, /GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT=true/);
    assert.equal(
      create('second', { GANTRY_PUBLIC_JOB_URL: 'http://192.0.2.10:8080' }).status,
      0,
      'workers on their own network',
    );
    assert.equal(
      create('third', { GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT: 'true' }).status,
      0,
      'the operator opted in',
    );
    const names = runGantry(['accounts', 'list', '--data-dir', dir, '--config', config], blank)
      .stdout.trim()
      .split('\n')
      .map((line) => line.split('\t')[1]);
    assert.deepEqual(names.sort(), ['first', 'second', 'third']);
  });

  test('a server with two accounts starts when workers get a non-loopback job URL, and its workers are then on their own network', async () => {
    const dir = newDataDir(docker);
    const first = await startDocker(dir);
    await first.services.accounts.createAccount('second');
    await first.close();
    const runtime = new FakeRuntime({ name: 'docker' });
    const server = await startDocker(dir, { GANTRY_PUBLIC_JOB_URL: 'http://192.0.2.10:8080' }, runtime);
    try {
      assert.equal(await server.services.accounts.store.countAccounts(), 2);
      assert.equal(await workerNetworkOn(server, runtime), 'default', 'the rule and the worker read the job URL alike');
    } finally {
      await server.close();
    }
  });

  test('a server with two accounts and a loopback job URL starts once the operator opts in, in the file or the environment', async () => {
    const dir = newDataDir(docker);
    const first = await startDocker(dir);
    await first.services.accounts.createAccount('second');
    await first.close();
    const byEnv = await startDocker(dir, { GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT: 'true' });
    assert.equal(await byEnv.services.accounts.store.countAccounts(), 2);
    await byEnv.close();
    writeFileSync(
      join(dir, '..', 'config.json'),
      JSON.stringify({
        server: { port: 0 },
        ...docker,
        runtime: { kind: 'docker', docker: { allowMultipleAccountsOnHostNetwork: true } },
      }),
    );
    const byFile = await startDocker(dir);
    assert.equal(await byFile.services.accounts.store.countAccounts(), 2);
    await byFile.close();
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
      const pod = await pods.create(admin.id, {
        name: 'idle',
        image: 'host/idle:1',
        gpu: { id: 'NVIDIA GeForce RTX 4090' },
        mounts: { persistent: { size: 10, path: '/workspace' } },
      });
      const instanceDir = join(dir, 'instances', pod.id);
      for (let i = 0; i < 2000 && !readdirSync(dir).includes('instances'); i++)
        await new Promise((r) => setTimeout(r, 10));
      for (
        let i = 0;
        i < 2000 && !(safeList(instanceDir).includes('pid') && safeList(instanceDir).includes('output.log'));
        i++
      )
        await new Promise((r) => setTimeout(r, 10));
      assert.equal(modeOf(dir), '700');
      for (const file of ['gantry.db', 'gantry.db-wal', 'gantry.db-shm', 'secret.key'])
        assert.equal(modeOf(join(dir, file)), '600', file);
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
    for (const path of [dir, join(dir, 'instances'), instanceDir, join(dir, 'volumes'), volumeDir])
      chmodSync(path, 0o755);
    writeFileSync(join(dir, 'notes.txt'), 'an operator file\n');
    for (const file of ['gantry.db', 'secret.key', 'notes.txt', join('instances', 'old-instance', 'output.log')])
      chmodSync(join(dir, file), 0o644);

    const logs: Array<{ msg: string; count?: number }> = [];
    const second = await start(dir, {}, logs);
    await second.close();
    assert.equal(modeOf(dir), '700');
    for (const file of ['gantry.db', 'secret.key', 'notes.txt']) assert.equal(modeOf(join(dir, file)), '600', file);
    for (const folder of ['instances', join('instances', 'old-instance'), 'volumes', join('volumes', 'vol1')])
      assert.equal(modeOf(join(dir, folder)), '700', folder);
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
