/**
 * Gantry's container image (the Dockerfile at the root; docs/deploy.md "Container image"), run on
 * the test engine as an operator runs it. CI builds it first (.ci/build-image.sh: bases made of
 * Debian packages and this machine's Node.js stand in for the official `node` image no registry
 * here serves); elsewhere these tests skip unless GANTRY_TEST_IMAGE names a built image. Every
 * container runs on the host's network (`--network host`): the test engine has no NAT, and the
 * PostgreSQL the tests use listens on the host's loopback.
 *
 * - `serve` on SQLite: a non-root user, the API, the console and `/healthz` (the image's
 *   HEALTHCHECK turns healthy), the database in the data volume, a clean stop on SIGTERM.
 * - `serve` on PostgreSQL, its data kept across a new container.
 * - `agent` in a second container (the engine's socket mounted, non-root in the socket's group)
 *   joins the first and runs a pod, reached through the pod proxy.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { dockerEngine, noEngine, removeNamespace, uniqueNamespace } from './support/docker.js';
import { eventually, freePortRange } from './support/eventually.js';
import { BANNER_12_4, removeStandIns, standInNvidiaSmi } from './support/nvidia-smi.js';

const run = promisify(execFile);
const IMAGE = process.env.GANTRY_TEST_IMAGE ?? 'gantry-test/gantry:ci';
const KEY = 'image-test-admin-key-0123456789abcdef';
const DATABASE_URL = process.env.GANTRY_TEST_DATABASE_URL;

const engine = await dockerEngine();
const dockerHost = engine?.dockerHost ?? '';
const docker = async (...args: string[]): Promise<string> =>
  (await run('docker', ['--host', dockerHost, ...args], { maxBuffer: 16 * 1024 * 1024 })).stdout.trim();

let skip: string | false = engine ? false : noEngine();
if (engine && !(await docker('image', 'ls', '-q', IMAGE))) {
  skip = `the image ${IMAGE} is not built (.ci/build-image.sh builds it; GANTRY_TEST_IMAGE names another)`;
  // CI builds it before the tests (.ci/run): there a missing image is a failure, never a quiet skip.
  if (process.env.CI === 'true') throw new Error(`CI=true: ${skip}`);
}

const containers: string[] = [];
const volumes: string[] = [];
const namespace = uniqueNamespace();
after(async () => {
  if (!engine) return;
  for (const c of containers) await docker('rm', '-f', '-v', c).catch(() => '');
  for (const v of volumes) await docker('volume', 'rm', '-f', v).catch(() => '');
  await removeNamespace(engine.client, namespace);
  removeStandIns();
});

/** Starts the image with `args` on the host's network; answers the container's id. */
async function start(args: string[], command: string[] = []): Promise<string> {
  const id = await docker('run', '-d', '--network', 'host', '--health-interval', '1s', ...args, IMAGE, ...command);
  containers.push(id);
  return id;
}

/** The ports of one `serve`: API, pod proxy, SSH proxy. */
async function servePorts(): Promise<{ env: string[]; url: string; proxy: number }> {
  const [first] = await freePortRange(3);
  return {
    env: ['-e', `PORT=${first}`, '-e', `GANTRY_PROXY_PORT=${first + 1}`, '-e', `GANTRY_SSH_PORT=${first + 2}`],
    url: `http://127.0.0.1:${first}`,
    proxy: first + 1,
  };
}

