/**
 * HTTPS end to end with real processes: `gantry serve` (runtime fleet) with a certificate a
 * test-made CA signed; the CLI and `gantry agent` verify it against the system's authorities plus
 * `--ca-file` / `GANTRY_CA_FILE`, and without the CA refuse it saying why; SIGHUP makes the server
 * read its certificate files again while a connection stays open across it, and a bad file then
 * keeps the certificate served. The agent joins a real Docker Engine's host (DOCKER_HOST).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { connect, type TLSSocket } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gantryBin, runGantry, spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { spawnAgent, type SpawnedAgent } from './support/spawn-agent.js';
import { dockerEngine, noEngine, removeNamespace, uniqueNamespace } from './support/docker.js';
import { eventually, freePortRange } from './support/eventually.js';
import { issueCertificate, makeCa } from './support/test-ca.js';

// before any test is declared (test/test-registration.test.ts)
const engine = await dockerEngine();

const KEY = 'tls-e2e-admin-key-0123456789abcdef';
const ca = makeCa();
const caPem = readFileSync(ca.certFile);
const dir = mkdtempSync(join(tmpdir(), 'gantry-tls-e2e-'));
const dataDir = join(dir, 'control-plane');
const configPath = join(dir, 'config.json');
const served = { certFile: join(dir, 'server.pem'), keyFile: join(dir, 'server.key') };
const first = issueCertificate(ca, 'first', { dns: ['localhost'], ips: ['127.0.0.1'] });
copyFileSync(first.certFile, served.certFile);
copyFileSync(first.keyFile, served.keyFile);
const fingerprintOf = (file: string): string => new X509Certificate(readFileSync(file)).fingerprint256;

let server: SpawnedGantry;
const agents: SpawnedAgent[] = [];
const namespaces: string[] = [];
before(async () => {
  writeFileSync(
    configPath,
    JSON.stringify({
      server: { tls: { certFile: 'server.pem', keyFile: 'server.key' } },
      fleet: { heartbeatMs: 500, heartbeatTimeoutMs: 4_000, pollWaitMs: 5_000 },
      runtime: { kind: 'fleet' },
      proxy: { enabled: false },
      ssh: { enabled: false },
    }),
  );
  server = await spawnGantry(['--host', '127.0.0.1', '--data-dir', dataDir, '--config', configPath], {
    GANTRY_BOOTSTRAP_KEY: KEY,
    GANTRY_LOG_LEVEL: 'info',
  });
});
after(async () => {
  await Promise.all(agents.map((a) => a.stop('SIGTERM')));
  await server?.stop();
  const engine = await dockerEngine();
  if (engine) for (const ns of namespaces) await removeNamespace(engine.client, ns);
  rmSync(dir, { recursive: true, force: true });
  rmSync(ca.dir, { recursive: true, force: true });
});

/** `gantry ARGS` without blocking this process; answers its status and output. */
function gantry(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [gantryBin, ...args],
      { env: { ...process.env, GANTRY_CA_FILE: '', NODE_EXTRA_CA_CERTS: '', ...env }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ status: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const peerFingerprint = (url: string): Promise<string> => {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), ca: caPem }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.once('error', reject);
  });
};

