/**
 * `gantry hosts`: a token made by the CLI joins a host on the running server, the list shows it,
 * and a revocation by the CLI (another process) stops its agent. The compiled CLI, a real server
 * on SQLite, real HTTP.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGantry, spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { call, joinBody } from './support/fleet.js';

const dataDir = mkdtempSync(join(tmpdir(), 'gantry-hosts-cli-'));
let server: SpawnedGantry | undefined;
after(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const gantry = (...args: string[]) => runGantry([...args, '--data-dir', dataDir]);

test('a token from the CLI joins one host; the list shows it with its capacity and heartbeat; a CLI revocation stops its agent', async () => {
  server = await spawnGantry(['--data-dir', dataDir], { GANTRY_BOOTSTRAP_KEY: '' });
  const created = gantry(
    'hosts',
    'token',
    'create',
    '--data-center',
    'EU-RO-1',
    '--cloud',
    'COMMUNITY',
    '--ttl',
    '10m',
  );
  assert.equal(created.status, 0, created.stderr);
  const token = created.stdout.trim();
  assert.match(token, /^gjt_[A-Za-z0-9]{32}$/);
  assert.match(created.stderr, /EU-RO-1 \(COMMUNITY\)/);
  assert.ok(!created.stderr.includes(token), 'the token is printed once, on stdout');

  const joined = await call(server.url, null, 'POST', '/agent/v1/join', joinBody(token, { name: 'rack-3-gpu' }));
  assert.equal(joined.status, 201, JSON.stringify(joined.body));
  const { hostId, credential, dataCenterId, cloud } = joined.body as {
    hostId: string;
    credential: string;
    dataCenterId: string;
    cloud: string;
  };
  assert.deepEqual([dataCenterId, cloud], ['EU-RO-1', 'COMMUNITY']);
  assert.equal(
    (await call(server.url, null, 'POST', '/agent/v1/join', joinBody(token))).status,
    401,
    'the token joined once',
  );

  const list = gantry('hosts', 'list');
  assert.equal(list.status, 0, list.stderr);
  const [head, row] = list.stdout.trim().split('\n');
  assert.match(
    head!,
    /^ID\s+NAME\s+DATA CENTER\s+CLOUD\s+GPUS\s+VCPUS\s+MEMORY\s+DISK\s+INSTANCES\s+HEARTBEAT\s+STATE$/,
  );
  assert.match(
    row!,
    new RegExp(
      `^${hostId}\\s+rack-3-gpu\\s+EU-RO-1\\s+COMMUNITY\\s+2 × NVIDIA GeForce RTX 4090\\s+32\\s+128 GB\\s+1000 GB\\s+0\\s+\\d+ s ago\\s+available$`,
    ),
  );
  assert.ok(!list.stdout.includes(credential.slice(-32)));

  const json = gantry('hosts', 'list', '--json');
  const [listed] = JSON.parse(json.stdout) as Array<Record<string, any>>;
  assert.deepEqual(
    [listed?.id, listed?.state, listed?.gpuTypeId, listed?.capacity?.gpus?.length, listed?.instances],
    [hostId, 'available', 'NVIDIA GeForce RTX 4090', 2, 0],
  );
  assert.ok(!('credentialHash' in listed!), 'the credential hash is not shown');

  assert.equal((await call(server.url, credential, 'POST', '/agent/v1/report', {})).status, 200);
  const revoked = gantry('hosts', 'revoke', hostId);
  assert.equal(revoked.status, 0, revoked.stderr);
  // the server looks for revocations made by other processes every second
  const deadline = Date.now() + 10_000;
  let answer = await call(server.url, credential, 'POST', '/agent/v1/report', {});
  while (answer.status === 200 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    answer = await call(server.url, credential, 'POST', '/agent/v1/report', {});
  }
  assert.deepEqual([answer.status, answer.body.code], [401, 'HOST_REVOKED']);
  assert.match(gantry('hosts', 'list').stdout, new RegExp(`${hostId}.*revoked$`, 'm'));
  const twice = gantry('hosts', 'revoke', hostId);
  assert.notEqual(twice.status, 0);
  assert.match(twice.stderr, /no live host with id/);
});

test('bad hosts arguments exit non-zero with a message', () => {
  const cases: Array<[string[], RegExp]> = [
    [['hosts', 'token', 'create', '--cloud', 'PUBLIC'], /--cloud must be SECURE or COMMUNITY/],
    [['hosts', 'token', 'create', '--ttl', '90'], /--ttl "90" is not a duration/],
    [['hosts', 'token', 'create', '--ttl', '90d'], /--ttl must be from 1s to 30d/],
    [['hosts', 'token', 'create', '--data-center', 'MARS-1'], /Data center "MARS-1" is not in the catalog/],
    [['hosts', 'revoke'], /usage: gantry hosts revoke ID/],
    [['hosts', 'frob'], /gantry hosts list/],
  ];
  for (const [args, message] of cases) {
    const r = gantry(...args);
    assert.notEqual(r.status, 0, args.join(' '));
    assert.match(r.stderr, message);
  }
  assert.match(gantry('--help').stdout + runGantry(['help']).stdout, /gantry hosts token create/);
});