const logsOf = async (id: string): Promise<string> => {
  const out = await run('docker', ['--host', dockerHost, 'logs', '--tail', '60', id]).catch(
    (e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
  );
  return `${out.stdout}${out.stderr}`.slice(-4000);
};

async function healthy(id: string): Promise<void> {
  await eventually(
    async () => `container ${id.slice(0, 12)} healthy: ${await logsOf(id)}`,
    async () => (await docker('inspect', '-f', '{{.State.Health.Status}}', id)) === 'healthy',
    60_000,
    200,
  );
}

const api = async <T>(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> => {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
};

describe("Gantry's container image", { skip }, () => {
  test('serve runs as a non-root user on SQLite in its data volume: the API, the console and a healthy HEALTHCHECK, and SIGTERM stops it cleanly', async () => {
    const volume = `gantry-image-test-${namespace}`;
    volumes.push(volume);
    const ports = await servePorts();
    const id = await start([...ports.env, '-e', `GANTRY_BOOTSTRAP_KEY=${KEY}`, '-v', `${volume}:/var/lib/gantry`]);
    await healthy(id);

    const pid = Number(await docker('inspect', '-f', '{{.State.Pid}}', id));
    const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    assert.equal(uid, '10001', 'PID 1 runs as the image user gantry (10001)');

    assert.equal((await fetch(`${ports.url}/healthz`)).status, 200);
    const console = await fetch(`${ports.url}/console/`);
    assert.equal(console.status, 200);
    assert.match(console.headers.get('content-type') ?? '', /text\/html/);
    assert.match(await console.text(), /<div id="root"|<script/);
    const key = await api<{ id: string }>(ports.url, 'POST', '/v2/account/api-keys', { name: 'from the image test' });
    assert.equal(key.status, 201, JSON.stringify(key.body));
    assert.equal((await api<unknown[]>(ports.url, 'GET', '/v2/pods')).status, 200);
    assert.equal((await fetch(`${ports.url}/v2/pods`)).status, 401);

    const files = await docker('exec', id, 'ls', '/var/lib/gantry');
    assert.match(files, /\.db\b/, `the SQLite database is in the data volume: ${files}`);
    assert.match(await docker('exec', id, 'node', '/app/bin/gantry.js', '--version'), /^gantry \d+\.\d+\.\d+/);

    await docker('stop', '-t', '20', id);
    assert.equal(await docker('inspect', '-f', '{{.State.ExitCode}}', id), '0');
  });

  test('docs/deploy.md’s `docker run` and `docker exec` lines, run by a shell as written (host ports, names and image aside), serve with the key they generate', async () => {
    const doc = readFileSync(join(import.meta.dirname, '..', 'docs', 'deploy.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Container image'));
    const lines = /```sh\n([\s\S]*?)```/
      .exec(section)![1]!
      .replace(/\\\n\s*/g, '')
      .split('\n');
    const runLine = lines.find((l) => l.startsWith('docker run '));
    const execLine = lines.find((l) => l.startsWith('docker exec '));
    assert.ok(runLine && execLine, lines.join('\n'));
    const [port] = await freePortRange(3);
    const name = `gantry-doc-${namespace}`;
    const volume = `gantry-doc-data-${namespace}`;
    containers.push(name);
    volumes.push(volume);
    const asHere = (line: string): string =>
      line
        .replace('--name gantry ', `--name ${name} `)
        .replace('docker exec gantry ', `docker exec ${name} `)
        .replace('-p 8080:8080', `-p 127.0.0.1:${port}:8080`)
        .replace('-p 8081:8081', `-p 127.0.0.1:${port + 1}:8081`)
        .replace('-p 2222:2222', `-p 127.0.0.1:${port + 2}:2222`)
        .replace('-v gantry-data:', `-v ${volume}:`)
        .replace(/ gantry$/, ` ${IMAGE}`);
    const script = `set -e\n${asHere(runLine)}\n${asHere(execLine)}\n`;
    const { stdout } = await run('bash', ['-c', script], { env: { ...process.env, DOCKER_HOST: dockerHost } });
    assert.match(stdout, /^gantry \d+\.\d+\.\d+/m, stdout);
    await healthy(name);
    const env = await docker('inspect', '-f', '{{range .Config.Env}}{{println .}}{{end}}', name);
    const key = /^GANTRY_BOOTSTRAP_KEY=([0-9a-f]{48})$/m.exec(env)?.[1];
    assert.ok(key, 'the line generated a key of 48 hex digits');
    const url = `http://127.0.0.1:${port}`;
    const pods = await fetch(`${url}/v2/pods`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(pods.status, 200, await pods.text());
    assert.equal(
      (await fetch(`http://127.0.0.1:${port + 1}/`)).status,
      404,
      'the pod proxy answers on its published port',
    );
  });

  test(
    'serve runs against PostgreSQL, and a new container on the same database finds what the first stored',
    { skip: DATABASE_URL ? false : 'GANTRY_TEST_DATABASE_URL is not set' },
    async () => {
      const schema = `image_${namespace}`;
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      try {
        const env = ['-e', `GANTRY_DATABASE_URL=${DATABASE_URL}`, '-e', `GANTRY_DATABASE_SCHEMA=${schema}`];
        env.push('-e', `GANTRY_SECRET_KEY=${'ab'.repeat(32)}`, '-e', `GANTRY_BOOTSTRAP_KEY=${KEY}`);
        const first = await servePorts();
        const a = await start([...first.env, ...env]);
        await healthy(a);
        const created = await api<{ id: string }>(first.url, 'POST', '/v2/templates', {
          name: 'kept-in-postgres',
          imageName: 'busybox:latest',
          isServerless: true,
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        const tables = await client.query<{ n: string }>(
          'SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = $1',
          [schema],
        );
        assert.ok(Number(tables.rows[0]!.n) > 10, 'the store is in the named PostgreSQL schema');
        await docker('rm', '-f', a);

        const second = await servePorts();
        const b = await start([...second.env, ...env]);
        await healthy(b);
        const found = await api<{ name: string }>(second.url, 'GET', `/v2/templates/${created.body.id}`);
        assert.equal(found.status, 200);
        assert.equal(found.body.name, 'kept-in-postgres');
      } finally {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
        await client.end();
      }
    },
  );

  test('agent mode in a second container, non-root in the engine socket’s group, joins the first and runs a pod reached through the proxy', async () => {
    const ports = await servePorts();
    const server = await start([...ports.env, '-e', 'GANTRY_RUNTIME=fleet', '-e', `GANTRY_BOOTSTRAP_KEY=${KEY}`]);
    await healthy(server);
    const token = await docker('exec', server, 'node', '/app/bin/gantry.js', 'hosts', 'token', 'create');
    assert.match(token, /^gjt_/);

    const smi = standInNvidiaSmi({
      csv: '0, GPU-f1ee7000-0000-4000-8000-000000000000, NVIDIA GeForce RTX 4090, 24564',
      banner: BANNER_12_4,
    });
    chmodSync(smi.dir, 0o755);
    writeFileSync(join(smi.dir, 'calls.log'), '', { mode: 0o666 });
    chmodSync(join(smi.dir, 'calls.log'), 0o666);
    const socket = dockerHost.replace(/^unix:\/\//, '');
    const [low, high] = await freePortRange(10);
    const agent = await start(
      [
        '-v',
        `${socket}:/var/run/docker.sock`,
        '--group-add',
        String(statSync(socket).gid),
        '-v',
        `${smi.dir}:${smi.dir}:ro`,
      ],
      [
        'agent',
        '--server',
        ports.url,
        '--token',
        token,
        '--name',
        'image-host',
        '--namespace',
        namespace,
        '--public-ip',
        '127.0.0.1',
        '--port-range',
        `${low}-${high}`,
        '--docker-host',
        'unix:///var/run/docker.sock',
        '--nvidia-smi',
        smi.path,
        '--gpu-mode',
        'env-only',
        // the engine's data root is not in the agent's container: the disk it offers is said
        '--disk-gb',
        '50',
        '--firewall',
        'off',
      ],
    );
    let refused = '';
    const diagnostics = async () =>
      `last answer ${refused}\nserver:\n${await logsOf(server)}\nagent:\n${await logsOf(agent)}`;
    const pod = await eventually(
      async () => `a pod placed on the agent's host: ${await diagnostics()}`,
      async () => {
        const r = await api<{ id: string }>(ports.url, 'POST', '/v2/pods', {
          name: 'from-the-image-agent',
          image: engine!.images.http,
          gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
          ports: ['8000/http'],
          disk: 5,
        });
        refused = JSON.stringify(r.body);
        return r.status === 201 ? r.body : null;
      },
      60_000,
      500,
    );
    const running = await eventually(
      async () => `pod ${pod.id} RUNNING: ${await diagnostics()}`,
      async () => {
        const r = await api<{ status: string; httpProxy?: Array<{ url: string }> }>(
          ports.url,
          'GET',
          `/v2/pods/${pod.id}`,
        );
        return r.body.status === 'RUNNING' && r.body.httpProxy?.length ? r.body : null;
      },
      90_000,
      500,
    );
    const answer = await eventually(
      async () => `the pod's server through the proxy: ${await diagnostics()}`,
      async () => {
        const res = await fetch(`${running.httpProxy![0]!.url}health`).catch(() => null);
        return res?.ok ? res : null;
      },
      60_000,
      500,
    );
    assert.equal(answer.status, 200);
    const hosts = await docker('exec', server, 'node', '/app/bin/gantry.js', 'hosts', 'list');
    assert.match(hosts, /image-host/);
  });
});