describe('gantry serve over HTTPS', () => {
  test('it says it listens on https://', () => {
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  });

  test('the CLI verifies the certificate: with --ca-file or GANTRY_CA_FILE it works, without it says why it refuses', async () => {
    const list = ['pods', 'list', '--url', server.url, '--api-key', KEY, '--json'];
    const withFlag = await gantry([...list, '--ca-file', ca.certFile]);
    assert.equal(withFlag.status, 0, withFlag.stderr);
    assert.deepEqual(JSON.parse(withFlag.stdout), []);
    const withEnv = await gantry(list, { GANTRY_CA_FILE: ca.certFile });
    assert.equal(withEnv.status, 0, withEnv.stderr);
    const withNodeVariable = await gantry(list, { NODE_EXTRA_CA_CERTS: ca.certFile });
    assert.equal(withNodeVariable.status, 0, withNodeVariable.stderr);
    const without = await gantry(list);
    assert.notEqual(without.status, 0);
    assert.match(
      without.stderr,
      /UNABLE_TO_VERIFY_LEAF_SIGNATURE: the server's TLS certificate is not signed by an authority this machine trusts; pass the CA that signed it with --ca-file FILE or GANTRY_CA_FILE/,
    );
    const missing = await gantry([...list, '--ca-file', join(dir, 'nope.pem')]);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /--ca-file .*nope\.pem cannot be read: ENOENT/);
  });

  test('SIGHUP: an open connection goes on, new ones get the new certificate; a bad file then keeps it and logs why', async () => {
    const agent = new https.Agent({ ca: caPem, keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ status: number; socket: TLSSocket; fingerprint: string }>((resolve, reject) => {
        https
          .get(`${server.url}/healthz`, { agent }, (res) => {
            const socket = res.socket as TLSSocket;
            const fingerprint = socket.getPeerCertificate().fingerprint256;
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, socket, fingerprint }));
          })
          .once('error', reject);
      });
    const open = await get();
    assert.equal(open.fingerprint, fingerprintOf(first.certFile));
    const second = issueCertificate(ca, 'second', { dns: ['localhost'], ips: ['127.0.0.1'] });
    copyFileSync(second.certFile, served.certFile);
    copyFileSync(second.keyFile, served.keyFile);
    server.child.kill('SIGHUP');
    await eventually('the reload logged', async () => server.output().includes('reloaded the TLS certificates'));
    assert.equal(await peerFingerprint(server.url), fingerprintOf(second.certFile));
    const across = await get();
    assert.equal(across.status, 200);
    assert.equal(across.socket, open.socket, 'the connection opened before the reload carried a request after it');
    agent.destroy();

    writeFileSync(served.keyFile, 'truncated');
    server.child.kill('SIGHUP');
    await eventually('the failed reload logged', async () =>
      server.output().includes('the TLS certificates were not reloaded, the previous ones are still served'),
    );
    assert.match(server.output(), /holds no \(unencrypted\) PEM private key/);
    assert.equal(server.child.exitCode, null, 'the server runs on');
    assert.equal(await peerFingerprint(server.url), fingerprintOf(second.certFile));
    copyFileSync(second.keyFile, served.keyFile);
  });
});

describe('gantry agent joining over HTTPS', { skip: engine ? false : noEngine() }, () => {
  const hostsList = (): Array<{ name: string; state: string }> =>
    JSON.parse(runGantry(['hosts', 'list', '--json', '--data-dir', dataDir, '--config', configPath]).stdout || '[]');

  async function startAgent(name: string, extra: string[], env: Record<string, string> = {}): Promise<SpawnedAgent> {
    const token = runGantry(['hosts', 'token', 'create', '--data-dir', dataDir]).stdout.trim();
    assert.match(token, /^gjt_/);
    const namespace = uniqueNamespace();
    namespaces.push(namespace);
    const ports = await freePortRange(10);
    const agent = spawnAgent(
      [
        '--server',
        server.url,
        '--token',
        token,
        '--data-dir',
        join(dir, name),
        '--name',
        name,
        '--namespace',
        namespace,
        '--public-ip',
        '127.0.0.1',
        '--port-range',
        `${ports[0]}-${ports[1]}`,
        '--docker-host',
        engine!.dockerHost,
        '--nvidia-smi',
        join(dir, 'no-nvidia-smi'),
        ...extra,
      ],
      { NODE_EXTRA_CA_CERTS: '', ...env },
    );
    agents.push(agent);
    return agent;
  }

  test('without the CA the agent does not join, and says the certificate is not trusted and what to pass', async () => {
    const agent = await startAgent('untrusting', []);
    await eventually(
      () => `the refusal in the agent's output:\n${agent.output()}`,
      async () =>
        /not signed by an authority this machine trusts; pass the CA that signed it with --ca-file/.test(
          agent.output(),
        ),
    );
    assert.ok(!hostsList().some((h) => h.name === 'untrusting'));
    await agent.stop();
  });

  test('with --ca-file the agent joins over https and its host is listed available', async () => {
    await startAgent('trusting', ['--ca-file', ca.certFile]);
    await eventually(
      () => `the host available: ${JSON.stringify(hostsList())}`,
      async () => hostsList().some((h) => h.name === 'trusting' && h.state === 'available'),
    );
  });
});
